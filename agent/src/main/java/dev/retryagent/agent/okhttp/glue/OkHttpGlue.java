package dev.retryagent.agent.okhttp.glue;

import dev.retryagent.agent.okhttp.OkHttpSupport;
import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.okhttp.AsyncRetrier;
import java.util.List;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Interceptor;
import okhttp3.OkHttpClient;

/**
 * The agent's OkHttp side for one copy of OkHttp; defined next to it by {@code
 * dev.retryagent.agent.okhttp.OkHttpClassLoader} and compiled against the oldest OkHttp API
 * supported (3.14), which 4.x and 5.x keep binary-compatible for everything used here.
 *
 * <ul>
 *   <li>One {@link AgentInterceptor} per OkHttp copy, put first among every builder's application
 *       interceptors, exactly once.
 *   <li>One {@link AsyncRetrier} (made on the first call) runs the retries of {@code enqueue}d
 *       calls by re-enqueueing, so no dispatcher thread or per-host slot is held while a retry
 *       waits; the interceptor hands it the attempts it manages.
 * </ul>
 */
public final class OkHttpGlue implements OkHttpSupport {
  static {
    OkHttpSupport.Handoff.register(new OkHttpGlue(OkHttpSupport.Handoff.agent()));
  }

  private final OkHttpSupport.Agent agent;
  private final AgentInterceptor interceptor = new AgentInterceptor(this);
  private volatile AsyncRetrier retrier;

  private OkHttpGlue(OkHttpSupport.Agent agent) {
    this.agent = agent;
  }

  boolean enabled() {
    return agent.enabled();
  }

  /** The retrier, and with it the engine, made on first use (not at the first builder). */
  AsyncRetrier retrier() {
    AsyncRetrier r = retrier;
    if (r == null) {
      synchronized (this) {
        r = retrier;
        if (r == null) {
          r = new AsyncRetrier(agent.engine(), PassThroughEnqueuer.INSTANCE);
          retrier = r;
        }
      }
    }
    return r;
  }

  /**
   * Leaves the agent's interceptor in the builder's list exactly once, at index 0. Idempotent, so
   * nested constructors ({@code Builder(OkHttpClient)} calls {@code this()} in 4.x and 5.x, then
   * copies the client's interceptors, ours included) and reused builders need no other guard.
   */
  @Override
  public void builderCreated(Object builder) {
    List<Interceptor> list = ((OkHttpClient.Builder) builder).interceptors();
    if (list.indexOf(interceptor) == 0 && list.lastIndexOf(interceptor) == 0) {
      return;
    }
    while (list.remove(interceptor)) {
      // drop every copy, then put one back first
    }
    list.add(0, interceptor);
  }

  @Override
  public Object enqueue(Object call, Object client, Object callback) {
    if (callback == null || AsyncRetrier.isAttemptCallback(callback) || !agent.enabled()) {
      return null;
    }
    Call c = (Call) call;
    // A client built before the hook (late attach) or whose interceptors were replaced is not
    // ours to retry: its attempts would bypass the interceptor (and its one-shot body checks).
    if (c.isExecuted() || !((OkHttpClient) client).interceptors().contains(interceptor)) {
      return null;
    }
    AsyncRetrier r = retrier();
    try {
      r.enqueue(c, (Callback) callback);
      return Bridge.TAKEN;
    } catch (Throwable t) {
      // After this point the call may have started: never run the original enqueue as well.
      return t;
    }
  }

  @Override
  public void cancel(Object call) {
    AsyncRetrier r = retrier;
    if (r != null) {
      r.cancel((Call) call);
    }
  }
}
