package dev.retryagent.engine;

import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import java.util.function.BooleanSupplier;

/**
 * The state of one call across its attempts, and every decision about it. A client adapter (or
 * {@link SyncRetryLoop} / {@link AsyncRetryLoop}) drives it, once per attempt, in this order:
 *
 * <ol>
 *   <li>{@link #reservePermit()}: the rate limit; returns how long to wait first, or throws.
 *   <li>{@link #acquireBreaker()}: the circuit breaker; throws when open.
 *   <li>{@link #startAttempt()}: the attempt number, for the attempt header.
 *   <li>{@link #onResponse} or {@link #onFailure}: classify the outcome, record it in the breaker,
 *       decide ({@link RetryRules}, on this call's live state). The decision is made once per
 *       attempt; asking again returns the same decision, so an adapter may decide as soon as the
 *       status is known (before the body) and again when the attempt completes.
 *   <li>If the decision says retry: discard the result, wait {@link Decision#delayNanos()}, go to
 *       1.
 * </ol>
 *
 * <p>Methods are synchronised: an asynchronous call moves between threads, and cancellation may
 * come from any thread.
 */
public final class RetryCall {
  private final RetryEngine engine;
  private final RequestInfo request;
  private final Policy policy;
  private final RetryPolicy retry;
  private final boolean observe;
  private final boolean passThrough;
  private final long startNanos;
  private long deadlineNanos;
  private BooleanSupplier cancelled;

  private final CircuitBreaker breaker;
  private final RetryBudget budget;
  private final RateLimiter limiter;

  private int attempt;
  private long attemptStartNanos;
  private long permit = CircuitBreaker.REJECTED;
  private long previousDelayNanos;
  private Decision decision;
  private boolean finished;

  RetryCall(RetryEngine engine, RequestInfo request, Policy policy, Mode mode) {
    this.engine = engine;
    this.request = request;
    this.policy = policy;
    this.retry = policy.retry();
    this.observe = mode == Mode.OBSERVE;
    this.passThrough = mode == Mode.OFF;
    this.startNanos = engine.clock().nanoTime();
    this.deadlineNanos = startNanos + retry.deadline().toNanos();
    if (passThrough) {
      breaker = null;
      budget = null;
      limiter = null;
    } else {
      String target = request.target();
      breaker = engine.breakerFor(target, policy);
      budget = engine.budgetFor(target, policy);
      limiter = engine.limiterFor(target, policy);
    }
  }

  /** True when the agent is off: the adapter must call the client directly and not come back. */
  public boolean passThrough() {
    return passThrough;
  }

  public RequestInfo request() {
    return request;
  }

  public Policy policy() {
    return policy;
  }

  /** Attempts started so far. */
  public synchronized int attempt() {
    return attempt;
  }

  /** True in observe mode. */
  public boolean observeOnly() {
    return observe;
  }

  /**
   * Shortens the deadline to {@code deadlineNanos} (in {@link Clock#nanoTime()} terms) when that is
   * sooner: e.g. OkHttp's call timeout, which covers the whole call.
   */
  public synchronized void limitDeadline(long deadlineNanos) {
    if (deadlineNanos - this.deadlineNanos < 0) {
      this.deadlineNanos = deadlineNanos;
    }
  }

  /**
   * A signal that the caller gave up (e.g. OkHttp's {@code Call.isCanceled()}); checked before
   * retries.
   */
  public synchronized void cancelledWhen(BooleanSupplier signal) {
    this.cancelled = signal;
  }

  /**
   * The timeout for the attempt being started, or -1 to keep the client's own: {@code
   * perAttemptTimeout} when set, and for a retry never past the deadline.
   */
  public synchronized long attemptTimeoutNanos() {
    long timeout = retry.perAttemptTimeout() == null ? -1 : retry.perAttemptTimeout().toNanos();
    if (attempt > 1) {
      long remaining = Math.max(1, deadlineNanos - engine.clock().nanoTime());
      timeout = timeout < 0 ? remaining : Math.min(timeout, remaining);
    }
    return timeout;
  }

