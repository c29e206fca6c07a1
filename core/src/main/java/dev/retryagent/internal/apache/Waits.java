package dev.retryagent.internal.apache;

import dev.retryagent.engine.Sleeper;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** The wait between attempts of a request that the application can abort. */
public final class Waits {
  /** An abort is noticed within this much of a wait. */
  static final long CANCEL_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  private Waits() {}

  /**
   * Waits with {@code base} in slices, so that an abort of the request ({@code
   * HttpRequestBase.abort()} in 4.5, {@code HttpUriRequestBase.cancel()} in 5.x) ends the wait
   * within 50 ms; the next attempt then fails at once, as the client fails an aborted request,
   * without a request on the wire.
   */
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
