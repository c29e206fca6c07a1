package dev.retryagent.engine;

import dev.retryagent.internal.engine.RateLimiter;

/**
 * What one call holds of its host's shared state: the breaker permit of the attempt in flight, a
 * retry taken from the budget and not made yet, and a rate-limit permit taken for an attempt not
 * started yet. Not thread-safe: {@link RetryCall} guards it.
 */
final class HostHold {
  private final CircuitBreaker breaker;
  private final RetryBudget budget;
  private final PermitLimiter limiter;
  private long permit = CircuitBreaker.REJECTED;
  private boolean retryPending;
  private long retryTakenNanos;
  private boolean ratePermitHeld;

  /** Any may be null: that guard is off for the call. */
  HostHold(CircuitBreaker breaker, RetryBudget budget, PermitLimiter limiter) {
    this.breaker = breaker;
    this.budget = budget;
    this.limiter = limiter;
  }

  CircuitBreaker breaker() {
    return breaker;
  }

  PermitLimiter limiter() {
    return limiter;
  }

  /** The call's first attempt starts: it counts as a call for the budget. */
  void callStarted(long nowNanos) {
    if (budget != null) {
      budget.recordCall(nowNanos);
    }
  }

  /** Asks the breaker for a permit for the next attempt; false when it is open. */
  boolean acquire(long nowNanos) {
    if (breaker == null) {
      return true;
    }
    permit = breaker.tryAcquire(nowNanos);
    return permit != CircuitBreaker.REJECTED;
  }

  /** The attempt's outcome, recorded once with its permit. */
  void record(boolean failure, long durationNanos, long nowNanos) {
    if (breaker != null && permit != CircuitBreaker.REJECTED) {
      breaker.onResult(permit, failure, durationNanos, nowNanos);
      permit = CircuitBreaker.REJECTED;
    }
  }

  /** Gives the attempt's permit back without an outcome (cancelled, abandoned). */
  void release() {
    if (breaker != null && permit != CircuitBreaker.REJECTED) {
      breaker.release(permit);
      permit = CircuitBreaker.REJECTED;
    }
  }

  /**
   * The client sent the attempt's request again on its own: a retry for the budget, and a failure
   * for the breaker when {@code failure}. The permit stays for the attempt's own outcome (a
   * transition this causes makes it stale, harmlessly).
   */
  void recordResend(boolean failure, long durationNanos, long nowNanos) {
    if (budget != null) {
      budget.recordRetry(nowNanos);
    }
    if (failure && breaker != null && permit != CircuitBreaker.REJECTED) {
      breaker.onResult(permit, true, durationNanos, nowNanos);
    }
  }

  /** Takes one retry from the budget; false when it is spent. */
  boolean takeRetry(long nowNanos) {
    return budget == null || budget.tryAcquireRetry(nowNanos);
  }

  /** A retry taken at {@code takenNanos} was decided: it is pending until its attempt starts. */
  void retryDecided(long takenNanos) {
    retryPending = true;
    retryTakenNanos = takenNanos;
  }

  /** The rate limiter granted a permit for the next attempt. */
  void permitTaken() {
    ratePermitHeld = true;
  }

  /** The next attempt starts: the pending retry, if any, and the rate-limit permit are used. */
  void attemptStarted() {
    retryPending = false;
    ratePermitHeld = false;
  }

  /**
   * The call ends: a retry decided and never made gives its budget back, and a rate-limit permit
   * taken for an attempt never made (the breaker refused it, the caller gave up) goes back to the
   * bucket; otherwise calls an open breaker refuses would empty it, be counted as rate-limited, and
   * hold back the host's first calls once it closes.
   */
  void callEnded(long nowNanos) {
    release();
    if (retryPending && budget != null) {
      budget.returnRetry(retryTakenNanos, nowNanos);
    }
    retryPending = false;
    // Only this JVM's limiter can take a permit back (PermitLimiter has no such operation): a
    // fleet's shared limit keeps it as used.
    if (ratePermitHeld && limiter instanceof RateLimiter) {
      ((RateLimiter) limiter).giveBack(nowNanos);
    }
    ratePermitHeld = false;
  }
}
