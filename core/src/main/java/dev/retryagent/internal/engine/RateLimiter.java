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
  private final double tokensPerNano;
  private double tokens;
  private long lastRefillNanos;
  private long pausedUntilNanos;
  private boolean paused;

  public RateLimiter(RateLimitPolicy policy, long nowNanos) {
    this.policy = policy;
    this.tokensPerNano = policy.perSecond() / 1e9;
    this.tokens = policy.burst();
    this.lastRefillNanos = nowNanos;
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
    refill(nowNanos);
    long pauseWait = paused ? Math.max(0, pausedUntilNanos - nowNanos) : 0;
    if (pauseWait > maxPauseWaitNanos) {
      return REJECTED;
    }
    if (pauseWait > 0 && pausedUntilNanos - lastRefillNanos > 0) {
      // A caller that waits for the pause starts when it ends: take its token from the bucket as
      // it will be then, filled to burst at most, or every token that accrued during the pause
      // would let one more caller go at the instant it ends.
      tokens =
          Math.min(policy.burst(), tokens + (pausedUntilNanos - lastRefillNanos) * tokensPerNano);
      lastRefillNanos = pausedUntilNanos;
    }
    long tokenWait = 0;
    if (tokens < 1) {
      tokenWait = (long) Math.ceil((1 - tokens) / tokensPerNano);
      if (tokenWait > maxTokenWaitNanos || pauseWait + tokenWait > maxPauseWaitNanos) {
        return REJECTED;
      }
    }
    tokens -= 1;
    return pauseWait + tokenWait;
  }

  /**
   * Gives back a permit {@link #reserve} granted for an attempt that was never made (the breaker
   * refused it, or the caller gave up while waiting): the bucket is as if it had not been asked, a
   * reservation still to come due included.
   */
  public synchronized void giveBack(long nowNanos) {
    refill(nowNanos);
    tokens = Math.min(policy.burst(), tokens + 1);
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
  public synchronized long pauseRemainingNanos(long nowNanos) {
    return paused ? Math.max(0, pausedUntilNanos - nowNanos) : 0;
  }

  /** Tokens available now (negative while reservations are outstanding). */
  public synchronized double availableTokens(long nowNanos) {
    refill(nowNanos);
    return tokens;
  }

  /** True when no state would be lost by forgetting this limiter. */
  public synchronized boolean isIdle(long nowNanos) {
    refill(nowNanos);
    return tokens >= policy.burst() && pauseRemainingNanos(nowNanos) == 0;
  }

  private void refill(long nowNanos) {
    long elapsed = nowNanos - lastRefillNanos;
    if (elapsed > 0) {
      tokens = Math.min(policy.burst(), tokens + elapsed * tokensPerNano);
      lastRefillNanos = nowNanos;
    }
    if (paused && nowNanos - pausedUntilNanos >= 0) {
      paused = false;
    }
  }
}