  /**
   * Step 1, the rate limit: reserves a permit for the next attempt.
   *
   * @return nanoseconds to wait before the attempt; always 0 in observe mode
   * @throws RateLimitedException when no permit comes within {@code maxWait} (or a pause outlasts
   *     the deadline); the call is over
   */
  public synchronized long reservePermit() throws RateLimitedException {
    if (limiter == null) {
      return 0;
    }
    long now = engine.clock().nanoTime();
    long maxWait = policy.rateLimit().maxWait().toNanos();
    long remaining = Math.max(0, deadlineNanos - now);
    // A token that comes after the deadline is no use: the call's whole time would be spent.
    long wait = limiter.reserve(now, Math.min(maxWait, remaining), remaining);
    if (wait == RateLimiter.REJECTED) {
      if (engine.listening()) {
        engine.emit(RetryEvent.rateLimitRejected(this));
      }
      if (observe) {
        return 0;
      }
      finish(AttemptResult.none(), GiveUpReason.RATE_LIMITED);
      throw RateLimitedException.noPermit(
          request.target(), remaining, maxWait, limiter.pauseRemainingNanos(now));
    }
    if (wait > 0 && engine.listening()) {
      engine.emit(RetryEvent.rateLimitWait(this, wait));
    }
    return observe ? 0 : wait;
  }

  /**
   * Step 2, the circuit breaker.
   *
   * @throws CircuitBreakerOpenException when the breaker is open; the call is over
   */
  public synchronized void acquireBreaker() throws CircuitBreakerOpenException {
    if (breaker == null) {
      return;
    }
    long now = engine.clock().nanoTime();
    permit = breaker.tryAcquire(now);
    if (permit != CircuitBreaker.REJECTED) {
      return;
    }
    CircuitBreakerOpenException e = breaker.rejection(now, engine.clock().wallMillis());
    if (engine.listening()) {
      engine.emit(RetryEvent.breakerRejected(this, e));
    }
    if (observe) {
      return;
    }
    finish(AttemptResult.refused(e), GiveUpReason.CIRCUIT_OPEN);
    throw e;
  }

  /**
   * Counts requests the client itself repeated inside the current attempt (OkHttp repeats a 408 or
   * a 503 with {@code Retry-After: 0} once on its own), so that {@code maxAttempts} bounds the
   * requests the server sees rather than multiplying with the client's own repeats. Call before
   * {@link #onResponse} of that attempt.
   */
  public synchronized void countClientRepeats(int repeats) {
    if (repeats > 0 && decision == null) {
      attempt += repeats;
    }
  }

  /** Step 3: an attempt starts now. Returns its 1-based number. */
  public synchronized int startAttempt() {
    attempt++;
    attemptStartNanos = engine.clock().nanoTime();
    decision = null;
    if (attempt == 1 && budget != null) {
      budget.recordCall(attemptStartNanos);
    }
    if (engine.listening()) {
      engine.emit(RetryEvent.attempt(this));
    }
    return attempt;
  }

  /**
   * Step 4 for a response: classify, record, decide. Idempotent per attempt.
   *
   * @param retryAfter the response's {@code Retry-After} header, or null
   */
  public synchronized Decision onResponse(int status, String retryAfter) {
    if (decision != null) {
      return decision;
    }
    long now = engine.clock().nanoTime();
    long askedNanos = RetryAfter.parseNanos(retryAfter, engine.clock().wallMillis());
    recordBreaker(policy.circuitBreaker().failOnStatuses().contains(status), now);
    // The pause is the rate limiter's own rule, so it holds even when this route does not wait
    // for Retry-After itself.
    if (status == 429
        && askedNanos != RetryAfter.NONE
        && limiter != null
        && policy.rateLimit().pauseOn429()) {
      limiter.pauseUntil(now + Math.min(askedNanos, retry.retryAfterMax().toNanos()));
    }
    long retryAfterNanos = retry.retryAfterEnabled() ? askedNanos : RetryAfter.NONE;
    decision = decide(AttemptResult.response(status), retryAfterNanos, now);
    return decision;
  }

  /** Step 4 for an exception: classify, record, decide. Idempotent per attempt. */
  public synchronized Decision onFailure(Throwable error) {
    if (decision != null) {
      return decision;
    }
    long now = engine.clock().nanoTime();
    AttemptResult result = AttemptResult.thrown(error);
    if (result.outcome() == Outcome.CANCELLED) {
      releaseBreaker();
    } else {
      boolean failure =
          policy.circuitBreaker().failOnTransport() && error instanceof java.io.IOException;
      recordBreaker(failure, now);
    }
    decision = decide(result, RetryAfter.NONE, now);
    return decision;
  }

