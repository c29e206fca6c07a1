package dev.retryagent.okhttp;

import dev.retryagent.engine.RetryCall;
import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import okhttp3.Call;
import okhttp3.Interceptor;
import okhttp3.Response;

/**
 * Counts the requests OkHttp sends again on its own inside one attempt after a failure: its {@code
 * RetryAndFollowUpInterceptor} resends a request whose connection failed after it was written (a
 * pooled connection the server had closed, say) on a new connection, and reports nothing of it. A
 * network interceptor sees every request that reaches a connection: one that follows a failed one
 * within the same attempt is such a resend. Connect failures are retried before any network
 * interceptor runs: those requests were never sent, and are not counted.
 *
 * <p>Only attempts the {@link RetryInterceptor} opened with {@link #begin} are counted; every other
 * request passes through after one map lookup. Thread-safe.
 */
final class Resends implements Interceptor {
  /** The network requests of one attempt. */
  static final class Trace {
    private boolean lastFailed;
    private int resends;

    synchronized void sending() {
      if (lastFailed) {
        resends++;
        lastFailed = false;
      }
    }

    synchronized void failed() {
      lastFailed = true;
    }

    synchronized int resends() {
      return resends;
    }
  }

  // Calls do not override equals: identity keys. An attempt's entry lives while it runs.
  private final ConcurrentHashMap<Call, Trace> traces = new ConcurrentHashMap<>();

  // Set once the interceptor is handed out to be installed: until then no request can reach it,
  // and an attempt has nothing to count (no trace, no map entry).
  private volatile boolean handedOut;

  /** The interceptor is handed out to be installed as a network interceptor. */
  Resends handOut() {
    handedOut = true;
    return this;
  }

  /**
   * An attempt of {@code call} starts: count its resends from now. Null while this interceptor was
   * never handed out.
   */
  Trace begin(Call call) {
    if (!handedOut) {
      return null;
    }
    Trace t = new Trace();
    traces.put(call, t);
    return t;
  }

  /**
   * The attempt is over: tells {@code retryCall} about each resend (an attempt of its own, for
   * {@code maxAttempts}, the budget and the breaker), before it decides.
   */
  void end(Call call, Trace trace, RetryCall retryCall) {
    if (trace == null) {
      return;
    }
    traces.remove(call, trace);
    for (int i = trace.resends(); i > 0; i--) {
      retryCall.clientResentAfterFailure(false); // OkHttp decides its resends alone
    }
  }

  @Override
  public Response intercept(Chain chain) throws IOException {
    Trace t = traces.isEmpty() ? null : traces.get(chain.call());
    if (t == null) {
      return chain.proceed(chain.request());
    }
    t.sending();
    try {
      return chain.proceed(chain.request());
    } catch (IOException e) {
      t.failed();
      ResendGuard.failed(chain.request()); // OkHttp asks the body next whether it may resend
      throw e;
    }
  }

  @Override
  public String toString() {
    return "retry-agent (resends)";
  }
}
