package dev.retryagent.agent.apache.glue;

import dev.retryagent.agent.apache.ApacheSupport;
import dev.retryagent.apache5.AsyncRetryExecHandler;
import dev.retryagent.apache5.RetryExecHandler;
import java.io.IOException;
import org.apache.hc.client5.http.async.AsyncExecCallback;
import org.apache.hc.client5.http.async.AsyncExecChain;
import org.apache.hc.client5.http.async.AsyncExecChainHandler;
import org.apache.hc.client5.http.classic.ExecChain;
import org.apache.hc.client5.http.classic.ExecChainHandler;
import org.apache.hc.client5.http.impl.async.H2AsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClientBuilder;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.HttpRequest;
import org.apache.hc.core5.http.nio.AsyncEntityProducer;

/**
 * The agent's side of one copy of HttpClient 5.x: every {@code HttpClientBuilder} gets, when it is
 * made, the library's handlers ({@link RetryExecHandler#install}): ours first in the execution
 * chain, through which every {@code execute} overload of every client it builds goes, the resend
 * counter after HttpClient's own retry, and HttpClient's default retry strategy, governed by the
 * call in progress; every {@code HttpAsyncClientBuilder} and {@code H2AsyncClientBuilder} the same
 * for its async chain ({@link AsyncRetryExecHandler#install}). One handler instance per copy; it
 * makes the library's handlers, and with them the engine, on the first call.
 */
public final class Apache5Glue implements ApacheSupport, ExecChainHandler, AsyncExecChainHandler {
  static {
    ApacheSupport.Handoff.register(new Apache5Glue(ApacheSupport.Handoff.agent()));
  }

  private final ApacheSupport.Agent agent;
  private volatile RetryExecHandler retries;
  private volatile AsyncRetryExecHandler asyncRetries;

  private Apache5Glue(ApacheSupport.Agent agent) {
    this.agent = agent;
  }

  @Override
  public void builderCreated(Object builder) {
    if (builder instanceof HttpAsyncClientBuilder) {
      AsyncRetryExecHandler.install((HttpAsyncClientBuilder) builder, this);
    } else if (builder instanceof H2AsyncClientBuilder) {
      AsyncRetryExecHandler.install((H2AsyncClientBuilder) builder, this);
    } else {
      RetryExecHandler.install((HttpClientBuilder) builder, this);
    }
  }

  @Override
  public Object execute(Object client, Object target, Object request, Object context) {
    return null; // 5.x is hooked at its builders, not at doExecute
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

  @Override
  public void execute(
      HttpRequest request,
      AsyncEntityProducer producer,
      AsyncExecChain.Scope scope,
      AsyncExecChain chain,
      AsyncExecCallback callback)
      throws HttpException, IOException {
    if (!agent.enabled()) {
      // Switched off (a reload): as if no handler were there. A call that began before goes on
      // with its retries, which its handler knows from the chain's head.
      chain.proceed(request, producer, scope, callback);
      return;
    }
    asyncRetries().execute(request, producer, scope, chain, callback);
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

  private AsyncRetryExecHandler asyncRetries() {
    AsyncRetryExecHandler r = asyncRetries;
    if (r == null) {
      synchronized (this) {
        r = asyncRetries;
        if (r == null) {
          r = new AsyncRetryExecHandler(agent.engine());
          asyncRetries = r;
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
