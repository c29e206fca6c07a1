package dev.retryagent.internal.engine;

import dev.retryagent.engine.PermitLimiter;
import dev.retryagent.policy.RateLimitPolicy;

/**
 * A per-host token bucket with reservations: a caller that finds the bucket empty reserves the next
 * token (the balance goes below zero) and learns how long to wait for it, so waiting callers are
 * served in order and never exceed the rate. A reservation longer than the caller may wait is
 * refused and costs nothing.
 *
 * <p>A host can also be paused (after a 429 with {@code Retry-After}): until then every caller
 * waits, whatever the tokens say. Thread-safe.
 */
public final class RateLimiter implements PermitLimiter {
  /** Returned by {@link #reserve} when the caller must not wait that long. */
  public static final long REJECTED = PermitLimiter.REJECTED;

  private final RateLimitPolicy policy;
  private final double nanosPerToken;
  private final long burst;
  // The bucket holds base tokens plus what accrued since anchorNanos, at most burst: base moves by
  // whole tokens only (a permit taken, given back), and the anchor only when the bucket is full.
  // A token falls due at the nanosecond dueNanos says, and is there at that nanosecond whoever
  // asked in between: the tokens summed in doubles at each look lost a little each time, and a
  // caller with maxWait 0 was refused at the nanosecond its token was due.
  private long base;
  private long anchorNanos;
  private long pausedUntilNanos;
  // Volatile so that a caller whose wait for a token just ended sees a 429 pause that began during
  // it without the lock (pauseRemainingNanos): written under the lock only.
  private volatile boolean paused;

  public RateLimiter(RateLimitPolicy policy, long nowNanos) {
    this.policy = policy;
    this.nanosPerToken = 1e9 / policy.perSecond();
    this.burst = policy.burst();
    this.base = burst;
    this.anchorNanos = nowNanos;
  }

  public RateLimitPolicy policy() {
    return policy;
  }

  /**
   * Reserves one permit.
   *
   * @param maxTokenWaitNanos the longest wait for a token the caller accepts ({@code maxWait}),
   *     counted from the end of a pause
   * @param maxPauseWaitNanos the longest wait in all the caller accepts (its deadline)
   * @return nanoseconds to wait before the attempt (0 = go now), or {@link #REJECTED}
   */
  @Override
  public synchronized long reserve(long nowNanos, long maxTokenWaitNanos, long maxPauseWaitNanos) {
    endPause(nowNanos);
    long pauseWait = paused ? Math.max(0, pausedUntilNanos - nowNanos) : 0;
    if (pauseWait > maxPauseWaitNanos) {
      return REJECTED;
    }
    // A caller that waits for the pause starts when it ends: its token is taken from the bucket as
    // it will be then, filled to burst at most, or every token that accrued during the pause would
    // let one more caller go at the instant it ends.
    long at = nowNanos + pauseWait;
    refill(at);
    long tokenWait = 0;
    if (base < 1) {
      tokenWait = dueNanos(1 - base) - elapsed(at);
      if (tokenWait < 0) {
        tokenWait = 0;
      } else if (tokenWait > maxTokenWaitNanos || pauseWait + tokenWait > maxPauseWaitNanos) {
        return REJECTED;
      }
    }
    base -= 1;
    return pauseWait + tokenWait;
  }

  /**
   * Gives back a permit {@link #reserve} granted for an attempt that was never made (the breaker
   * refused it, or the caller gave up while waiting): the bucket is as if it had not been asked, a
   * reservation still to come due included.
   */
  public synchronized void giveBack(long nowNanos) {
    endPause(nowNanos);
    base += 1;
    refill(nowNanos);
  }

  /** Pauses every caller of this host until {@code untilNanos} (a later pause wins). */
  public synchronized void pauseUntil(long untilNanos) {
    if (!paused || untilNanos - pausedUntilNanos > 0) {
      pausedUntilNanos = untilNanos;
      paused = true;
    }
  }

  @Override
  public void pause(long nowNanos, long pauseNanos) {
    pauseUntil(nowNanos + pauseNanos);
  }

  /** Nanoseconds left of the current pause, or 0. */
  @Override
  public long pauseRemainingNanos(long nowNanos) {
    if (!paused) {
      return 0; // one volatile read: the look after each wait for a token (RetryCall)
    }
    synchronized (this) {
      return paused ? Math.max(0, pausedUntilNanos - nowNanos) : 0;
    }
  }

  /** Tokens available now (negative while reservations are outstanding). */
  public synchronized double availableTokens(long nowNanos) {
    refill(nowNanos);
    return base >= burst ? burst : Math.min(burst, base + elapsed(nowNanos) / nanosPerToken);
  }

  /** True when no state would be lost by forgetting this limiter. */
  public synchronized boolean isIdle(long nowNanos) {
    endPause(nowNanos);
    refill(nowNanos);
    return base >= burst && pauseRemainingNanos(nowNanos) == 0;
  }

  /** Nanoseconds after the anchor at which the bucket holds {@code tokens} more than base. */
  private long dueNanos(long tokens) {
    double due = Math.ceil(tokens * nanosPerToken);
    return due >= 0x1p63 ? Long.MAX_VALUE : (long) due;
  }

  private long elapsed(long atNanos) {
    return Math.max(0, atNanos - anchorNanos);
  }

  /** A bucket full at {@code atNanos} holds burst from then on, its anchor there. */
  private void refill(long atNanos) {
    if (base >= burst || elapsed(atNanos) >= dueNanos(burst - base)) {
      base = burst;
      if (atNanos - anchorNanos > 0) {
        anchorNanos = atNanos;
      }
    }
  }

  private void endPause(long nowNanos) {
    if (paused && nowNanos - pausedUntilNanos >= 0) {
      paused = false;
    }
  }
}
