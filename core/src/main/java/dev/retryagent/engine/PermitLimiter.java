package dev.retryagent.engine;

/**
 * A rate limit a call takes a permit from before each attempt: the per-host rate limiter ({@code
 * RateLimiter}) of this JVM, or a limit shared by a fleet of JVMs ({@link FleetLimits}).
 * Implementations are thread-safe and never throw for a reason of their own (a fleet limit that
 * cannot reach its store decides locally).
 */
public interface PermitLimiter {
  /** Returned by {@link #reserve} when the caller must not wait that long. */
  long REJECTED = -1;

  /**
   * Reserves one permit.
   *
   * @param nowNanos {@link Clock#nanoTime()}
   * @param maxPermitWaitNanos the longest wait for a permit the caller accepts ({@code maxWait}),
   *     counted from the end of a pause
   * @param maxTotalWaitNanos the longest wait in all the caller accepts (its deadline)
   * @return nanoseconds to wait before the attempt (0 = go now), or {@link #REJECTED}
   */
  long reserve(long nowNanos, long maxPermitWaitNanos, long maxTotalWaitNanos);

  /**
   * {@link #reserve(long, long, long)}; {@code mayBlock} false when the caller runs on a thread of
   * many calls' work ({@link SharedThreads}): a limit shared with other JVMs must then not wait on
   * its store beyond a round trip on a connection it has at hand (no connect, no wait for a
   * connection another call holds); without one it decides locally. By default the same as {@link
   * #reserve(long, long, long)}.
   */
  default long reserve(
      long nowNanos, long maxPermitWaitNanos, long maxTotalWaitNanos, boolean mayBlock) {
    return reserve(nowNanos, maxPermitWaitNanos, maxTotalWaitNanos);
  }

  /**
   * Pauses every caller for {@code pauseNanos} from {@code nowNanos} (a 429's {@code Retry-After},
   * already bounded by {@code retryAfter.max}); a later pause wins, an earlier one never shortens
   * it.
   */
  void pause(long nowNanos, long pauseNanos);

  /** Nanoseconds left of the current pause, or 0. */
  long pauseRemainingNanos(long nowNanos);

  /**
   * Nanoseconds left of the current pause, or 0, asked when a caller's wait for the permit {@link
   * #reserve} gave it is over, before its attempt: a pause that began during the wait holds the
   * attempt too. A limit shared with other JVMs may ask its store for a pause it has not heard of
   * (a caller that waited pays that look, never one given its permit at once). By default {@link
   * #pauseRemainingNanos}.
   *
   * @param maxLookNanos the time the caller has left (its deadline): a look takes no longer
   */
  default long pauseAfterWaitNanos(long nowNanos, long maxLookNanos) {
    return pauseRemainingNanos(nowNanos);
  }

  /**
   * {@link #pauseAfterWaitNanos(long, long)}; {@code mayBlock} as {@link #reserve(long, long, long,
   * boolean)}'s. By default the same as {@link #pauseAfterWaitNanos(long, long)}.
   */
  default long pauseAfterWaitNanos(long nowNanos, long maxLookNanos, boolean mayBlock) {
    return pauseAfterWaitNanos(nowNanos, maxLookNanos);
  }
}
