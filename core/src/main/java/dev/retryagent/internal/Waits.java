package dev.retryagent.internal;

import dev.retryagent.engine.Clock;
import dev.retryagent.engine.Sleeper;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The wait between attempts of a call that the application can cancel on another thread: OkHttp's
 * {@code Call.cancel()}, HttpClient's {@code abort()} (4.5) or {@code cancel()} (5.x).
 */
public final class Waits {
  /** A cancel is noticed within this much of a wait. */
  static final long CANCEL_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  private Waits() {}

  /** {@link Sleeper#SYSTEM}. */
  public static Sleeper systemSleeper() {
    return new SystemSleeper();
  }

  /** Sleeps for real; a wait that may end early is looked at in slices. */
  private static final class SystemSleeper implements Sleeper {
    @Override
    public void sleep(long nanos) throws InterruptedException {
      TimeUnit.NANOSECONDS.sleep(nanos);
    }

    @Override
    public void sleep(long nanos, BooleanSupplier endsEarly) throws InterruptedException {
      untilCancelled(this, Clock.SYSTEM, endsEarly).sleep(nanos);
    }
  }

  /**
   * Waits {@code nanos} for an adapter's call: with {@code base} as it is when nothing can cancel
   * the call ({@code cancelled} null), otherwise {@link #untilCancelled}, whose sleeper is then
   * made for this wait only (nothing per call for a call that never waits: issue 13).
   */
  public static void sleep(Sleeper base, Clock clock, BooleanSupplier cancelled, long nanos)
      throws InterruptedException {
    if (cancelled == null) {
      base.sleep(nanos);
    } else {
      untilCancelled(base, clock, cancelled).sleep(nanos);
    }
  }

  /**
   * Waits with {@code base} in slices, so that a cancel ({@code cancelled} turns true) ends the
   * wait within 50 ms; the next attempt then fails at once, as the client fails a cancelled call,
   * without a request on the wire.
   *
   * @param clock the time {@code base} sleeps in (the engine's): what is left is measured on it, so
   *     the wait ends {@code nanos} after it began, however late each slice ended
   */
  public static Sleeper untilCancelled(Sleeper base, Clock clock, BooleanSupplier cancelled) {
    return nanos -> {
      long end = clock.nanoTime() + nanos;
      long left = nanos;
      while (left > 0 && !cancelled.getAsBoolean()) {
        long slice = Math.min(left, CANCEL_POLL_NANOS);
        base.sleep(slice);
        // A real sleep ends a little late (timer slack, a loaded machine, a Windows timer tick):
        // counting the slices asked for added that lateness once per 50 ms, so a 30 s wait ran
        // 600 of them long and a retry timed to start just before the deadline started after it
        // (with a 1 ms timeout, its request already on the wire). The clock says what is really
        // left; the slices still bound it, for a sleeper whose clock does not move (a test's).
        left = Math.min(left - slice, end - clock.nanoTime());
      }
    };
  }
}
