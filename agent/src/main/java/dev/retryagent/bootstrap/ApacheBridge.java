package dev.retryagent.bootstrap;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The static entry points called by the code injected into Apache HttpClient (any copy, any class
 * loader): the end of every constructor of 5.x's {@code HttpClientBuilder}, and the start of 4.5's
 * {@code doExecute(HttpHost, HttpRequest, HttpContext)} in {@code InternalHttpClient}, {@code
 * MinimalHttpClient} and {@code AbstractHttpClient}.
 *
 * <p>The injected code is, in Java terms:
 *
 * <pre>{@code
 * // HttpClientBuilder constructors (5.x), before each return:
 * ApacheBridge.builderCreated(this);
 *
 * // doExecute(HttpHost target, HttpRequest request, HttpContext context) (4.5):
 * Object outcome;
 * try {
 *   outcome = ApacheBridge.execute(this, target, request, context);
 * } catch (Throwable bug) {
 *   outcome = null;
 * }
 * if (outcome != null) return (CloseableHttpResponse) ApacheBridge.deliver(outcome);  // may throw
 * ...original body...
 * }</pre>
 *
 * {@link #builderCreated} never throws. Thread safety: the handler is published through a volatile
 * field; the pass-through token is per thread.
 */
public final class ApacheBridge {
  /** Returned by a handler whose call came to a null response (delivered as null). */
  public static final Object NO_RESPONSE = new Object();

  private static volatile ApacheHandler handler;

  /**
   * Set by {@link #passThroughNextExecute()}, consumed by the next hooked execute on the thread.
   */
  private static final ThreadLocal<Boolean> PASS_THROUGH = new ThreadLocal<>();

  // AtomicInteger rather than AtomicBoolean: no VarHandle to link in HttpClient's call path
  private static final AtomicInteger BUG_REPORTED = new AtomicInteger();

  private ApacheBridge() {}

  /** Installs (or, with {@code null}, removes) the handler. */
  public static void setHandler(ApacheHandler h) {
    handler = h;
  }

  /** The installed handler, or {@code null}. */
  public static ApacheHandler handler() {
    return handler;
  }

  /**
   * Lets the next hooked {@code doExecute} on this thread run the original method: the agent's own
   * attempts go through the same client without being taken over again. {@link #clearPassThrough()}
   * removes the token if that call never reached the hook.
   */
  public static void passThroughNextExecute() {
    PASS_THROUGH.set(Boolean.TRUE);
  }

  /** Removes a pass-through token that was not consumed. */
  public static void clearPassThrough() {
    PASS_THROUGH.remove();
  }

  /** Injected before each return of 5.x's builder constructors. Never throws. */
  public static void builderCreated(Object builder) {
    ApacheHandler h = handler;
    if (h == null || builder == null) {
      return;
    }
    try {
      h.builderCreated(builder);
    } catch (Throwable bug) {
      reportBug(bug);
    }
  }

  /** Injected at the start of 4.5's {@code doExecute}; {@code null}: run the original method. */
  public static Object execute(Object client, Object target, Object request, Object context) {
    if (PASS_THROUGH.get() != null) {
      PASS_THROUGH.remove();
      return null;
    }
    ApacheHandler h = handler;
    if (h == null || client == null) {
      return null;
    }
    try {
      return h.execute(client, target, request, context);
    } catch (Throwable bug) {
      reportBug(bug);
      return null;
    }
  }

  /** Returns the outcome's response, or throws its throwable exactly as it was thrown. */
  public static Object deliver(Object outcome) throws Throwable {
    if (outcome instanceof Throwable) {
      throw (Throwable) outcome;
    }
    return outcome == NO_RESPONSE ? null : outcome;
  }

  /** A handler failed: HttpClient runs unchanged where it happened; said once, not per call. */
  private static void reportBug(Throwable bug) {
    if (BUG_REPORTED.getAndSet(1) == 0) {
      System.err.println(
          "retry-agent: internal error, Apache HttpClient runs without retries where it happened: "
              + bug);
    }
  }
}
