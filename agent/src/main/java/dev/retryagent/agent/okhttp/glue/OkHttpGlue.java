package dev.retryagent.agent.okhttp.glue;

import dev.retryagent.agent.okhttp.OkHttpSupport;
import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.okhttp.AsyncRetrier;
import dev.retryagent.okhttp.Resends;
import java.io.IOException;
import java.util.List;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;
import okhttp3.Interceptor;
import okhttp3.OkHttpClient;

/**
 * The agent's OkHttp side for one copy of OkHttp; defined next to it by {@code
 * dev.retryagent.agent.tooling.GlueClassLoader} and compiled against the oldest OkHttp API
 * supported (3.14), which 4.x and 5.x keep binary-compatible for everything used here.
 *
 * <ul>
 *   <li>One {@link AgentInterceptor} per OkHttp copy, put last among every builder's application
 *       interceptors, exactly once, when the builder is made and again when it builds: so the
 *       application's interceptors run once per {@code execute()}, as for OkHttp's own retries, and
 *       the policy sees the request as they leave it (an {@code Idempotency-Key} one of them adds).
 *       Not on a client the application gave its own copy of the library's {@code
 *       RetryInterceptor}: the library retries that client's calls, once.
 *   <li>OkHttp's own resends inside an attempt are counted, and kept from sending again what the
 *       engine would not, by the hook in OkHttp's {@code CallServerInterceptor} ({@link #sending},
 *       {@link #sendFailed}); only where that class could not be rewritten, by a network
 *       interceptor of the agent's, last, as before (it costs OkHttp a chain copy per call).
 *   <li>One {@link AsyncRetrier} (made on the first call) runs the retries of {@code enqueue}d
 *       calls by re-enqueueing, so no dispatcher thread or per-host slot is held while a retry
 *       waits; the interceptor hands it the attempts it manages. {@code Call.cancel()} and {@code
 *       Dispatcher.cancelAll()} reach it through {@link #cancel}.
 * </ul>
 */
public final class OkHttpGlue implements OkHttpSupport {
  static {
    OkHttpSupport.Handoff.register(new OkHttpGlue(OkHttpSupport.Handoff.agent()));
  }

  private final OkHttpSupport.Agent agent;
  private final AgentInterceptor interceptor = new AgentInterceptor(this, false);
  private final AgentInterceptor networkInterceptor = new AgentInterceptor(this, true);
  private final boolean sendsHooked;
  private volatile AsyncRetrier retrier;
  private volatile Resends resends;

  private OkHttpGlue(OkHttpSupport.Agent agent) {
    this.agent = agent;
    this.sendsHooked = sendsHooked(agent);
  }

  /**
   * Whether this copy's {@code CallServerInterceptor} tells the agent of each request. Loaded here,
   * at the first hook of the copy (a builder, as a rule), so that it is rewritten before the first
   * client is built rather than at the first call; not initialised.
   */
  private static boolean sendsHooked(OkHttpSupport.Agent agent) {
    try {
      return agent.sendsHooked(
          Class.forName(
              "okhttp3.internal.http.CallServerInterceptor",
              false,
              OkHttpClient.class.getClassLoader()));
    } catch (ClassNotFoundException | LinkageError e) {
      return false; // the network interceptor counts, as before
    }
  }

  boolean enabled() {
    return agent.enabled();
  }

  /** The retrier if a call made it already, or null. */
  AsyncRetrier existingRetrier() {
    return retrier;
  }

  /** The retrier, and with it the engine, made on first use (not at the first builder). */
  AsyncRetrier retrier() {
    AsyncRetrier r = retrier;
    if (r == null) {
      synchronized (this) {
        r = retrier;
        if (r == null) {
          r = new AsyncRetrier(agent.engine(), PassThroughEnqueuer.INSTANCE);
          // Told of requests from now on: the first call's resends count too.
          if (sendsHooked) {
            resends = r.interceptor().resendHook();
          } else {
            // Our network interceptor (AgentInterceptor, not the library's own object) is in every
            // builder that holds ours (builderCreated): told of every call, as by the hook.
            r.interceptor().resendHook();
          }
          retrier = r;
        }
      }
    }
    return r;
  }

  /**
   * Leaves the agent's interceptors in the builder's lists exactly once, last: called when a
   * builder is made (so a client built from it, or from a copy, holds them) and when it builds (so
   * they follow every interceptor the application added since). Idempotent, so nested constructors
   * ({@code Builder(OkHttpClient)} calls {@code this()} in 4.x and 5.x, then copies the client's
   * interceptors, ours included) and reused builders need no other guard.
   */
  @Override
  public void builderCreated(Object builder) {
    OkHttpClient.Builder b = (OkHttpClient.Builder) builder;
    if (retriedByTheLibrary(b.interceptors())) {
      // The application wired its own copy of the library on this client by hand: the library
      // retries its calls, and ours, after it, would retry each of its attempts again (3 attempts
      // becoming 9 requests). The client runs as without the agent.
      while (b.interceptors().remove(interceptor)) {
        // every copy
      }
      while (b.networkInterceptors().remove(networkInterceptor)) {
        // every copy
      }
      return;
    }
    last(b.interceptors(), interceptor);
    if (!sendsHooked) {
      last(b.networkInterceptors(), networkInterceptor);
    }
  }

  /**
   * The library's interceptor, by name: the application's own copy of retry-agent-core (possibly
   * relocated under a prefix by a shading build) is not this class's, and the agent never puts its
   * copy's interceptor into a list itself (only {@link AgentInterceptor}).
   */
  static final String LIBRARY_INTERCEPTOR = "dev.retryagent.okhttp.RetryInterceptor";

  /** True when {@code list} holds the library's interceptor (a builder's, once per builder). */
  static boolean retriedByTheLibrary(List<Interceptor> list) {
    for (int i = 0; i < list.size(); i++) {
      Interceptor x = list.get(i);
      if (x != null && x.getClass().getName().endsWith(LIBRARY_INTERCEPTOR)) {
        return true;
      }
    }
    return false;
  }

  private static void last(List<Interceptor> list, Interceptor mine) {
    int n = list.size();
    if (n > 0 && list.get(n - 1) == mine && list.indexOf(mine) == n - 1) {
      return;
    }
    while (list.remove(mine)) {
      // drop every copy, then put one back last
    }
    list.add(mine);
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
      r.enqueue(c, (Callback) callback, ((OkHttpClient) client).dispatcher());
      return Bridge.TAKEN;
    } catch (Throwable t) {
      // After this point the call may have started: never run the original enqueue as well.
      return t;
    }
  }

  @Override
  public void sending(Object chain) {
    Resends r = resends;
    if (r != null) {
      r.sending(((Interceptor.Chain) chain).call());
    }
  }

  @Override
  public void sendFailed(Object chain, Object failure) {
    Resends r = resends;
    if (r != null) {
      r.failed(((Interceptor.Chain) chain).call(), (IOException) failure);
    }
  }

  /** {@code Call.cancel()}, or {@code Dispatcher.cancelAll()}: either may concern a retry. */
  @Override
  public void cancel(Object target) {
    AsyncRetrier r = retrier;
    if (r == null) {
      return;
    }
    if (target instanceof Call) {
      r.cancel((Call) target);
    } else if (target instanceof Dispatcher) {
      r.cancelAll((Dispatcher) target);
    }
  }
}
