package dev.retryagent.agent.apache.glue;

import dev.retryagent.agent.apache.ApacheSupport;
import dev.retryagent.apache5.RetryExecHandler;
import java.io.IOException;
import org.apache.hc.client5.http.classic.ExecChain;
import org.apache.hc.client5.http.classic.ExecChainHandler;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.HttpException;

/**
 * The agent's side of one copy of HttpClient 5.x: every {@code HttpClientBuilder} gets, when it is
 * made, the library's handlers ({@link RetryExecHandler#install}): ours first in the execution
 * chain, through which every {@code execute} overload of every client it builds goes, the resend
 * counter after HttpClient's own retry, and HttpClient's default retry strategy, governed by the
 * call in progress. One handler instance per copy; it makes the library's {@link RetryExecHandler},
 * and with it the engine, on the first call.
 */
public final class Apache5Glue implements ApacheSupport, ExecChainHandler {
  static {
    ApacheSupport.Handoff.register(new Apache5Glue(ApacheSupport.Handoff.agent()));
  }

  private final ApacheSupport.Agent agent;
  private volatile RetryExecHandler retries;

  private Apache5Glue(ApacheSupport.Agent agent) {
    this.agent = agent;
  }

  @Override
  public void builderCreated(Object builder) {
    RetryExecHandler.install((HttpClientBuilder) builder, this);
  }

  @Override
  public Object execute(Object client, Object target, Object request, Object context) {
    return null; // 5.x is hooked at its builder, not at doExecute
  }

  @Override
  public ClassicHttpResponse execute(
      ClassicHttpRequest request, ExecChain.Scope scope, ExecChain chain)
      throws IOException, HttpException {
    if (!agent.enabled()) {
      return RetryExecHandler.passThrough(request, scope, chain);
    }
    return retries().execute(request, scope, chain);
  }

  private RetryExecHandler retries() {
    RetryExecHandler r = retries;
    if (r == null) {
      synchronized (this) {
        r = retries;
        if (r == null) {
          r = new RetryExecHandler(agent.engine());
          retries = r;
        }
      }
    }
    return r;
  }

  @Override
  public String toString() {
    return "retry-agent";
  }
}