  /**
   * The call ended outside the normal steps: the caller cancelled it, or the thread was interrupted
   * while waiting. Releases what the attempt held; safe to call more than once.
   */
  public synchronized void onAbandoned() {
    releaseBreaker();
    if (!finished) {
      finish(AttemptResult.cancelled(), GiveUpReason.CANCELLED);
    }
  }

  /** True once the call ended (returned, failed or was abandoned). */
  public synchronized boolean isFinished() {
    return finished;
  }

  /** Runs {@link RetryRules} on this call's live state, then carries the decision out. */
  private Decision decide(AttemptResult result, long retryAfterNanos, long now) {
    Decision d = RetryRules.decide(retry, request, result, attempt, new Live(now, retryAfterNanos));
    // Only the breaker rule gives this reason after an attempt: end the call the way the next
    // attempt would have, with the breaker's exception.
    if (d.reason() == GiveUpReason.CIRCUIT_OPEN) {
      CircuitBreakerOpenException e = breaker.rejection(now, engine.clock().wallMillis());
      if (engine.listening()) {
        engine.emit(RetryEvent.breakerRejectedRetry(this, result, e));
      }
      finish(result, GiveUpReason.CIRCUIT_OPEN);
      return Decision.fail(result, GiveUpReason.CIRCUIT_OPEN, e);
    }
    if (!d.retry()) {
      finish(result, d.reason());
      return d;
    }
    if (engine.listening()) {
      engine.emit(RetryEvent.retry(this, result, d.delayNanos()));
    }
    if (observe) {
      // Reported as "would retry"; the caller gets exactly what it would get without the agent.
      finish(result, null);
      return Decision.done(result, null);
    }
    previousDelayNanos = d.delayNanos();
    return d;
  }

  /** The ladder's questions, answered from this call's state at {@code now}. */
  private final class Live implements RetryRules.Moment {
    private final long now;
    private final long retryAfterNanos;

    Live(long now, long retryAfterNanos) {
      this.now = now;
      this.retryAfterNanos = retryAfterNanos;
    }

    @Override
    public boolean callerGaveUp() {
      try {
        return cancelled != null && cancelled.getAsBoolean();
      } catch (RuntimeException e) {
        return false;
      }
    }

    @Override
    public long retryAfterNanos() {
      return retryAfterNanos;
    }

    @Override
    public long previousDelayNanos() {
      return previousDelayNanos;
    }

    @Override
    public double nextRandom() {
      return engine.random().nextDouble();
    }

    @Override
    public boolean pastDeadline(long delayNanos) {
      return now + delayNanos - deadlineNanos >= 0;
    }

    @Override
    public boolean breakerOpenAfter(long delayNanos) {
      // Observe mode never fails a call, so it never fails one early either.
      return breaker != null && !observe && breaker.isOpenAt(now + delayNanos);
    }

    @Override
    public boolean takeFromBudget() {
      return budget == null || budget.tryAcquireRetry(now);
    }
  }

  private void finish(AttemptResult result, GiveUpReason reason) {
    if (finished) {
      return;
    }
    finished = true;
    releaseBreaker();
    if (engine.listening()) {
      if (reason != null) {
        engine.emit(RetryEvent.giveUp(this, result, reason));
      }
      boolean succeeded =
          result.outcome() == Outcome.RESPONSE && !RetryRules.isFailure(retry, result);
      engine.emit(RetryEvent.complete(this, result, reason, succeeded));
    }
  }

  private void recordBreaker(boolean failure, long now) {
    if (breaker != null && permit != CircuitBreaker.REJECTED) {
      breaker.onResult(permit, failure, now - attemptStartNanos, now);
      permit = CircuitBreaker.REJECTED;
    }
  }

  private void releaseBreaker() {
    if (breaker != null && permit != CircuitBreaker.REJECTED) {
      breaker.release(permit);
      permit = CircuitBreaker.REJECTED;
    }
  }

  /** For events: time since the call started. */
  long elapsedNanos() {
    return engine.clock().nanoTime() - startNanos;
  }

  /** For events: the wall clock now. */
  long wallMillis() {
    return engine.clock().wallMillis();
  }
}
