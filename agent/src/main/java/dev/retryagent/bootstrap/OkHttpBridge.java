package dev.retryagent.bootstrap;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The static entry points called by the code injected into OkHttp (any version, any class loader):
 * the end of every {@code okhttp3.OkHttpClient$Builder} constructor and the start of its {@code
 * build()}, the start of the call class's {@code enqueue(Callback)} and {@code cancel()} ({@code
 * okhttp3.RealCall} in 3.x, {@code okhttp3.internal.connection.RealCall} in 4.x and 5.x), and the
 * start of {@code okhttp3.Dispatcher.cancelAll()}.
 *
 * <p>The injected code is, in Java terms:
 *
 * <pre>{@code
 * // Builder constructors, before each return; Builder.build(), first:
 * OkHttpBridge.builderCreated(this);
 *
 * // RealCall.enqueue(Callback callback):
 * Object outcome;
 * try {
 *   outcome = OkHttpBridge.enqueue(this, this.client, callback);
 * } catch (Throwable bug) {
 *   outcome = null;
 * }
 * if (outcome != null) { OkHttpBridge.deliver(outcome); return; }   // taken over (may throw)
 * ...original body...
 *
 * // RealCall.cancel(), Dispatcher.cancelAll():
 * OkHttpBridge.cancel(this);
 * ...original body...
 * }</pre>
 *
 * {@link #builderCreated} and {@link #cancel} never throw. Thread safety: the handler is published
 * through a volatile field; the pass-through token is per thread.
 */
public final class OkHttpBridge {
  /** Returned by a handler that took an {@code enqueue} over and has nothing to throw. */
  public static final Object TAKEN = new Object();

  private static volatile OkHttpHandler handler;

  /**
   * Set by {@link #passThroughNextEnqueue()}, consumed by the next hooked enqueue on the thread.
   */
  private static final ThreadLocal<Boolean> PASS_THROUGH = new ThreadLocal<>();

  private static final AtomicLong BUILDERS = new AtomicLong();
  private static final AtomicLong ENQUEUES = new AtomicLong();
  // AtomicInteger rather than AtomicBoolean: no VarHandle to link in OkHttp's call path
  private static final AtomicInteger BUG_REPORTED = new AtomicInteger();

  private OkHttpBridge() {}

  /** Installs (or, with {@code null}, removes) the handler. */
  public static void setHandler(OkHttpHandler h) {
    handler = h;
  }

  /** The installed handler, or {@code null}. */
  public static OkHttpHandler handler() {
    return handler;
  }

  /**
   * Lets the next hooked {@code enqueue} on this thread run the original OkHttp method: the agent's
   * own attempts are enqueued without being taken over again. {@link #clearPassThrough()} removes
   * the token if that enqueue never reached the hook.
   */
  public static void passThroughNextEnqueue() {
    PASS_THROUGH.set(Boolean.TRUE);
  }

  /** Removes a pass-through token that was not consumed. */
  public static void clearPassThrough() {
    PASS_THROUGH.remove();
  }

  /** Builder constructors that reached a handler since start-up (the tests read it). */
  public static long builders() {
    return BUILDERS.get();
  }

  /** Application {@code enqueue} calls that a handler took over since start-up. */
  public static long enqueuesTaken() {
    return ENQUEUES.get();
  }

  /** Injected before each return of the builder's constructors. Never throws. */
  public static void builderCreated(Object builder) {
    OkHttpHandler h = handler;
    if (h == null || builder == null) {
      return;
    }
    try {
      h.builderCreated(builder);
      BUILDERS.incrementAndGet();
    } catch (Throwable bug) {
      reportBug(bug);
    }
  }

  /** Injected at the start of {@code enqueue}; {@code null} means "run the original method". */
  public static Object enqueue(Object call, Object client, Object callback) {
    if (PASS_THROUGH.get() != null) {
      PASS_THROUGH.remove();
      return null;
    }
    OkHttpHandler h = handler;
    if (h == null || call == null) {
      return null;
    }
    Object outcome;
    try {
      outcome = h.enqueue(call, client, callback);
    } catch (Throwable bug) {
      reportBug(bug);
      return null;
    }
    if (outcome != null) {
      ENQUEUES.incrementAndGet();
    }
    return outcome;
  }

  /** Throws {@code outcome} if it is a throwable; otherwise returns (the call was taken over). */
  public static void deliver(Object outcome) throws Throwable {
    if (outcome instanceof Throwable) {
      throw (Throwable) outcome;
    }
  }

  /** Injected at the start of {@code cancel()} and {@code cancelAll()}. Never throws. */
  public static void cancel(Object call) {
    OkHttpHandler h = handler;
    if (h == null || call == null) {
      return;
    }
    try {
      h.cancel(call);
    } catch (Throwable bug) {
      reportBug(bug);
    }
  }

  /** A handler failed: the OkHttp method runs unchanged; said once, not per call. */
  private static void reportBug(Throwable bug) {
    if (BUG_REPORTED.getAndSet(1) == 0) {
      System.err.println(
          "retry-agent: internal error, OkHttp runs without retries where it happened: " + bug);
    }
  }
}
