package dev.retryagent.engine;

import dev.retryagent.internal.engine.RateLimiter;
import dev.retryagent.policy.Policy;

/**
 * What one call holds of its host's shared state ({@link HostState}), and when it started: the
 * breaker permit of the attempt in flight, whether a retry taken from the budget is not made yet,
 * whether a rate-limit permit was taken for an attempt not started yet (or for the attempt started
 * last, which may turn out never made). {@link RetryCall} extends it, so that a call is one object:
 * a call that succeeds at once allocates nothing else (issue 13). Not thread-safe: {@link
 * RetryCall} guards it.
 */
abstract class HostHold {
  /**
   * The target's breaker, budget and limiter (each may be null: that guard is off). Set once,
   * before the call is handed to an adapter's loop: by the constructor, or for a {@link
   * SelfViewCall} by {@link RetryEngine#begin}, which must read the call's own view first. Not
   * final for that reason; the call reaches other threads only through a hand-off that orders this
   * write before their reads (an executor, a future, a lock).
   */
  HostState state;

  // The call's first step (permit, attempt, a setting that needs its bounds), not its making.
  long startNanos;
  boolean started;

  private long permit = CircuitBreaker.REJECTED;

  // What the call holds of the budget and the rate limit, as the bits below: one byte, where two
  // booleans were, because a third would have made every call 8 B larger (issue 13).
  private byte holds;

  /** A retry taken from the budget is not made yet. */
  private static final byte RETRY_PENDING = 1;

  /** A rate-limit permit was taken for an attempt not started yet. */
  private static final byte RATE_PERMIT_HELD = 2;

  /**
   * The attempt started last took a rate-limit permit: if it turns out never made ({@link
   * #attemptNotMade}), the permit is held again, for {@link #callEnded} to give back.
   */
  private static final byte RATE_PERMIT_IN_ATTEMPT = 4;

  /**
   * The breaker refused attempts (open and not yet due for its trials, or half-open with every
   * trial out: {@link CircuitBreaker#refusesAt}) when the call asked for its next attempt's
   * rate-limit permit ({@link RetryCall#reservePermit}): no permit was taken and no wait made, and
   * the breaker refuses the attempt ({@link #refusedBeforePermit}) even if its time came up in
   * between, so that no attempt (a half-open trial) goes without its permit.
   */
  private static final byte BREAKER_REFUSES = 8;

  HostHold(HostState state) {
    this.state = state;
  }

  /** For a call whose state {@link RetryEngine#begin} sets. */
  HostHold() {}

  /**
   * Set by the engine once, when the call is made, only when it has a context factory (kept here:
   * RetryCall is at its size limit). Null for none: not initialised to {@link CallContext#NONE},
   * because a volatile store in the constructor fenced every call (issue 13).
   */
  volatile CallContext context;

  /** The call's {@link CallContext}, {@link CallContext#NONE} when it has none. */
  public CallContext context() {
    CallContext c = context;
    return c == null ? CallContext.NONE : c;
  }

  /** An event of {@code type} is built: a listener wants it, or the call's context hears all. */
  boolean wants(RetryEvent.Type type, int attempt) {
    CallContext c = context;
    return (c != null && c != CallContext.NONE) || state.engine.wants(type, attempt);
  }

  CircuitBreaker breaker() {
    return state.breaker;
  }

  /** The call's first attempt starts: it counts as a call for the budget. */
  void callStarted(long nowNanos) {
    RetryBudget budget = state.budget;
    if (budget != null) {
      budget.recordCall(nowNanos);
    }
  }

  /**
   * Takes a permit for the next attempt if that needs no time: there is no breaker, or it is
   * closed. False: ask {@link #acquire(long)}.
   */
  boolean acquireWhileClosed() {
    CircuitBreaker breaker = state.breaker;
    if (breaker == null) {
      return true;
    }
    permit = breaker.closedPermit();
    return permit != CircuitBreaker.REJECTED;
  }

  /**
   * The breaker refuses the next attempt without being asked again: it was open when the call asked
   * for the attempt's rate-limit permit, which was then neither taken nor waited for.
   */
  void breakerRefusesBeforePermit() {
    holds |= BREAKER_REFUSES;
  }

  /** Once, whether {@link #breakerRefusesBeforePermit} was said for the attempt starting now. */
  boolean refusedBeforePermit() {
    if ((holds & BREAKER_REFUSES) == 0) {
      return false;
    }
    holds &= ~BREAKER_REFUSES;
    return true;
  }

  /** Asks the breaker for a permit for the next attempt at {@code nowNanos}; false when open. */
  boolean acquire(long nowNanos) {
    permit = state.breaker.tryAcquireTellingLater(nowNanos);
    return permit != CircuitBreaker.REJECTED;
  }

  /**
   * The outcome of the attempt that started at {@code startedNanos}, recorded once with its permit;
   * the breaker reads {@code clock} if it needs the time.
   */
  void record(boolean failure, long startedNanos, Clock clock) {
    CircuitBreaker breaker = state.breaker;
    if (breaker != null && permit != CircuitBreaker.REJECTED) {
      breaker.onResultTellingLater(permit, failure, startedNanos, clock);
      permit = CircuitBreaker.REJECTED;
    }
  }

