package dev.retryagent.bootstrap;

/**
 * The static entry points called by the code injected at the start of {@code
 * jdk.internal.net.http.HttpClientImpl.send} and {@code sendAsync}.
 *
 * <p>The injected prologue is, in Java terms:
 *
 * <pre>{@code
 * Object outcome;
 * try {
 *   outcome = JdkHttpBridge.send(this, request, handler);   // decide, and run the call if handled
 * } catch (Throwable bug) {
 *   outcome = null;                                          // a failure to decide never breaks the call
 * }
 * if (outcome != null) return (HttpResponse) JdkHttpBridge.deliver(outcome);   // may throw
 * ...original body...
 * }</pre>
 *
 * So an exception from the retry engine reaches the caller unchanged (it is thrown by {@link
 * #deliver}, outside the protected region), while a bug in the decision falls back to the original
 * method.
 *
 * <p>Thread safety: the handler is published through a volatile field; the pass-through token is
 * per thread.
 */
public final class JdkHttpBridge {
  private static volatile JdkHttpHandler handler;

  /** Set by {@link #passThroughNextCall()}, consumed by the next intercepted call on the thread. */
  private static final ThreadLocal<Boolean> PASS_THROUGH = new ThreadLocal<>();

  private JdkHttpBridge() {}

  /** Installs (or, with {@code null}, removes) the handler of intercepted calls. */
  public static void setHandler(JdkHttpHandler h) {
    handler = h;
  }

  /** The installed handler, or {@code null}. */
  public static JdkHttpHandler handler() {
    return handler;
  }

  /**
   * Lets the next intercepted call on this thread run the original JDK method: the agent's own
   * attempts go through the same client without being intercepted again. The token is consumed by
   * that call; {@link #clearPassThrough()} removes it if the call never reached the hook.
   */
  public static void passThroughNextCall() {
    PASS_THROUGH.set(Boolean.TRUE);
  }

  /** Removes a pass-through token that was not consumed. */
  public static void clearPassThrough() {
    PASS_THROUGH.remove();
  }

  private static boolean consumePassThrough() {
    if (PASS_THROUGH.get() == null) {
      return false;
    }
    PASS_THROUGH.remove();
    return true;
  }

  /**
   * How many application calls reached a handler since start-up (attempts made by the agent itself
   * are not counted): a self-test for the hook, read by the integration tests.
   */
  public static long interceptedCalls() {
    return INTERCEPTED.get();
  }

  private static final java.util.concurrent.atomic.AtomicLong INTERCEPTED =
      new java.util.concurrent.atomic.AtomicLong();

  /** Injected at the start of {@code send}; {@code null} means "run the original method". */
  public static Object send(Object client, Object request, Object bodyHandler) {
    if (consumePassThrough() || client == null) {
      return null;
    }
    JdkHttpHandler h = handler;
    if (h == null) {
      return null;
    }
    INTERCEPTED.incrementAndGet();
    try {
      return h.send(client, request, bodyHandler);
    } catch (Throwable bug) {
      reportBug(bug);
      return null;
    }
  }

  /** Injected at the start of {@code sendAsync}; {@code null} means "run the original method". */
  public static Object sendAsync(
      Object client, Object request, Object bodyHandler, Object pushPromiseHandler) {
    if (consumePassThrough() || client == null) {
      return null;
    }
    JdkHttpHandler h = handler;
    if (h == null) {
      return null;
    }
    INTERCEPTED.incrementAndGet();
    try {
      return h.sendAsync(client, request, bodyHandler, pushPromiseHandler);
    } catch (Throwable bug) {
      reportBug(bug);
      return null;
    }
  }

  /**
   * A handler failed before making an attempt: the call runs unchanged; said once, not per call.
   */
  private static void reportBug(Throwable bug) {
    if (BUG_REPORTED.getAndSet(1) == 0) {
      System.err.println(
          "retry-agent: internal error, java.net.http call passed through without retries: " + bug);
    }
  }

  // AtomicInteger rather than AtomicBoolean: no VarHandle to link in the JDK's own call path
  private static final java.util.concurrent.atomic.AtomicInteger BUG_REPORTED =
      new java.util.concurrent.atomic.AtomicInteger();

  /** Returns the outcome's value, or throws its throwable exactly as it was thrown. */
  public static Object deliver(Object outcome) throws Throwable {
    Outcome o = (Outcome) outcome;
    if (o.thrown != null) {
      throw o.thrown;
    }
    return o.value;
  }

  /** The result of a handled call: a value, or a throwable for the caller. */
  public static final class Outcome {
    final Object value;
    final Throwable thrown;

    private Outcome(Object value, Throwable thrown) {
      this.value = value;
      this.thrown = thrown;
    }

    /** The call returns {@code value}. */
    public static Outcome returned(Object value) {
      return new Outcome(value, null);
    }

    /** The call throws {@code thrown} (not null), unchanged. */
    public static Outcome thrown(Throwable thrown) {
      if (thrown == null) {
        throw new NullPointerException("thrown");
      }
      return new Outcome(null, thrown);
    }
  }
}
