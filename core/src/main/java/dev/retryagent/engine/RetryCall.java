package dev.retryagent.engine;

import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import java.time.Instant;
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
 *       decide. The decision is made once per attempt; asking again returns the same decision, so
 *       an adapter may decide as soon as the status is known (before the body) and again when the
 *       attempt completes.
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
      engine.emit(RetryEvent.Type.RATE_LIMITED, this, null, -1, null, 0, GiveUpReason.RATE_LIMITED);
      if (observe) {
        return 0;
      }
      finish(null, -1, null, GiveUpReason.RATE_LIMITED);
      long pause = limiter.pauseRemainingNanos(now);
      String why =
          remaining < maxWait
              ? "no permit before the call's deadline (" + remaining / 1_000_000 + "ms left)"
              : "no permit within maxWait " + maxWait / 1_000_000 + "ms";
      throw new RateLimitedException(
          request.target(),
          why
              + (pause > 0
                  ? " (host paused after 429 for another " + pause / 1_000_000 + "ms)"
                  : ""));
    }
    if (wait > 0) {
      engine.emit(RetryEvent.Type.RATE_LIMITED, this, null, -1, null, wait, null);
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
    CircuitBreakerOpenException e = openException(now);
    engine.emit(RetryEvent.Type.BREAKER_REJECTED, this, null, -1, e, 0, GiveUpReason.CIRCUIT_OPEN);
    if (observe) {
      return;
    }
    finish(null, -1, e, GiveUpReason.CIRCUIT_OPEN);
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
    engine.emit(RetryEvent.Type.ATTEMPT, this, null, -1, null, 0, null);
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
    long retryAfterNanos = retry.retryAfterEnabled() ? askedNanos : RetryAfter.NONE;
    recordBreaker(policy.circuitBreaker().failOnStatuses().contains(status), now);
    // The pause is the rate limiter's own rule, so it holds even when this route does not wait
    // for Retry-After itself.
    if (status == 429
        && askedNanos != RetryAfter.NONE
        && limiter != null
        && policy.rateLimit().pauseOn429()) {
      limiter.pauseUntil(now + Math.min(askedNanos, retry.retryAfterMax().toNanos()));
    }
    boolean retryable = Classifier.isRetryableStatus(retry, status);
    decision = decide(Outcome.RESPONSE, status, null, retryable, retryAfterNanos, now);
    return decision;
  }

  /** Step 4 for an exception: classify, record, decide. Idempotent per attempt. */
  public synchronized Decision onFailure(Throwable error) {
    if (decision != null) {
      return decision;
    }
    long now = engine.clock().nanoTime();
    Outcome outcome = TransportClassifier.classify(error);
    if (outcome == Outcome.CANCELLED) {
      releaseBreaker();
    } else {
      boolean failure =
          policy.circuitBreaker().failOnTransport() && error instanceof java.io.IOException;
      recordBreaker(failure, now);
    }
    boolean retryable = Classifier.isRetryableException(retry, outcome, error);
    decision = decide(outcome, -1, error, retryable, RetryAfter.NONE, now);
    return decision;
  }

  /**
   * The call ended outside the normal steps: the caller cancelled it, or the thread was interrupted
   * while waiting. Releases what the attempt held; safe to call more than once.
   */
  public synchronized void onAbandoned() {
    releaseBreaker();
    if (!finished) {
      finish(Outcome.CANCELLED, -1, null, GiveUpReason.CANCELLED);
    }
  }

  /** True once the call ended (returned, failed or was abandoned). */
  public synchronized boolean isFinished() {
    return finished;
  }

  /** The guard-clause ladder: each rule that can end the call, in order. */
  private Decision decide(
      Outcome outcome,
      int status,
      Throwable error,
      boolean retryable,
      long retryAfterNanos,
      long now) {
    boolean failure = isFailure(outcome, status);
    if (outcome == Outcome.CANCELLED || isCancelled()) {
      return finish(outcome, status, error, GiveUpReason.CANCELLED);
    }
    if (!retry.enabled()) {
      return finish(outcome, status, error, failure ? GiveUpReason.RETRY_DISABLED : null);
    }
    if (!retryable) {
      return finish(outcome, status, error, failure ? GiveUpReason.NON_RETRYABLE : null);
    }
    GiveUpReason unsafe = IdempotencyGate.check(retry, request, outcome);
    if (unsafe != null) {
      return finish(outcome, status, error, unsafe);
    }
    if (attempt >= retry.maxAttempts()) {
      return finish(outcome, status, error, GiveUpReason.ATTEMPTS);
    }
    // A server that asks for more than we may wait gets its answer back at once.
    if (retryAfterNanos != RetryAfter.NONE && retryAfterNanos > retry.retryAfterMax().toNanos()) {
      return finish(outcome, status, error, GiveUpReason.RETRY_AFTER_TOO_LONG);
    }
    long delay =
        Backoff.delayNanos(
            retry.backoff(), attempt, previousDelayNanos, engine.random().nextDouble());
    if (retryAfterNanos != RetryAfter.NONE) {
      delay = Math.max(delay, retryAfterNanos);
    }
    // Never start a retry that cannot begin before the deadline.
    if (now + delay - deadlineNanos >= 0) {
      return finish(outcome, status, error, GiveUpReason.DEADLINE);
    }
    // A retry that would find the breaker open ends the call now rather than after the wait.
    if (breaker != null && !observe && breaker.isOpenAt(now + delay)) {
      CircuitBreakerOpenException e = openException(now);
      engine.emit(RetryEvent.Type.BREAKER_REJECTED, this, outcome, status, e, 0, null);
      finish(outcome, status, error, GiveUpReason.CIRCUIT_OPEN);
      return Decision.fail(outcome, status, GiveUpReason.CIRCUIT_OPEN, e);
    }
    // Last, so the budget is only spent on retries that will really be made.
    if (budget != null && !budget.tryAcquireRetry(now)) {
      return finish(outcome, status, error, GiveUpReason.BUDGET);
    }
    engine.emit(RetryEvent.Type.RETRY, this, outcome, status, error, delay, null);
    if (observe) {
      // Reported as "would retry"; the caller gets exactly what it would get without the agent.
      return finish(outcome, status, error, null);
    }
    previousDelayNanos = delay;
    return Decision.retryAfter(delay, outcome, status);
  }

  private boolean isCancelled() {
    try {
      return cancelled != null && cancelled.getAsBoolean();
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** A failure for the caller: an exception, a retryable status or a server error. */
  private boolean isFailure(Outcome outcome, int status) {
    if (outcome != Outcome.RESPONSE) {
      return true;
    }
    return status >= 500 || retry.retryOnStatuses().contains(status);
  }

  private Decision finish(Outcome outcome, int status, Throwable error, GiveUpReason reason) {
    if (!finished) {
      finished = true;
      releaseBreaker();
      if (reason != null) {
        engine.emit(RetryEvent.Type.GIVE_UP, this, outcome, status, error, 0, reason);
      }
      boolean succeeded = outcome == Outcome.RESPONSE && !isFailure(outcome, status);
      engine.emitComplete(this, outcome, status, error, reason, succeeded);
    }
    return Decision.done(outcome, status, reason);
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

  private CircuitBreakerOpenException openException(long now) {
    long inNanos = Math.max(0, breaker.openUntilNanos() - now);
    long wall = engine.clock().wallMillis() + inNanos / 1_000_000;
    return new CircuitBreakerOpenException(
        breaker.key(), Instant.ofEpochMilli(wall), inNanos / 1_000_000);
  }

  long startNanos() {
    return startNanos;
  }
}
