package dev.retryagent.engine;

import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import java.util.function.BooleanSupplier;
import java.util.function.ToIntFunction;

/**
 * SPI: the state of one call across its attempts, and every decision about it. A client adapter (or
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
 * <p>A retry that was decided but never made (the caller cancelled during the wait, the breaker or
 * the rate limit refused the attempt) gives its budget back. Requests the client sent again on its
 * own inside an attempt count as attempts, for {@code maxAttempts}, the budget and the breaker
 * ({@link #clientRepeated}, {@link #clientResendsOf}, {@link #clientMayResend}).
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
  private final CallBounds bounds;
  private BooleanSupplier cancelled;
  private final HostHold host;
  private final PermitLimiter limiter;
  private int attempt;
  private long attemptStartNanos;
  private long previousDelayNanos;
  private Decision decision;
  private boolean finished;
  private final ClientResends resends = new ClientResends();

  RetryCall(RetryEngine engine, RequestInfo request, Policy policy, Mode mode) {
    this.engine = engine;
    this.request = request;
    this.policy = policy;
    this.retry = policy.retry();
    this.observe = mode == Mode.OBSERVE;
    this.passThrough = mode == Mode.OFF;
    this.startNanos = engine.clock().nanoTime();
    this.bounds = new CallBounds(retry, startNanos);
    host = passThrough ? new HostHold(null, null, null) : engine.holdFor(request.target(), policy);
    limiter = host.limiter();
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
   * sooner. A give-up because of it names the deadline.
   */
  public synchronized void limitDeadline(long deadlineNanos) {
    bounds.limitDeadline(deadlineNanos);
  }

  /**
   * The caller's own timeout for the whole call (OkHttp's {@code callTimeout}) ends at {@code
   * deadlineNanos}: no retry starts after it, and a call it ends (the client cancels it) gives up
   * with {@link GiveUpReason#CALL_TIMEOUT} rather than as cancelled. It does not shorten the
   * attempts' timeouts: the client enforces it, with the exception the caller expects.
   */
  public synchronized void limitToCallerTimeout(long deadlineNanos) {
    bounds.limitToCallerTimeout(deadlineNanos);
  }

  /**
   * A signal that the caller gave up (e.g. OkHttp's {@code Call.isCanceled()}); checked before
   * retries.
   */
  public synchronized void cancelledWhen(BooleanSupplier signal) {
    this.cancelled = signal;
  }

  /**
   * How the client resends a request on its own inside one attempt, judged from the attempt's
   * failure: {@code resends} returns how many times it did (0 when it did not, or cannot tell).
   * Asked once per failed attempt, before the decision.
   */
  public synchronized void clientResendsOf(ToIntFunction<Throwable> resends) {
    this.resends.judgedBy(resends);
  }

  /**
   * May the client send the current attempt's request again by itself after {@code result}? (Asked
   * by HttpClient 5's retry strategy, wrapped.) {@link RetryRules#clientMayResend}; always yes in
   * observe mode. An allowed resend counts when made ({@link #clientRepeated}), expected no more.
   * Never throws: when the engine fails here, the answer is yes, as without the agent.
   */
  public synchronized boolean clientMayResend(AttemptResult result) {
    try {
      if (TestFaults.DECIDE) {
        throw TestFaults.fault("decide");
      }
      return observe || passThrough || resends.ask(retry, request, result, attempt);
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      // Deciding is broken: the client does what it does without the agent.
      engine.internalError("deciding whether the client may resend", e, "the client decides");
      return true;
    }
  }

  /**
   * The policy's bound on the attempt being started, or -1 for none: {@code perAttemptTimeout} when
   * set, and for a retry the time left before the deadline (a retry never runs past it; the first
   * attempt is the caller's own). The adapter gives each of the client's own per-attempt timeouts
   * {@link CallBounds#shorterTimeout}{@code (this, clientTimeout)}.
   */
  public synchronized long attemptTimeoutNanos() {
    return bounds.attemptTimeoutNanos(attempt, engine.clock().nanoTime());
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
    long remaining = bounds.remainingNanos(now);
    // A token that comes after the deadline is no use: the call's whole time would be spent.
    long wait = limiter.reserve(now, Math.min(maxWait, remaining), remaining);
    if (wait == PermitLimiter.REJECTED) {
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
    host.permitTaken();
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
    long now = engine.clock().nanoTime();
    if (host.acquire(now)) {
      return;
    }
    CircuitBreakerOpenException e = host.breaker().rejection(now, engine.clock().wallMillis());
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
   * The client repeated the attempt's request on its own after {@code status} (OkHttp: a 408, a 503
   * with {@code Retry-After: 0}): an attempt (so {@code maxAttempts} bounds what the server sees),
   * a retry for the budget, a breaker failure when the status is one. Call before {@link
   * #onResponse}.
   */
  public synchronized void clientRepeated(int status) {
    countClientResend(policy.circuitBreaker().failOnStatuses().contains(status), false);
  }

  /**
   * As {@link #clientRepeated}, after a transport failure. {@code governed}: the adapter let the
   * client resend only while an attempt was left (HttpURLConnection's), as if it had asked.
   */
  public synchronized void clientResentAfterFailure(boolean governed) {
    countClientResend(policy.circuitBreaker().failOnTransport(), governed);
  }

  private void countClientResend(boolean breakerFailure, boolean governed) {
    if (decision != null || passThrough) {
      return;
    }
    long now = engine.clock().nanoTime();
    attempt++;
    if (!governed) {
      resends.made();
    }
    host.recordResend(breakerFailure, now - attemptStartNanos, now);
    // The server saw one more request: the attempt counters (metrics) count what reached it.
    if (engine.listening()) {
      engine.emit(RetryEvent.attempt(this));
    }
  }

  /** Step 3: an attempt starts now. Returns its 1-based number. */
  public synchronized int startAttempt() {
    attempt++;
    attemptStartNanos = engine.clock().nanoTime();
    decision = null;
    resends.attemptStarted(attempt > 1);
    if (!callerGaveUp()) {
      // A retry started after the caller cancelled is refused by the client without a request:
      // it stays pending, so the call's end gives its budget back.
      host.attemptStarted();
    }
    if (attempt == 1) {
      host.callStarted(attemptStartNanos);
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
    try {
      if (TestFaults.DECIDE) {
        throw TestFaults.fault("decide");
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
        limiter.pause(now, Math.min(askedNanos, retry.retryAfterMax().toNanos()));
      }
      long retryAfterNanos = retry.retryAfterEnabled() ? askedNanos : RetryAfter.NONE;
      decision = decide(AttemptResult.response(status), retryAfterNanos, now);
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      decision = failedToDecide(AttemptResult.response(status), e);
    }
    return decision;
  }

  /** Step 4 for an exception: classify, record, decide. Idempotent per attempt. */
  public synchronized Decision onFailure(Throwable error) {
    if (decision != null) {
      return decision;
    }
    try {
      if (TestFaults.DECIDE) {
        throw TestFaults.fault("decide");
      }
      int resent = resends.in(error);
      for (int i = 0; i < resent; i++) {
        countClientResend(policy.circuitBreaker().failOnTransport(), false);
      }
      long now = engine.clock().nanoTime();
      AttemptResult result = AttemptResult.thrown(error);
      if (result.outcome() == Outcome.CANCELLED) {
        host.release();
      } else {
        boolean failure =
            policy.circuitBreaker().failOnTransport() && error instanceof java.io.IOException;
        recordBreaker(failure, now);
      }
      decision = decide(result, RetryAfter.NONE, now);
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      decision = failedToDecide(AttemptResult.thrown(error), e);
    }
    return decision;
  }

  /**
   * The engine failed while deciding after an attempt (a bug of ours): the call ends with that
   * attempt's result, as it would have without the agent, and the failure is reported once per
   * cause. What the attempt held is released as far as it still can be.
   */
  private Decision failedToDecide(AttemptResult result, Throwable bug) {
    engine.internalError(
        "deciding after an attempt", bug, "the call ends with that attempt's outcome, not retried");
    try {
      finish(result, null); // releases the breaker permit, gives back a pending retry
    } catch (RuntimeException | LinkageError | StackOverflowError again) {
      finished = true;
    }
    return Decision.done(result, null);
  }

  /**
   * The call ended outside the normal steps: the caller cancelled it, or the thread was interrupted
   * while waiting. Releases what the attempt held; safe to call more than once.
   */
  public synchronized void onAbandoned() {
    host.release();
    if (!finished) {
      boolean timedOut = bounds.callerTimedOut(engine.clock().nanoTime());
      finish(
          AttemptResult.cancelled(), timedOut ? GiveUpReason.CALL_TIMEOUT : GiveUpReason.CANCELLED);
    }
  }

  /** The caller's cancel signal ({@link #cancelledWhen}); an adapter's bug counts as not. */
  private boolean callerGaveUp() {
    try {
      return cancelled != null && cancelled.getAsBoolean();
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** True once the call ended (returned, failed or was abandoned). */
  public synchronized boolean isFinished() {
    return finished;
  }

  /** Runs {@link RetryRules} on this call's live state, then carries the decision out. */
  private Decision decide(AttemptResult result, long retryAfterNanos, long now) {
    Decision d =
        RetryRules.decide(
            retry,
            request,
            result,
            attempt,
            new CallMoment(
                now,
                retryAfterNanos,
                previousDelayNanos,
                bounds,
                resends,
                host,
                observe,
                engine.random(),
                this::callerGaveUp));
    // Only the breaker rule gives this reason after an attempt: end the call the way the next
    // attempt would have, with the breaker's exception.
    if (d.reason() == GiveUpReason.CIRCUIT_OPEN) {
      CircuitBreakerOpenException e = host.breaker().rejection(now, engine.clock().wallMillis());
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
      // The budget stays spent, as the retry would have spent it: observe mode shows when the
      // budget would refuse.
      finish(result, null);
      return Decision.done(result, null);
    }
    previousDelayNanos = d.delayNanos();
    host.retryDecided(now);
    return d;
  }

  private void finish(AttemptResult result, GiveUpReason reason) {
    if (finished) {
      return;
    }
    finished = true;
    // Releases the permit; a retry decided and never made gives its budget back.
    host.callEnded(engine.clock().nanoTime());
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
    host.record(failure, now - attemptStartNanos, now);
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
