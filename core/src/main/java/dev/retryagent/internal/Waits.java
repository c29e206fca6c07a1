package dev.retryagent.internal;

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

  /**
   * Waits with {@code base} in slices, so that a cancel ({@code cancelled} turns true) ends the
   * wait within 50 ms; the next attempt then fails at once, as the client fails a cancelled call,
   * without a request on the wire.
   */
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
      untilCancelled(this, endsEarly).sleep(nanos);
    }
  }

  public static Sleeper untilCancelled(Sleeper base, BooleanSupplier cancelled) {
    return nanos -> {
      long left = nanos;
      while (left > 0 && !cancelled.getAsBoolean()) {
        long slice = Math.min(left, CANCEL_POLL_NANOS);
        base.sleep(slice);
        left -= slice;
      }
    };
  }
}