  /**
   * A response's status, for the attempt that started at {@code startedNanos}: recorded in the
   * breaker, and a 429 whose {@code Retry-After} asked for {@code askedNanos} pauses the rate limit
   * under {@code pauseOn429} (the limiter's own rule, so it holds even when the route does not wait
   * for {@code Retry-After} itself).
   */
  void recordStatus(int status, long askedNanos, long startedNanos, long now, Clock clock) {
    Policy policy = state.policy;
    record(policy.circuitBreaker().failOnStatuses().contains(status), startedNanos, clock);
    if (status == 429
        && askedNanos != RetryAfter.NONE
        && state.limiter != null
        && policy.rateLimit().pauseOn429()) {
      // The 429 is the host's word about itself: the host's other buckets (routes with a rate
      // limit of their own) pause too, not only this route's, each bounded by its own route's
      // retryAfter.max: what the host asked goes on, not this route's bound of it, which held
      // another route's bucket no longer than this route would wait.
      state.engine.pauseHost(state, now, askedNanos);
      // Bounded by the longest retryAfter.max of the routes that share the bucket (equal rateLimit
      // sections: the common case, routes inherit the defaults'), not by this route's alone: a
      // POST route's 10 s held the GETs of the same bucket, which wait up to 30 s, 10 s of a 20 s
      // Retry-After. The bound is read after the host's pause is noted: a route that makes the
      // bound longer sets it, then reads the noted pause (RetryEngine.limiterFor), so one of the
      // two sees the other. Read before, a route that came between found no pause to apply again
      // and the bucket stayed paused within the shorter bound.
      state.limiter.pause(now, Math.min(askedNanos, state.pauseBoundNanos()));
    }
  }

  /** Gives the attempt's permit back without an outcome (cancelled, abandoned). */
  void release() {
    CircuitBreaker breaker = state.breaker;
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
    RetryBudget budget = state.budget;
    CircuitBreaker breaker = state.breaker;
    if (budget != null) {
      budget.recordRetry(nowNanos);
    }
    if (failure && breaker != null && permit != CircuitBreaker.REJECTED) {
      breaker.onResultTellingLater(permit, true, durationNanos, nowNanos);
    }
  }

  /**
   * Takes one retry from the budget: its ticket ({@link RetryBudget#acquireRetry}), which says
   * where the budget counted it, for {@link #callEnded} to give it back there; {@link
   * RetryBudget#granted} is false when the budget is spent. A host without budget grants every
   * retry (a ticket of the window that {@link #callEnded} never gives back: there is no budget).
   */
  long takeRetry(long nowNanos) {
    RetryBudget budget = state.budget;
    if (budget == null) {
      return RetryBudget.OF_WINDOW;
    }
    return budget.acquireRetry(nowNanos);
  }

  /** A retry was taken and decided: it is pending until its attempt starts. */
  void retryDecided() {
    // The attempt it follows was made: the permit it took, if any, was used.
    holds = (byte) ((holds & RATE_PERMIT_HELD) | RETRY_PENDING);
  }

  /** The rate limiter granted a permit for the next attempt. */
  void permitTaken() {
    holds = (byte) ((holds & RETRY_PENDING) | RATE_PERMIT_HELD);
  }

  /** The next attempt starts: the pending retry, if any, and the rate-limit permit are used. */
  void attemptStarted() {
    // The retry's ticket stays kept (the call's extras): an attempt never made (attemptNotMade)
    // gives it back.
    holds = (holds & RATE_PERMIT_HELD) != 0 ? RATE_PERMIT_IN_ATTEMPT : 0;
  }

  /**
   * The attempt started last was never made after all: the retry it was for ({@code retry}) is
   * pending again, and so is the rate-limit permit it took, so that {@link #callEnded} gives both
   * back.
   */
  void attemptNotMade(boolean retry) {
    int h = holds;
    if (retry) {
      h |= RETRY_PENDING;
    }
    if ((h & RATE_PERMIT_IN_ATTEMPT) != 0) {
      h = (h & ~RATE_PERMIT_IN_ATTEMPT) | RATE_PERMIT_HELD;
    }
    holds = (byte) h;
  }

  /**
   * The call ends: a retry decided and never made (its budget's ticket {@code retryTicket}) gives
   * its budget back, and a rate-limit permit taken for an attempt never made (the breaker refused
   * it, the caller gave up) goes back to the bucket; otherwise calls an open breaker refuses would
   * empty it, be counted as rate-limited, and hold back the host's first calls once it closes.
   */
  void callEnded(long nowNanos, long retryTicket) {
    release();
    RetryBudget budget = state.budget;
    if ((holds & RETRY_PENDING) != 0 && budget != null) {
      budget.returnRetry(retryTicket, nowNanos);
    }
    permitBack(nowNanos);
    if (state.limiter instanceof RateLimiter) {
      ((RateLimiter) state.limiter).forget(this); // no reference kept to a call that ended
    }
    holds = 0;
  }

  /**
   * The rate-limit permit taken for the next attempt, if any, goes back: only this JVM's limiter
   * can take one back (PermitLimiter has no such operation), a fleet's shared limit keeps it as
   * used.
   */
  void permitBack(long nowNanos) {
    if ((holds & RATE_PERMIT_HELD) != 0) {
      holds &= ~RATE_PERMIT_HELD;
      if (state.limiter instanceof RateLimiter) {
        // Whose: a permit reserved ahead (RetryCall.reserve) and not yet taken is forgotten.
        ((RateLimiter) state.limiter).giveBack(nowNanos, this);
      }
    }
  }

  /** Sets the start to {@code nowNanos} unless the call started already; returns the start. */
  long startNanos(long nowNanos) {
    if (!started) {
      startNanos = nowNanos;
      started = true;
    }
    return startNanos;
  }

  /** For events: time since the call started (0 before it did). */
  long elapsedNanos() {
    return started ? state.engine.clock().nanoTime() - startNanos : 0;
  }

  long wallMillis() {
    return state.engine.clock().wallMillis();
  }
}
