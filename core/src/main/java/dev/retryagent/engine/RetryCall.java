package dev.retryagent.engine;

import dev.retryagent.internal.engine.RateLimiter;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import java.util.function.BooleanSupplier;
import java.util.function.ToIntFunction;

/**
 * SPI: the state of one call across its attempts, and every decision about it. A client adapter (or
 * {@link SyncRetryLoop} / {@link AsyncRetryLoop}) drives it, once per attempt, in this order:
 *
 * <ol>
 *   <li>{@link #reservePermit()}: the rate limit; returns how long to wait first, or throws. After
 *       a wait, {@link #reservePermitAfterWait()}, until it returns 0 (a 429 pause may have begun
 *       meanwhile). An open breaker makes both return 0 without a permit: step 2 refuses at once.
 *   <li>{@link #acquireBreaker()}: the circuit breaker; throws when open.
 *   <li>{@link #startAttempt()}: the attempt number, for the attempt header.
 *   <li>{@link #onResponse} or {@link #onFailure}: classify the outcome, record it in the breaker,
 *       decide ({@link RetryRules}, on this call's live state). The decision is made once per
 *       attempt; asking again returns the same decision, so an adapter may decide as soon as the
 *       status is known (before the body) and again when the attempt completes.
 *   <li>On a retry: discard the result, wait {@link Decision#delayNanos()}, go to 1.
 * </ol>
 *
 * <p>A retry that was decided but never made (the caller cancelled during the wait, the breaker or
 * the rate limit refused the attempt) gives its budget back. Requests the client sent again on its
 * own inside an attempt count as attempts, for {@code maxAttempts}, the budget and the breaker
 * ({@link #clientRepeated}, {@link #clientResendsOf}, {@link #clientMayResend}). A call that ends
 * with an exception carries its earlier attempts' as suppressed ({@link EarlierFailures}).
 *
 * <p>Made by {@link RetryEngine#newCall} over a separate request view, or is that view itself: a
 * {@link SelfViewCall} an adapter makes and {@link RetryEngine#begin begins} (one object per call).
 *
 * <p>Methods are synchronised: an asynchronous call moves between threads, and cancellation may
 * come from any thread. The events a step makes are told after it lets go of the lock ({@link
 * CallEvents}), so a listener that blocks holds up no other thread of the call.
 */
public abstract class RetryCall extends HostHold {
  // Written under the lock. Not volatile: a volatile store fenced every attempt (issue 13); the
  // one read without the lock, attemptTimeoutNanos, is by the thread that began the attempt.
  private int attempt;
  private long attemptStartNanos;
  private Decision decision; // as made; as kept (waitsToRetry) while an adapter waits
  // FINISHED and the count of end holds (HOLDS): one byte, where two fields made every call 8 B
  // larger (issue 13).
  private byte flags;
  private CallExtras extras; // made on first use: a call that succeeds at once never needs it

  /** In {@link #flags}: the call has ended. */
  private static final byte FINISHED = 1;

  /**
   * In {@link #flags}, three bits: how many holds of the end are in force ({@link #holdEnd},
   * nested: an adapter's step inside another's); the end made while any is, is told when the caller
   * hears of it ({@link #endHeard}). Under the lock.
   */
  private static final int HOLD_UNIT = 2;

  // Three bits (up to seven holds): two are in force at most today (permitThenBegin's, begin's
  // inside it); a spare bit, so that a third nesting cannot carry into another flag (r25).
  private static final int HOLDS = 14;

  // Two kinds only, both in this package: a call with a separate view (RetryEngine.newCall) and a
  // call that is its own view (SelfViewCall, an adapter's one object per call).
  RetryCall(HostState state) {
    super(state);
  }

  RetryCall() {}

  /** The bounds, made on first use from the policy and the call's start. */
  private CallBounds bounds() {
    long start = started ? startNanos : startNanos(state.engine.clock().nanoTime());
    return extras().bounds(state, start);
  }

  private CallExtras extras() {
    if (extras == null) {
      extras = new CallExtras();
    }
    return extras;
  }

  /** True when the agent is off: the adapter must call the client directly and not come back. */
  public boolean passThrough() {
    return state.passThrough;
  }

  /** The view of the request this call is for: a separate object, or the call itself. */
  public abstract RequestInfo request();

  public Policy policy() {
    return state.policy;
  }

  /** Attempts started so far. */
  public synchronized int attempt() {
    return attempt;
  }

  public boolean observeOnly() {
    return state.observe;
  }

  /**
   * Shortens the deadline to {@code deadlineNanos} (in {@link Clock#nanoTime()} terms) when that is
   * sooner. A give-up because of it names the deadline.
   */
  public synchronized void limitDeadline(long deadlineNanos) {
    bounds().limitDeadline(deadlineNanos);
  }

  /**
   * The caller's own timeout for the whole call (OkHttp's {@code callTimeout}) ends at {@code
   * deadlineNanos}: no retry starts after it, and a call it ends (the client cancels it) gives up
   * with {@link GiveUpReason#CALL_TIMEOUT} rather than as cancelled. It does not shorten the
   * attempts' timeouts: the client enforces it, with the exception the caller expects.
   */
  public synchronized void limitToCallerTimeout(long deadlineNanos) {
    bounds().limitToCallerTimeout(deadlineNanos);
  }

  /** The caller's give-up signal (OkHttp's {@code Call.isCanceled()}), asked before retries. */
  public synchronized void cancelledWhen(BooleanSupplier signal) {
    extras().cancelled = signal;
  }

  /**
   * As {@link #cancelledWhen}, for a client whose abort fails the attempt in flight with an
   * ordinary I/O failure (HttpClient 4.5's {@code abort()} closes the socket under the read: {@code
   * SocketException: Socket closed}, a reset): a failure while the signal is set is the abort's,
   * and gives the breaker permit back without an outcome, as a cancel does, instead of counting as
   * the host's failure.
   */
  public synchronized void abortedWhen(BooleanSupplier signal) {
    CallExtras x = extras();
    x.cancelled = signal;
    x.abortFailsAttempt = true;
  }

  /**
   * How often the client resent the request on its own inside an attempt that failed, judged from
   * the failure (0: not, or cannot tell); asked once per failed attempt, before the decision.
   */
  public synchronized void clientResendsOf(ToIntFunction<Throwable> resends) {
    extras().resends().judgedBy(resends);
  }

  /**
   * May the client send the current attempt's request again by itself after {@code result}? (Asked
   * by HttpClient 5's retry strategy, wrapped.) {@link RetryRules#clientMayResend}; always yes in
   * observe mode. An allowed resend counts when made ({@link #clientRepeated}), expected no more.
   */
  public boolean clientMayResend(AttemptResult result) {
    return clientMayResend(result, null);
  }

  /**
   * {@link #clientMayResend(AttemptResult)} for {@code followUp}, a request the client made itself
   * to follow the current attempt's (a redirect's GET after a POST), which it would send again;
   * null when it resends the attempt's own request ({@link RetryRules#clientMayResend(RetryPolicy,
   * RequestInfo, RequestInfo, AttemptResult, int, boolean)}).
   */
  public synchronized boolean clientMayResend(AttemptResult result, RequestInfo followUp) {
    return state.observe
        || state.passThrough
        || extras().clientMayResend(this, state, request(), followUp, sentOrNot(result), attempt);
  }

  /**
   * Whether the rule for requests not safe to repeat ({@code methods}, {@code unsafeMethods},
   * {@code idempotencyKeyHeader}) refuses to send this call's request again after {@code outcome}:
   * the call's own policy's rule, or, outside observe mode, the one now in force when a reload
   * since the call began made it stricter, as each retry of the engine's own is judged ({@link
   * #refusedSinceReload}). For an adapter that decides whether the client may send the request
   * again by itself inside an attempt (OkHttp's resend after a failed connection, which counts as a
   * retry): a POST begun under {@code unsafeMethods: always} whose retry waited while the file was
   * reloaded to {@code never} is not resent by the client either. Without a reload, no look-up: one
   * volatile read more than the own rule's check.
   */
  public boolean refusesRepeat(Outcome outcome) {
    return refusesRepeat(request(), outcome);
  }

  /**
   * {@link #refusesRepeat(Outcome)} for {@code judged}, the request the client would send again in
   * place of the call's own (HttpURLConnection's resend of the GET it follows a POST's redirect
   * with: judged as a GET, by the call's policy). The JDK's resend of a kept-alive connection's
   * request asks it, so that a reload to {@code never} during a retry's wait stops that resend too.
   */
  public boolean refusesRepeat(RequestInfo judged, Outcome outcome) {
    return IdempotencyGate.check(state.retry, judged, outcome) != null
        || (!state.observe
            && !state.passThrough
            && state.engine.reloadedSince(state)
            && refusedSinceReload(judged, outcome));
  }

  /**
   * A request of the attempt under way reached a server before the attempt failed: a redirect's hop
   * the client followed (a POST answered 307 or 303), a request the client sent again by itself. A
   * connect failure that then ends the attempt (the redirect's {@code Location} refuses the
   * connection) proves only that its last connection was never made, not that the call's request
   * was never sent: a request not safe to repeat is not retried after it ({@code retryOn} still
   * names it {@code connect}). Call before {@link #onFailure}; the next attempt forgets it.
   */
  public synchronized void requestReachedServer() {
    if ((flags & FINISHED) == 0) {
      extras().reachedServer = true;
    }
  }

  /** {@code result}, known to have come after a request reached a server when it did. */
  private AttemptResult sentOrNot(AttemptResult result) {
    return extras != null && extras.reachedServer ? result.afterSending() : result;
  }

  /**
   * The policy's bound on the attempt being started, or -1 for none: {@code perAttemptTimeout} when
   * set, and for a retry the time left before the deadline (a retry never runs past it; the first
   * attempt is the caller's own). The adapter gives each of the client's own per-attempt timeouts
   * {@link CallBounds#shorterTimeout}{@code (this, clientTimeout)}. Asked by the thread that began
   * the attempt ({@link #beginAttempt} or {@link #startAttempt}), after it did.
   */
  public long attemptTimeoutNanos() {
    // The first attempt's bound is the policy's alone: no lock, no clock, no bounds object. The
    // thread that began the attempt sees its own write of the attempt number.
    if (attempt <= 1) {
      return state.perAttemptNanos;
    }
    synchronized (this) {
      return bounds().attemptTimeoutNanos(attempt, state.engine.clock().nanoTime());
    }
  }

  /**
   * Step 1, the rate limit: reserves a permit for the next attempt.
   *
   * @return nanoseconds to wait before the attempt; always 0 in observe mode
   * @throws RateLimitedException when no permit comes within {@code maxWait} (or a pause outlasts
   *     the deadline); the call is over, for a retry with the attempt before it ({@link
   *     #permitRefusedRetry})
   */
  public long reservePermit() throws RateLimitedException {
    int reserved = state.limiter == null ? NOT_RESERVED : takeReservedPermit();
    if (reserved != NOT_RESERVED) {
      if (state.limiter instanceof RateLimiter) {
        // Its token, reserved for the instant the retry was to start, is the attempt's from now:
        // given back after this, the call's permit is a whole token's.
        ((RateLimiter) state.limiter).takeAhead(state.engine.clock().nanoTime(), this);
      }
      // Reserved at the retry's decision (reserveRetryPermit), its wait in the retry's delay: only
      // a 429 pause that began since holds the retry still, as after any wait for a permit. The
      // wait for that pause is the attempt's first for its permit when the reservation's was all
      // within the backoff (no RATE_LIMITED event told): it is told, as it was when the retry asked
      // after its backoff.
      return afterWait(reserved == RESERVED_WITHIN_BACKOFF);
    }
    if (breakerRefusesNow()) {
      return 0; // the breaker's refusal at once (step 2), not after a wait for a permit
    }
    try {
      return reserve(true, -1);
    } finally {
      tellQueued();
    }
  }

  /** {@link #takeReservedPermit}: none reserved at the decision. */
  private static final int NOT_RESERVED = 0;

  /** {@link #takeReservedPermit}: reserved, due within the backoff (no wait event told). */
  private static final int RESERVED_WITHIN_BACKOFF = 1;

  /** {@link #takeReservedPermit}: reserved, due past the backoff (its wait event told). */
  private static final int RESERVED_PAST_BACKOFF = 2;

  /** Once, whether {@link #reserveRetryPermit} holds the next attempt's permit already, and how. */
  private synchronized int takeReservedPermit() {
    if (extras == null || !extras.permitReserved) {
      return NOT_RESERVED;
    }
    extras.permitReserved = false;
    return extras.permitWaitTold ? RESERVED_PAST_BACKOFF : RESERVED_WITHIN_BACKOFF;
  }

  /**
   * Step 1 for the retry just decided on a response, asked at the decision by an adapter that
   * releases the response there, before its wait (java.net.http decides on the head and reads the
   * body away for the connection's sake; the synchronous loops, for a response they can neither
   * keep through the wait nor copy): the retry's permit is reserved now, while the response can
   * still go to the caller, so that a refusal ends the call with that response itself, whatever its
   * body's size, as the synchronous loops end it by asking before they release ({@link
   * #keepThroughWait}). Asked after the wait instead, a refusal found the response gone and ended
   * the call with {@link RateLimitedException}, where without the agent the application had the
   * response.
   *
   * <p>The permit may come as late as it could have when asked after the backoff: the token's
   * allowance is {@code maxWait} plus the backoff that no pause in force covers. Granted, the
   * retry's delay becomes the longer of the backoff and the permit's wait (the decision's, as
   * {@link #onResponse} gives it again), and the next {@link #reservePermit} takes this permit,
   * looking only for a 429 pause begun meanwhile ({@link #reservePermitAfterWait}). A call that
   * ends before the retry starts (a cancel, a late wait, the breaker) gives it back once, as any
   * permit held for an attempt not made. Without a rate limit, in observe mode, or for no retry
   * decided: nothing reserved, the decision's delay.
   *
   * @return the retry's delay from now; or -1 when the rate limit refused the retry: the call is
   *     over ({@link #permitRefusedRetry}), and the caller gets the response
   */
  public long reserveRetryPermit() {
    return reserveRetryPermit(0);
  }

  /**
   * {@link #reserveRetryPermit()} asked {@code sinceDecisionNanos} after the decision (a copy read
   * the body in between, SyncRetryLoop): the backoff left from now is the one the token reserved
   * ahead must be due by, and the delay returned counts from now. Counted from the decision
   * instead, the token held was the one due a copy's time past the retry's start (another call then
   * took the one due before it: the rate exceeded), and the retry's delay counted from the decision
   * came out a copy's time longer than its backoff.
   */
  long reserveRetryPermit(long sinceDecisionNanos) {
    try {
      PermitLimiter limiter = state.limiter;
      return limiter == null || limiter instanceof RateLimiter
          ? reserveRetryPermitLocked(sinceDecisionNanos)
          : reserveSharedRetryPermit(sinceDecisionNanos);
    } finally {
      tellQueued();
    }
  }

  /**
   * {@link #reserveRetryPermitLocked} for a limit shared with other JVMs, whose {@code reserve} may
   * wait on its store: the lock is not held across it ({@link #reserveShared}).
   */
  private long reserveSharedRetryPermit(long sinceDecisionNanos) {
    long backoff;
    synchronized (this) {
      Decision d = decision;
      if (d == null || !d.retry()) {
        return 0;
      }
      backoff = Math.max(0, d.delayNanos() - sinceDecisionNanos);
      if (d.outcome() != Outcome.RESPONSE
          || state.observe
          || (flags & FINISHED) != 0
          || cancelledByCaller()
          || (extras != null && extras.permitReserved)) {
        return backoff;
      }
    }
    long wait;
    try {
      wait = reserve(true, backoff);
    } catch (RateLimitedException refused) {
      return -1;
    }
    // A permit due past the backoff made it the retry's delay (the decision's, as in the lock's
    // path); one due within it, or none taken (the call ended meanwhile), leaves the backoff.
    return Math.max(backoff, wait);
  }

  private synchronized long reserveRetryPermitLocked(long sinceDecisionNanos) {
    Decision d = decision;
    if (d == null || !d.retry()) {
      return 0;
    }
    long backoff = Math.max(0, d.delayNanos() - sinceDecisionNanos);
    if (d.outcome() != Outcome.RESPONSE
        || state.limiter == null
        || state.observe
        || (flags & FINISHED) != 0
        || cancelledByCaller()
        || (extras != null && extras.permitReserved)) {
      return backoff; // held already: asked once, its wait in the decision's delay
    }
    try {
      reserve(true, backoff);
    } catch (RateLimitedException refused) {
      return -1;
    }
    return decision == d ? backoff : decision.delayNanos();
  }

  /**
   * {@link #reservePermit()}; {@code firstLook}: false when the call already waits for this
   * attempt's permit ({@link #reservePermitAfterWait}), whose RATE_LIMITED wait event was told
   * then: one wait for the attempt's permit, one event, however long a 429 pause then makes it.
   */
  private long reserve(boolean firstLook, long backoffNanos) throws RateLimitedException {
    PermitLimiter limiter = state.limiter;
    if (limiter == null) {
      return 0; // without a rate limit there is nothing to guard: no lock
    }
    if (!(limiter instanceof RateLimiter)) {
      return reserveShared(firstLook, backoffNanos, limiter);
    }
    RateLimiter local = (RateLimiter) limiter;
    synchronized (this) {
      long now = state.engine.clock().nanoTime();
      startNanos(now);
      long maxWait = state.policy.rateLimit().maxWait().toNanos();
      long remaining = bounds().remainingNanos(now);
      // A token that comes after the deadline is no use: the call's whole time would be spent. A
      // retry's must come before it, as the retry must start before it (CallBounds.pastDeadline):
      // at the deadline, the retry would have no time left (attemptTimeoutNanos) and no chance.
      long left = attempt == 0 ? remaining : remaining - 1;
      long wait;
      try {
        if ((attempt > 0 || !firstLook) && state.limiterDropped()) {
          state.engine.pauseDroppedBucket(state, now);
        }
        long allowance = allowance(maxWait, backoffNanos, local, now);
        if (backoffNanos > 0) {
          // The token due by the retry's start, not the next one: those before it serve others.
          wait = local.reserveAhead(now, backoffNanos, Math.min(allowance, left), left, this);
        } else {
          // Whose: given back (permitBack) while no permit was taken after it, it goes back whole.
          wait = local.reserve(now, Math.min(allowance, left), left, this);
        }
      } catch (RuntimeException | LinkageError | StackOverflowError bug) {
        return limiterFailed(bug);
      }
      return permitGiven(
          firstLook,
          backoffNanos,
          wait,
          now,
          remaining,
          maxWait,
          wait == PermitLimiter.REJECTED ? local.pauseRemainingNanos(now) : 0);
    }
  }

  /**
   * {@link #reserve} from a limit shared with other JVMs (a fleet's, in Redis): its {@code reserve}
   * may wait on its store (a connection from its pool, a connect, the reply), so the call's lock is
   * not held across it. Held, a slow store held up every thread that touched the call (its cancel,
   * its client's callbacks), and on JDK 21 to 23 a virtual thread blocked inside {@code
   * synchronized} pinned its carrier: a slow Redis stalled the application's other virtual threads.
   * The inputs are read under the lock, the permit asked without it, and the answer applied under
   * it again. A call that ended meanwhile (cancelled, completed, given up) holds nothing of a
   * permit granted then: a shared limit cannot take it back, so it is spent (as {@link #permitBack}
   * counts one), held by no flag that the end already cleared, and no wait event follows the end
   * told; its wait is returned as granted, so that nothing the adapter still sends goes before it.
   * A refusal then has no say: no event follows the end, nothing is thrown in place of the cancel.
   */
  private long reserveShared(boolean firstLook, long backoffNanos, PermitLimiter limiter)
      throws RateLimitedException {
    long now;
    long maxWait;
    long remaining;
    long left;
    synchronized (this) {
      now = state.engine.clock().nanoTime();
      startNanos(now);
      maxWait = state.policy.rateLimit().maxWait().toNanos();
      remaining = bounds().remainingNanos(now);
      left = attempt == 0 ? remaining : remaining - 1; // as in reserve
    }
    long wait;
    long pauseLeft;
    try {
      long allowance = allowance(maxWait, backoffNanos, limiter, now);
      // On a thread of many calls' work (the scheduler, a client's I/O thread) a shared
      // limit must not wait on its store for this call alone: the others' work would wait.
      wait = limiter.reserve(now, Math.min(allowance, left), left, !SharedThreads.here());
      pauseLeft = wait == PermitLimiter.REJECTED ? limiter.pauseRemainingNanos(now) : 0;
    } catch (RuntimeException | LinkageError | StackOverflowError bug) {
      synchronized (this) {
        return limiterFailed(bug);
      }
    }
    synchronized (this) {
      if ((flags & FINISHED) != 0) {
        // Ended meanwhile (a cancel, told already): a permit granted is spent, held by nobody; a
        // refusal has no say, as a cancelled call goes to its attempt's end (no RATE_LIMITED event
        // after the end, no second finish, no RateLimitedException in place of the cancel).
        return state.observe || wait == PermitLimiter.REJECTED ? 0 : wait;
      }
      if (wait != PermitLimiter.REJECTED
          && backoffNanos >= 0
          && (decision == null || !decision.retry() || (extras != null && extras.permitReserved))) {
        // The retry it was for is no longer to come (or holds a permit already): this one is
        // spent, held by nobody.
        return state.observe ? 0 : wait;
      }
      return permitGiven(firstLook, backoffNanos, wait, now, remaining, maxWait, pauseLeft);
    }
  }

  /**
   * The allowance for a permit's wait: {@code maxWait}, and for one reserved at a retry's decision
   * ({@link #reserveRetryPermit}) the backoff too, less what a pause in force covers already: a
   * token due during it is one the retry would be given after it.
   */
  private static long allowance(long maxWait, long backoffNanos, PermitLimiter limiter, long now) {
    if (backoffNanos <= 0) {
      return maxWait;
    }
    long ahead = Math.max(0, backoffNanos - limiter.pauseRemainingNanos(now));
    return maxWait > Long.MAX_VALUE - ahead ? Long.MAX_VALUE : maxWait + ahead;
  }

  /**
   * The limiter's own bug (a fleet limit's store client, say) never reaches the caller: it threw
   * out of the call, or out of an asynchronous call's retry task, whose future then never
   * completed. The attempt goes as without the agent; no permit is held to give back. Under the
   * lock.
   */
  private long limiterFailed(Throwable bug) {
    state.engine.internalError(
        "taking a rate-limit permit", bug, "the attempt goes without waiting for a permit");
    return 0;
  }

  /**
   * Applies the limiter's answer {@code wait} to the call, under the lock: a refusal ends it, a
   * permit is held for the next attempt. {@code pauseLeft}: the limiter's pause at {@code now}, for
   * a refusal's message.
   */
  private long permitGiven(
      boolean firstLook,
      long backoffNanos,
      long wait,
      long now,
      long remaining,
      long maxWait,
      long pauseLeft)
      throws RateLimitedException {
    if (wait == PermitLimiter.REJECTED) {
      if (wants(RetryEvent.Type.RATE_LIMITED, attempt)) {
        queue(RetryEvent.rateLimitRejected(this));
      }
      if (state.observe) {
        return 0;
      }
      // A retry refused is a retry not made: the call ends with the attempt before it, as if not
      // retried (permitRefusedRetry), as when the retry could not start before the deadline.
      forgoRefusedRetry();
      finish(AttemptResult.none(), GiveUpReason.RATE_LIMITED, now);
      throw CallExtras.withEarlier(
          extras, RateLimitedException.noPermit(state.target, remaining, maxWait, pauseLeft));
    }
    permitTaken();
    long beyond = wait;
    if (backoffNanos >= 0) {
      // The retry waits for its backoff and its permit at once; the next reservePermit takes it.
      extras().permitReserved = true;
      beyond = wait - backoffNanos;
      extras.permitWaitTold = beyond > 0;
      if (beyond > 0) {
        decision = Decision.retryAfter(wait, AttemptResult.response(decision.status()));
      }
    }
    if (beyond > 0 && firstLook && wants(RetryEvent.Type.RATE_LIMITED, attempt)) {
      queue(RetryEvent.rateLimitWait(this, beyond));
    }
    return state.observe ? 0 : wait;
  }

  /**
   * Step 1 again, once the wait {@link #reservePermit()} (or this) asked for is over, before the
   * attempt: a 429 pause of the host that began during the wait holds this attempt too. Then the
   * permit goes back (a fleet's stays spent) and the call asks for one as a caller arriving during
   * the pause does: it waits for the pause and a permit after it ({@code maxWait} counted from the
   * pause's end), or, when that would take it past the deadline, ends with {@link
   * RateLimitedException}. Without a pause: 0, at the cost of a look at the limiter's pause flag.
   * The longer wait tells listeners no second RATE_LIMITED event: the attempt waits for its permit
   * once (its one event, told by {@link #reservePermit()}, has the wait as known then); a refusal
   * is told as {@link #reservePermit()} tells one.
   *
   * @return nanoseconds to wait before the attempt (0 = go now); then call this again
   * @throws RateLimitedException as {@link #reservePermit()}; the call is over
   */
  public long reservePermitAfterWait() throws RateLimitedException {
    return afterWait(false);
  }

  /**
   * {@link #reservePermitAfterWait()}; {@code firstLook}: the attempt has not waited for its permit
   * yet (a permit reserved at the retry's decision, due within its backoff), so a wait for a pause
   * is its one RATE_LIMITED wait event ({@link #reserve}).
   */
  private long afterWait(boolean firstLook) throws RateLimitedException {
    PermitLimiter limiter = state.limiter;
    if (limiter == null || state.observe) {
      return 0; // observe mode never waits: nothing to look at again
    }
    long now = state.engine.clock().nanoTime();
    long pause;
    try {
      // This JVM's bucket looks at its flag only; a shared limit may ask its store, within the
      // time the call has left (the deadline the wait ended before).
      if (limiter instanceof RateLimiter) {
        if (state.limiterDropped()) {
          state.engine.pauseDroppedBucket(state, now);
        }
        pause = limiter.pauseRemainingNanos(now);
      } else {
        pause = limiter.pauseAfterWaitNanos(now, lookBudget(now), !SharedThreads.here());
      }
    } catch (RuntimeException | LinkageError | StackOverflowError bug) {
      state.engine.internalError(
          "looking at a rate-limit pause", bug, "the attempt goes without waiting for it");
      return 0;
    }
    if (pause <= 0) {
      return 0;
    }
    synchronized (this) {
      permitBack(now);
    }
    if (breakerRefusesNow()) {
      return 0; // opened during the wait: refused at once, not after the pause
    }
    try {
      return reserve(firstLook, -1);
    } finally {
      tellQueued();
    }
  }

  /**
   * Before a wait for a rate-limit permit or a 429 pause: true when the breaker is open and not yet
   * due for its trials, or half-open with every trial out ({@link CircuitBreaker#refusesAt}), so
   * the attempt's step 2 ({@link #acquireBreaker}, {@link #beginAttempt}) will refuse it. No permit
   * is then taken and none waited for: the breaker's refusal comes at once, as the contract says
   * ("an open breaker fails a call at once"), where it came after the wait (a token's, up to {@code
   * maxWait}; a pause's, up to {@code retryAfter.max}), or the caller got the rate limit's
   * exception in its place. Step 2 refuses without asking the breaker again ({@link
   * #refusedBeforePermit}): its time coming up in between must not let a trial go without a permit.
   * The breaker is only looked at: a half-open trial is never taken here, and so never held through
   * a wait. Closed (or none, or no rate limit, or observe mode, which never waits): false, at the
   * cost of one volatile read.
   */
  private boolean breakerRefusesNow() {
    CircuitBreaker breaker = state.breaker;
    if (breaker == null
        || state.limiter == null
        || state.observe
        || breaker.closedPermit() != CircuitBreaker.REJECTED) {
      return false;
    }
    return breakerRefusesNowLocked(breaker);
  }

  private synchronized boolean breakerRefusesNowLocked(CircuitBreaker breaker) {
    if ((flags & FINISHED) != 0 || cancelledByCaller()) {
      return false; // the attempt is the client's to fail, as for any cancelled call
    }
    try {
      if (!breaker.refusesAt(state.engine.clock().nanoTime())) {
        return false;
      }
    } catch (RuntimeException | LinkageError | StackOverflowError bug) {
      // As takeBreaker: our own failure asking the breaker never reaches the caller.
      state.engine.internalError(
          "looking at the circuit breaker", bug, "the call waits for its permit as before");
      return false;
    }
    breakerRefusesBeforePermit();
    return true;
  }

  /** The retry decided is not made: the rate limit gave it no permit ({@link #reserve}). */
  private void forgoRefusedRetry() {
    if (attempt > 0 && decision != null && decision.retry() && extras != null) {
      forgo(
          decision.outcome() == Outcome.RESPONSE ? null : extras.latestFailure(),
          GiveUpReason.RATE_LIMITED);
    }
  }

  /**
   * Asked by the adapter that caught the {@link RateLimitedException} of {@link #reservePermit} or
   * {@link #reservePermitAfterWait}: true when the permit refused was a retry's. Without the agent
   * the caller has the attempt before it; the engine's exception in its place broke the first rule.
   * So the retry is not made, as one that could not start before the deadline ({@link
   * #retryTooLate}): the call ended with that attempt's outcome, given up as {@link
   * GiveUpReason#RATE_LIMITED}, the retry back to the budget, and the adapter gives the caller the
   * response it kept, or else {@link #lateRetryFailure()}. False for the first attempt's refusal:
   * the caller gets the exception, as {@code rateLimit.maxWait} says.
   */
  public synchronized boolean permitRefusedRetry() {
    return (flags & FINISHED) != 0
        && decision != null
        && !decision.retry()
        && decision.reason() == GiveUpReason.RATE_LIMITED;
  }

  /** The time the call has left at {@code now}, for a shared limit's look after a wait. */
  private synchronized long lookBudget(long now) {
    return bounds().remainingNanos(now);
  }

  /**
   * Step 2, the circuit breaker.
   *
   * @throws CircuitBreakerOpenException when the breaker is open; the call is over
   */
  public void acquireBreaker() throws CircuitBreakerOpenException {
    try {
      acquireBreakerLocked();
    } finally {
      tellQueued(true);
    }
  }

  private synchronized void acquireBreakerLocked() throws CircuitBreakerOpenException {
    takeBreaker();
  }

  private void takeBreaker() throws CircuitBreakerOpenException {
    long now;
    CircuitBreakerOpenException e;
    try {
      // Refused before its permit (breakerRefusesNow): not asked again, no trial taken.
      boolean refused = refusedBeforePermit();
      if (!refused && acquireWhileClosed()) {
        return;
      }
      now = state.engine.clock().nanoTime();
      if (!refused && acquire(now)) {
        return;
      }
      e = breaker().rejection(now, state.engine.clock().wallMillis());
    } catch (RuntimeException | LinkageError | StackOverflowError bug) {
      // Our own failure asking the breaker (its clock, its bug) never reaches the caller: before,
      // it threw out of beginAttempt, outside a synchronous loop's guard. The attempt goes as
      // without the agent's breaker; a permit taken (a half-open trial) goes back at once.
      withoutBreaker("asking the circuit breaker for a permit", bug);
      return;
    }
    if (wants(RetryEvent.Type.BREAKER_REJECTED, attempt)) {
      queue(RetryEvent.breakerRejected(this, e));
    }
    if (state.observe) {
      return;
    }
    finish(AttemptResult.refused(e), GiveUpReason.CIRCUIT_OPEN, now);
    throw CallExtras.withEarlier(extras, e);
  }

  /**
   * The client repeated the attempt's request on its own after {@code status} (OkHttp: a 408, a 503
   * with {@code Retry-After: 0}): an attempt (so {@code maxAttempts} bounds what the server sees),
   * a retry for the budget, a breaker failure when the status is one. Call before {@link
   * #onResponse}.
   */
  public void clientRepeated(int status) {
    try {
      clientRepeatedLocked(status);
    } finally {
      tellQueued();
    }
  }

  private synchronized void clientRepeatedLocked(int status) {
    countClientResend(state.policy.circuitBreaker().failOnStatuses().contains(status), false);
  }

  /**
   * As {@link #clientRepeated}, after a transport failure. {@code governed}: the adapter let the
   * client resend only while an attempt was left (HttpURLConnection's), as if it had asked.
   */
  public void clientResentAfterFailure(boolean governed) {
    try {
      clientResentAfterFailureLocked(governed);
    } finally {
      tellQueued();
    }
  }

  private synchronized void clientResentAfterFailureLocked(boolean governed) {
    countClientResend(state.policy.circuitBreaker().failOnTransport(), governed);
  }

  /**
   * As {@link #clientResentAfterFailure}, after a failure of the application's own making (its
   * request body's source failed while the client wrote it): an attempt and a retry for the budget,
   * never the host's failure for the breaker.
   */
  public void clientResentAfterApplicationFailure() {
    try {
      clientResentAfterApplicationFailureLocked();
    } finally {
      tellQueued();
    }
  }

  private synchronized void clientResentAfterApplicationFailureLocked() {
    countClientResend(false, false);
  }

  private void countClientResend(boolean breakerFailure, boolean governed) {
    if (decision != null || state.passThrough) {
      return;
    }
    long now;
    try {
      now = state.engine.clock().nanoTime();
    } catch (RuntimeException | LinkageError | StackOverflowError bug) {
      // Told from inside the attempt (a client's interceptor, its retry handler): our own failure
      // there reached the caller as the attempt's. The resend goes uncounted.
      state.engine.internalError(
          "counting a request the client sent again", bug, "the resend is not counted");
      return;
    }
    attempt++;
    extras().clientResends++;
    if (!governed) {
      extras.resends().made();
    }
    recordResend(breakerFailure, now - attemptStartNanos, now);
    // The server saw one more request: the attempt counters (metrics) count what reached it.
    queue(state.engine.listeners().countAttempt(state.counters, this, attempt, toCount()));
  }

  /**
   * Steps 2 and 3 under one lock: {@link #acquireBreaker()}, then {@link #startAttempt()}.
   *
   * @return the attempt's 1-based number
   * @throws CircuitBreakerOpenException when the breaker is open; the call is over
   */
  public int beginAttempt() throws CircuitBreakerOpenException {
    try {
      return beginAttemptLocked();
    } finally {
      tellQueued(true);
    }
  }

  private synchronized int beginAttemptLocked() throws CircuitBreakerOpenException {
    takeBreaker(); // the lock once, not again for each step
    return start();
  }

  /** Step 3: an attempt starts now. Returns its 1-based number. */
  public int startAttempt() {
    try {
      return startAttemptLocked();
    } finally {
      tellQueued();
    }
  }

  private synchronized int startAttemptLocked() {
    return start();
  }

  private int start() {
    attempt++;
    decision = null; // first: the attempt never answers with the one before's decision
    try {
      attemptStartNanos = state.engine.clock().nanoTime();
      startNanos(attemptStartNanos);
      if (extras != null) {
        extras.attemptStarted(attempt > 1);
      }
      if (!cancelledByCaller()) {
        // A retry started after the caller cancelled sends nothing: its budget goes back at the
        // end.
        attemptStarted();
      }
      if (attempt == 1) {
        callStarted(attemptStartNanos);
      }
      queue(state.engine.listeners().countAttempt(state.counters, this, attempt, toCount()));
    } catch (RuntimeException | LinkageError | StackOverflowError bug) {
      // Our own failure as the attempt starts (the clock, the budget) never reaches the caller:
      // before, it threw out of beginAttempt, and a half-open breaker kept the trial permit just
      // taken, never given back (its host refused until the trials' time ran out, and openFor
      // more). The attempt goes; its outcome, timed from an unknown start, is not the breaker's.
      withoutBreaker("starting an attempt", bug);
    }
    return attempt;
  }

  /**
   * Our own {@code bug} while the attempt started ({@code where}): said once per cause, and the
   * attempt goes without the breaker, the permit it may hold given back (a half-open trial too).
   */
  private void withoutBreaker(String where, Throwable bug) {
    state.engine.internalError(where, bug, "the attempt goes without the circuit breaker");
    release();
  }

  /**
   * Step 4 for a response: classify, record, decide. Idempotent per attempt.
   *
   * @param retryAfter the response's {@code Retry-After} header, or null
   */
  public Decision onResponse(int status, String retryAfter) {
    try {
      return onResponseLocked(status, retryAfter);
    } finally {
      tellQueued();
    }
  }

  private synchronized Decision onResponseLocked(int status, String retryAfter) {
    if (decision != null) {
      return decision.again(extras == null ? 0 : extras.previousDelayNanos);
    }
    if ((flags & FINISHED) != 0) {
      return endedMeanwhile(AttemptResult.response(status));
    }
    try {
      TestFaults.decide();
      // Without Retry-After, extras or a status it retries, no rule needs the time: a call that
      // succeeds at once reads the clock once (the breaker reads it if it must).
      long now =
          retryAfter == null && extras == null && !state.retry.retryOnStatuses().contains(status)
              ? attemptStartNanos // not used
              : state.engine.clock().nanoTime();
      long askedNanos =
          retryAfter == null
              ? RetryAfter.NONE
              : RetryAfter.parseNanos(retryAfter, state.engine.clock().wallMillis());
      recordStatus(status, askedNanos, attemptStartNanos, now, state.engine.clock());
      long retryAfterNanos = state.retry.retryAfterEnabled() ? askedNanos : RetryAfter.NONE;
      decision = decide(AttemptResult.response(status), retryAfterNanos, now);
    } catch (RuntimeException | LinkageError | StackOverflowError bug) {
      decision = failedToDecide(AttemptResult.response(status), bug);
    }
    return decision;
  }

  /** Step 4 for an exception: classify, record, decide. Idempotent per attempt. */
  public Decision onFailure(Throwable error) {
    try {
      return onFailureLocked(error);
    } finally {
      tellQueued();
    }
  }

  private synchronized Decision onFailureLocked(Throwable error) {
    if (decision != null) {
      return decision.again(extras == null ? 0 : extras.previousDelayNanos);
    }
    if (extras != null && causedBy(error, extras.applicationFailure)) {
      // The application's own code failed the attempt (applicationFailed), not the host: the call
      // ends as the application's own ending (as HttpURLConnection's body of the wrong length), not
      // as the host's failure, and is never retried. Unless the host got a whole request first,
      // its attempt counts as not sent (the client cut the request: the rule at
      // endedByApplication): its rate-limit permit and the retry it was (if one) go back. The
      // breaker's permit (a half-open trial too) is released without an outcome. The failure goes
      // on to the caller as it is.
      if (!extras.applicationSentWhole) {
        attemptNotSent();
      }
      endedByApplication(error);
      decision = Decision.done(AttemptResult.applications(error), null);
      return decision;
    }
    if ((flags & FINISHED) != 0) {
      return endedMeanwhile(AttemptResult.thrown(error));
    }
    try {
      TestFaults.decide();
      boolean failOnTransport = state.policy.circuitBreaker().failOnTransport();
      ClientResends judge = extras == null ? null : extras.resendsIfAny();
      int resent = (judge == null ? 0 : judge.in(error)) + ClientResends.told(request(), error);
      for (int i = 0; i < resent; i++) {
        countClientResend(failOnTransport, false);
      }
      long now = state.engine.clock().nanoTime();
      AttemptResult result = sentOrNot(AttemptResult.thrown(error));
      if (result.outcome() == Outcome.CANCELLED
          || result.outcome() == Outcome.POOL_TIMEOUT
          || (extras != null && extras.abortFailsAttempt && cancelledByCaller())
          || !(error instanceof java.io.IOException)) {
        // A failure the caller's abort caused says nothing about the host (abortedWhen); nor does
        // the client's own pool that had no connection in time (nothing reached the host); nor one
        // that is no I/O failure (an application's OkHttp interceptor after the agent's
        // throwing IllegalStateException, a client's bug): the host answered nothing. Recorded,
        // it was the host's success, and as a half-open breaker's trial it closed the breaker
        // without one request having succeeded: the permit goes back without an outcome.
        release();
      } else {
        record(failOnTransport, attemptStartNanos, state.engine.clock());
      }
      decision = decide(result, RetryAfter.NONE, now);
    } catch (RuntimeException | LinkageError | StackOverflowError bug) {
      decision = failedToDecide(AttemptResult.thrown(error), bug);
    }
    if (decision.retry() || extras != null) {
      extras().earlier().attempted(error, decision); // a first attempt that ends the call: nothing
    }
    return decision;
  }

  /**
   * An asynchronous adapter waits now for the retry decided, its delay in hand: until the next
   * attempt, the call keeps the decision without it ({@link Decision#kept}; issue 13).
   */
  public synchronized void waitsToRetry() {
    if (decision != null) {
      decision = decision.kept();
    }
  }

  /**
   * The attempt's outcome came after the call ended without a decision about it: another thread
   * abandoned it meanwhile (the caller's cancel, AsyncRetryLoop's or OkHttp's, racing the attempt's
   * completion), which gave the breaker's permit back and told the call's end. The outcome goes on
   * as it is, judged no more: a retry decided now would take from the budget after the call gave
   * back what it held (nobody would return it, and the host's budget would look spent by retries
   * never made), and a retry would be told that is never made.
   */
  private Decision endedMeanwhile(AttemptResult result) {
    release();
    decision = Decision.done(result, null);
    return decision;
  }

  /** The engine failed while deciding: said once per cause; the call ends with the outcome. */
  private Decision failedToDecide(AttemptResult result, Throwable bug) {
    state.engine.internalError(
        "deciding after an attempt", bug, "the call ends with that attempt's outcome, not retried");
    try {
      finish(result, null, state.engine.clock().nanoTime());
    } catch (RuntimeException | LinkageError | StackOverflowError again) {
      flags |= FINISHED;
    }
    return Decision.done(result, null);
  }

  /**
   * The call ended outside the normal steps: the caller cancelled it, or the thread was interrupted
   * while waiting. Releases what the attempt held; safe to call more than once.
   */
  public void onAbandoned() {
    try {
      onAbandonedLocked();
    } finally {
      tellQueued();
    }
  }

  private synchronized void onAbandonedLocked() {
    release();
    if ((flags & FINISHED) == 0) {
      long now = state.engine.clock().nanoTime();
      boolean timedOut = extras != null && extras.callerTimedOut(now);
      finish(
          AttemptResult.cancelled(),
          timedOut ? GiveUpReason.CALL_TIMEOUT : GiveUpReason.CANCELLED,
          now);
    }
  }

  /**
   * The retry just decided is not made, because the caller's thread was interrupted while the
   * attempt ran and the client let the attempt finish (Apache HttpClient's and {@code
   * HttpURLConnection}'s blocking I/O never looks at an interrupt; OkHttp and java.net.http do not
   * once the response's head is in). Without the agent the caller gets that attempt's outcome with
   * its interrupt flag still set; a wait would end at once and lose the outcome for an {@code
   * InterruptedException}. The call ends with the outcome, given up as {@link
   * GiveUpReason#CANCELLED} (the caller interrupted it); the retry goes back to the budget. Safe to
   * call more than once.
   *
   * @param failure the attempt's failure, or null when it ended with a response
   */
  public void retryForgone(Throwable failure) {
    try {
      retryForgoneLocked(failure);
    } finally {
      tellQueued();
    }
  }

  private synchronized void retryForgoneLocked(Throwable failure) {
    forgo(failure, GiveUpReason.CANCELLED);
  }

  /**
   * The retry just decided is not made, because the adapter could not schedule its wait: the
   * engine's {@link Scheduler} refused it (shut down, or unable to start a thread). Made at once,
   * without its backoff, the retry (and each one after it) would reach the host as fast as it
   * fails; without the agent the caller has that attempt's outcome. So the call ends with it, as
   * when deciding fails: no give-up reason (the engine's own failure, which the adapter says once
   * per cause), the retry back to the budget. Safe to call more than once.
   *
   * @param failure the attempt's failure, or null when it ended with a response
   */
  public void retryNotScheduled(Throwable failure) {
    try {
      retryNotScheduledLocked(failure);
    } finally {
      tellQueued();
    }
  }

  private synchronized void retryNotScheduledLocked(Throwable failure) {
    forgo(failure, null);
  }

  /**
   * The wait for the rate-limit permit just reserved ({@link #reservePermit}) could not be
   * scheduled: the engine's {@link Scheduler} refused it (shut down, or unable to start a thread).
   * Made at once, the attempt would go over the host's limit, and so would every call while the
   * scheduler refuses: the limit would stop limiting the host it protects. So the call ends as one
   * the limit gives no permit: told as rate-limited, the permit back to the bucket, a retry decided
   * back to the budget. Returns the exception the caller gets for a first attempt (the adapter says
   * the scheduler's refusal once per cause); a retry's ends the call with the attempt before it
   * ({@link #permitRefusedRetry}), as a retry the limit refuses does. Safe to call more than once.
   */
  public RateLimitedException permitWaitNotScheduled() {
    try {
      return permitWaitNotScheduledLocked();
    } finally {
      tellQueued();
    }
  }

  private synchronized RateLimitedException permitWaitNotScheduledLocked() {
    // A retry's, as one the limit refuses: not made, the call ends with the attempt before it.
    forgoRefusedRetry();
    finish(AttemptResult.none(), GiveUpReason.RATE_LIMITED, state.engine.clock().nanoTime());
    return CallExtras.withEarlier(
        extras,
        new RateLimitedException(
            state.target,
            "the wait for a permit could not be scheduled (the agent's scheduler"
                + " refused it), and the attempt would have gone over the limit"));
  }

  /**
   * Asked by the loop after a retry's wait, before anything else of the retry: true when the wait
   * ended at or after the deadline (a JVM paused during it, a scheduler or a sleep that ran late),
   * where the retry would have no time left ({@link #attemptTimeoutNanos}: 1 ns) and no chance: the
   * host would get a request nobody waits for, the caller a timeout it never had without the agent.
   * The retry is not made: the call ends with the attempt's outcome, as if the policy had not
   * retried it, given up as {@link GiveUpReason#DEADLINE}, the retry back to the budget. The
   * adapter then gives the caller the response it kept ({@link #waitEndsNearDeadline}), or else
   * {@link #lateRetryFailure()}. False, and nothing changes, when the retry is still in time, or
   * the caller gave up during the wait (the attempt then fails as the client fails a cancelled
   * call). True too, and the retry not made, when a reload during the wait made the rule for
   * requests not safe to repeat stricter and the attempt failed with an exception ({@link
   * #refusedSinceReload}): given up as {@link GiveUpReason#NOT_IDEMPOTENT}, the caller gets that
   * failure, as if not retried. True too when the adapter can no longer send the body ({@link
   * #bodyStillSendable}): given up as {@link GiveUpReason#BODY_NOT_REPLAYABLE}, the call ends with
   * the attempt's outcome as after a late wait. An adapter that is about to let go of a retried
   * response it cannot give back may ask it then too, before the wait (java.net.http, at the head
   * of a response whose declared body is over {@link ResponseAccess#GIVE_BACK_LIMIT}), so that a
   * body found unsendable ends the call with that response itself.
   */
  public boolean retryTooLate() {
    try {
      return retryTooLateLocked();
    } finally {
      tellQueued();
    }
  }

  private synchronized boolean retryTooLateLocked() {
    if ((flags & FINISHED) != 0 || decision == null || !decision.retry() || extras == null) {
      return false;
    }
    if (decision.outcome() != Outcome.RESPONSE
        && !cancelledByCaller()
        && refusedSinceReload(
            extras.reachedServer && decision.outcome() == Outcome.CONNECT_FAILURE
                ? Outcome.RESET // as sentOrNot judged it
                : decision.outcome())) {
      // A reload during the wait made the rule for unsafe requests stricter: the retry is not
      // made, and the caller gets the attempt's failure, as the policy now in force gives it. Not
      // after a response: it may have been released for the retry, and the caller would get an
      // IOException where it had a status (the decision before the wait judged it).
      forgo(extras.latestFailure(), GiveUpReason.NOT_IDEMPOTENT);
      return true;
    }
    long now = state.engine.clock().nanoTime();
    if (cancelledByCaller()) {
      return false;
    }
    Outcome outcome = decision.outcome();
    if (bounds().pastDeadline(now)) {
      forgo(outcome == Outcome.RESPONSE ? null : extras.latestFailure(), GiveUpReason.DEADLINE);
      return true;
    }
    if (!bodyStillSendable()) {
      // The body was found, after the retry was decided, not to be whole: the retry is not made,
      // and the call ends with the attempt's outcome, as without the agent. Before, the retry's
      // attempt threw an exception of ours in place of that response or failure.
      forgo(
          outcome == Outcome.RESPONSE ? null : extras.latestFailure(),
          GiveUpReason.BODY_NOT_REPLAYABLE);
      return true;
    }
    return false;
  }

  /**
   * Whether {@link #retryTooLate} would now end the call at its deadline ({@link
   * GiveUpReason#DEADLINE}), without ending it: an adapter that tells the call's end on another
   * thread later (OkHttp's dispatcher) asks {@link #retryTooLate} there, just before the caller
   * hears of it, so that a cancel that comes meanwhile, which the caller then hears, is what the
   * call's end says ({@link #onAbandoned}), not the deadline.
   */
  public synchronized boolean retryPastDeadline() {
    return (flags & FINISHED) == 0
        && decision != null
        && decision.retry()
        && extras != null
        && !cancelledByCaller()
        && bounds().pastDeadline(state.engine.clock().nanoTime());
  }

  /**
   * Asked under the call's lock once a retry's wait is over ({@link #retryTooLate}): false when the
   * adapter can no longer send the request's body (its source, teed whole when the retry was
   * decided, failed since); true fixes the body for the retry. True by default. It must not throw.
   */
  protected boolean bodyStillSendable() {
    return true;
  }

  /**
   * Asked by {@link AsyncRetryLoop} as a rate-limit wait ends, before the attempt: true when the
   * adapter ends the call there, with the attempt before the wait as {@link #retryTooLate} ends it
   * (it calls {@link #retryForgone} first, for a retry's wait only: a first attempt has no outcome
   * to end with); the loop then gives back the response kept for the retry ({@link
   * #keepToGiveBack}), or else completes with {@link #lateRetryFailure}. False by default: the
   * attempt goes on. It must not throw.
   */
  protected boolean endsAfterPermitWait() {
    return false;
  }

  /**
   * Whether a loop that can keep the response it retries unreleased through the wait should: when
   * the retry, {@code delayNanos} from now, would start within {@link
   * CallBounds#NEAR_DEADLINE_NANOS} of the deadline, a wait that ends late would end the call with
   * it ({@link #retryTooLate}). Further from the deadline the response is released first, so its
   * connection serves the host's other calls during the wait; so too before a wait longer than that
   * margin, whatever the deadline: a kept response holds its connection (an Apache pool's lease,
   * which other threads of the application may be queued for) through the wait, and a rare late
   * wait is not worth holding one for long. Asked on a retry's path only.
   */
  public synchronized boolean waitEndsNearDeadline(long delayNanos) {
    if (delayNanos > CallBounds.NEAR_DEADLINE_NANOS) {
      return false;
    }
    long at = state.engine.clock().nanoTime() + delayNanos;
    return bounds().pastDeadline(at + CallBounds.NEAR_DEADLINE_NANOS);
  }

  /**
   * Whether a loop that can keep the response it retries unreleased through the wait should: near
   * the deadline ({@link #waitEndsNearDeadline}), and before a wait no longer than {@link
   * CallBounds#NEAR_DEADLINE_NANOS} on a call the rate limit governs. The retry's permit is known
   * only after the wait, and a refused one ends the call with this response ({@link
   * #permitRefusedRetry}): released without a copy (a body over {@link
   * ResponseAccess#GIVE_BACK_LIMIT}, every {@code HttpURLConnection} response), the caller got the
   * rate limit's exception where it has the response without the agent. Unlike a late wait, a
   * refusal is common (a host failing under load, {@code maxWait} 0 by default), so the response is
   * kept even when a copy could be made: the loop asks for the permit first and releases it only
   * once the permit is granted. No longer than that margin, as near the deadline: a kept response
   * holds its connection (an Apache pool's lease). Asked on a retry's path only.
   */
  public boolean keepThroughWait(long delayNanos) {
    if (state.limiter != null && !state.observe && delayNanos <= CallBounds.NEAR_DEADLINE_NANOS) {
      return true;
    }
    return waitEndsNearDeadline(delayNanos);
  }

  /**
   * Keeps {@code copy} ({@link ResponseAccess#copyToGiveBack}'s, or null for none) through the
   * retry's wait, for {@link AsyncRetryLoop} to give the caller should the wait end past the
   * deadline ({@link #takeGiveBack}); in the call's extras, which its retry made: nothing on a call
   * not retried.
   */
  synchronized void keepToGiveBack(Object copy) {
    if (copy != null || extras != null) {
      extras().giveBack = copy;
    }
  }

  /** The copy {@link #keepToGiveBack} kept, or null; kept no more. */
  synchronized Object takeGiveBack() {
    if (extras == null) {
      return null;
    }
    Object copy = extras.giveBack;
    extras.giveBack = null;
    return copy;
  }

  /**
   * What a call that {@link #retryTooLate} (or {@link #permitRefusedRetry}) ends with when its
   * adapter holds no response: the attempt's failure as the client gave it (carrying the earlier
   * attempts'), or, when the attempt ended with a response that was released for the retry (it
   * cannot be given back), an {@code IOException} that says so, naming the method and target only:
   * for a retry the rate limit refused, its {@link RateLimitedException}.
   */
  public synchronized Throwable lateRetryFailure() {
    Throwable last = extras == null ? null : extras.latestFailure();
    if (decision != null && decision.outcome() != Outcome.RESPONSE && last != null) {
      return CallExtras.withEarlier(extras, last);
    }
    if (decision != null && decision.reason() == GiveUpReason.RATE_LIMITED) {
      // The rate limit's own exception, as a caller that catches it expects, saying why.
      return CallExtras.withEarlier(
          extras,
          new RateLimitedException(
              state.target,
              "no permit for the retry of "
                  + request().method()
                  + " after a "
                  + decision.status()
                  + ", whose response had been released for the retry"));
    }
    String after = decision == null ? "its response" : "a " + decision.status();
    if (decision != null && decision.reason() == GiveUpReason.BODY_NOT_REPLAYABLE) {
      return CallExtras.withEarlier(
          extras,
          new java.io.IOException(
              "retry-agent: the retry of "
                  + request().method()
                  + " "
                  + state.target
                  + " after "
                  + after
                  + " was not made: the request body's source failed after it was sent, so it"
                  + " cannot be sent again, and the response had been released for the retry"));
    }
    return CallExtras.withEarlier(
        extras,
        new java.io.IOException(
            "retry-agent: the wait to retry "
                + request().method()
                + " "
                + state.target
                + " after "
                + after
                + " ended past the call's deadline (the JVM or its scheduler held up), and the"
                + " response had been released for the retry"));
  }

  private void forgo(Throwable failure, GiveUpReason reason) {
    if ((flags & FINISHED) != 0 || decision == null || !decision.retry()) {
      return;
    }
    AttemptResult result =
        failure == null ? AttemptResult.response(decision.status()) : AttemptResult.thrown(failure);
    finish(result, reason, state.engine.clock().nanoTime());
    decision = Decision.done(result, reason);
  }

  /**
   * The call ends in the application's own failure, {@code failure} (its request body failed, or
   * wrote other than its declared length), not in the host's: as {@link #onAbandoned}, the
   * breaker's permit back without an outcome and nothing retried, but the give-up says so ({@link
   * GiveUpReason#APPLICATION_FAILED}) rather than that the caller cancelled. Safe to call more than
   * once.
   *
   * <p>The attempt's rate-limit permit, one rule for every client: it stays spent when the host may
   * have received a whole request it may act on, and goes back (with the retry the attempt was)
   * when nothing or only a cut request went out, which the adapter says first ({@link
   * #attemptNotSent}). OkHttp, {@code java.net.http} and {@code HttpURLConnection} cut a request
   * whose body failed or had the wrong length ({@link #onFailure} after {@link #applicationFailed}
   * gives it back), but for a body that reached its whole declared length before more was refused,
   * which the JDK's clients send whole (both {@code HttpURLConnection}'s and {@code
   * java.net.http}'s); Apache HttpCore 4.4 cuts every body whose entity failed, HttpCore 5 ends a
   * chunked one it began (the server reads a whole request) and cuts one of a declared length; an
   * entity shorter than its length leaves the server waiting for the rest, cut (internal.apache's
   * ExchangeLog says which).
   */
  public void endedByApplication(Throwable failure) {
    try {
      endedByApplicationLocked(failure);
    } finally {
      tellQueued();
    }
  }

  private synchronized void endedByApplicationLocked(Throwable failure) {
    endByApplication(AttemptResult.applications(failure));
  }

  /**
   * As {@link #endedByApplication}, when the host answered, with {@code status}, a request the
   * application's own code broke (an entity that wrote less than its declared length: the server
   * waited for the rest and gave up, 408, or refused it, 400): the answer is the host's reaction to
   * the application's mistake, not its outcome. The breaker hears nothing, nothing is retried, and
   * the response goes to the application as it came ({@link SyncRetryLoop} returns it without
   * deciding). Call before the attempt's response is returned to the loop.
   */
  public void endedByApplication(int status) {
    try {
      endedByApplicationLocked(status);
    } finally {
      tellQueued();
    }
  }

  private synchronized void endedByApplicationLocked(int status) {
    AttemptResult result = AttemptResult.applicationsAnswered(status);
    boolean ends = (flags & FINISHED) == 0;
    endByApplication(result);
    if (ends) {
      // The attempt's decision, made: onResponse gives it again (no retry, no error), so the loop
      // hands the response on as it came, with no lock of its own on every call's success path.
      decision = Decision.done(result, GiveUpReason.APPLICATION_FAILED);
    }
  }

  private void endByApplication(AttemptResult result) {
    release();
    if ((flags & FINISHED) == 0) {
      finish(result, GiveUpReason.APPLICATION_FAILED, state.engine.clock().nanoTime());
    }
  }

  /**
   * The attempt started last never reached the client's sending: the adapter ended it first, or the
   * client refused it (an enqueued OkHttp call's retry, still in the dispatcher's queue at the
   * call's deadline or when it was cancelled, or refused by its shut-down executor). As for a retry
   * decided and never started, its retry goes back to the budget, and the rate-limit permit it took
   * to the host's bucket, when the call ends ({@link #onAbandoned}): an attempt that sent nothing
   * must not hold back the host's other calls. Call before the call ends.
   */
  public synchronized void attemptNotSent() {
    if ((flags & FINISHED) == 0) {
      attemptNotMade(extras != null && extras.inRetry());
    }
  }

  /**
   * As {@link #attemptNotSent}, when the client refused the attempt started last before anything of
   * it went out because the caller's interrupt, cancel or shutdown came first ({@code
   * java.net.http}'s {@code send} on a thread already interrupted, OkHttp's call cancelled before
   * its request reached a connection or refused by its dispatcher's shut-down executor, HttpClient
   * 5's lease cancelled or interrupted): the server saw no request. A first attempt is then not
   * counted as one: the call ends with 0 attempts in the metrics, JMX, its log line and its dead
   * letter. (A later attempt was counted as it started, and stays counted.) Call before the call
   * ends.
   */
  public synchronized void attemptRefused() {
    if ((flags & FINISHED) == 0) {
      attemptNotMade(extras != null && extras.inRetry());
      if (attempt == 1) {
        extras().firstAttemptRefused = true;
      }
    }
  }

  /**
   * As {@link #attemptRefused}, for a retry the client refused before anything of it went out, once
   * it had begun ({@link #startAttempt}): OkHttp's dispatcher executor (the application's, shut
   * down or full) refused the retry's clone, or dropped it unrun at its {@code shutdownNow()}.
   * Without the agent the caller had the attempt before it: the call ends with that outcome, {@code
   * failure} (null: its response, {@code status}), as a retry forgone ({@link #retryForgone}),
   * given up as {@link GiveUpReason#CANCELLED} (the application shut its client down); its retry
   * goes back to the budget, its rate-limit permit to the bucket, and the breaker's permit (a
   * half-open trial) back without an outcome: the host never saw it. The retry's attempt, counted
   * as it started, stays counted, as {@link #attemptRefused} leaves a later attempt. Returns {@code
   * failure} carrying the earlier attempts' failures, as the call would have ended with it. Nothing
   * changes when the call ended already or the attempt started last is not a retry: {@code failure}
   * as it is.
   */
  public Throwable retryRefused(int status, Throwable failure) {
    try {
      return retryRefusedLocked(status, failure);
    } finally {
      tellQueued();
    }
  }

  private synchronized Throwable retryRefusedLocked(int status, Throwable failure) {
    if ((flags & FINISHED) != 0 || extras == null || !extras.inRetry()) {
      return failure;
    }
    attemptNotMade(true);
    AttemptResult result =
        failure == null ? AttemptResult.response(status) : AttemptResult.thrown(failure);
    finish(result, GiveUpReason.CANCELLED, state.engine.clock().nanoTime());
    decision = Decision.done(result, GiveUpReason.CANCELLED);
    return CallExtras.withEarlier(extras, failure);
  }

  /**
   * The attempt under way failed in the application's own code, with {@code failure}: its request
   * body failed to produce itself (an OkHttp {@code RequestBody} whose {@code writeTo} threw, not
   * the connection it wrote to; a {@code BodyPublisher} that signalled {@code onError}). When the
   * attempt then fails with {@code failure}, or with a failure it caused, {@link #onFailure} ends
   * the call as the application's mistake, not the host's failure: no breaker failure, no retry,
   * the attempt's rate-limit permit and retry budget given back (the client cut the request); the
   * caller gets the failure as the client gave it. Call from the body's own thread before the
   * client reports the failure.
   */
  public synchronized void applicationFailed(Throwable failure) {
    applicationFailed(failure, false);
  }

  /**
   * As {@link #applicationFailed(Throwable)}; {@code hostGotWholeRequest}: the client sent a whole
   * request before the failure (the JDK's {@code java.net.http} sends a body that reached its
   * declared length before it refuses the buffer past it), which the host may act on, so the
   * attempt's rate-limit permit stays spent (the rule at {@link #endedByApplication}).
   */
  public synchronized void applicationFailed(Throwable failure, boolean hostGotWholeRequest) {
    if ((flags & FINISHED) == 0 && failure != null) {
      CallExtras x = extras();
      x.applicationFailure = failure;
      x.applicationSentWhole = hostGotWholeRequest;
    }
  }

  /** True when {@code cause} is {@code error} or one of its first causes. */
  private static boolean causedBy(Throwable error, Throwable cause) {
    if (cause == null) {
      return false;
    }
    int depth = 0;
    for (Throwable t = error; t != null && depth < 8; t = t.getCause(), depth++) {
      if (t == cause) {
        return true;
      }
    }
    return false;
  }

  /** The caller's cancel signal ({@link #cancelledWhen}); an adapter's bug counts as not. */
  boolean cancelledByCaller() {
    try {
      return request().callerGaveUp()
          || (extras != null && extras.cancelled != null && extras.cancelled.getAsBoolean());
    } catch (RuntimeException e) {
      return false;
    }
  }

  /**
   * Called once, by {@link SyncRetryLoop} or {@link AsyncRetryLoop}, when the call is over for its
   * loop: after its context ended, before the caller hears of the outcome (or when the caller
   * left). An adapter overrides it to let go of what it counted for the call's length (the {@code
   * java.net.http} client's calls in progress); it must not throw. Does nothing by default.
   */
  protected void loopEnded() {}

  /**
   * A wait of a call's loop (for its retry, or for a rate-limit permit) that the call's adapter can
   * end before its time ({@link #waitStarts}).
   */
  public interface Wait {
    /**
     * Ends the wait now: the loop takes its next step at once, which asks the caller's give-up
     * signal ({@link RequestInfo#callerGaveUp}) first. Any thread; a wait already over ignores it.
     */
    void endNow();
  }

  /**
   * Called by {@link SyncRetryLoop} and {@link AsyncRetryLoop} as the call starts to wait. An
   * adapter whose caller can give up in a way that no step of the call would hear during the wait
   * (the application's {@code shutdownNow()} of a {@code java.net.http} client) answers true and
   * keeps {@code wait} until {@link #waitEnds}, to end it when that happens; otherwise the wait
   * runs its course. It must not throw. False by default.
   */
  protected boolean waitStarts(Wait wait) {
    return false;
  }

  /** The wait {@link #waitStarts} was told of is over (or ended): let go of it. */
  protected void waitEnds(Wait wait) {}

  /*
   * SPI for an adapter that enters the call's context itself (OkHttp's enqueue, HttpURLConnection,
   * Apache's attempt spans), as the engine's loops do: a context is any CallContext.Factory's
   * (RetryEngine.Builder.callContexts), and what it throws must not become the call's outcome.
   * None of these throws: a failure is said once per cause and the call goes on outside the
   * context. Nothing allocated: a context-less call returns at once.
   */

  /**
   * Makes the call's context current ({@code caller}: the caller's own, to tell the application);
   * {@link CallContext.Scope#NONE} when it has none or entering fails. Leave with {@link
   * #leaveContext}.
   */
  public final CallContext.Scope enterContext(boolean caller) {
    return NoContext.enter(this, caller);
  }

  /** Closes {@code scope} from {@link #enterContext}. */
  public final void leaveContext(CallContext.Scope scope) {
    NoContext.close(this, scope);
  }

  /** Ends the call's context ({@link CallContext#end}); the adapter calls it once. */
  public final void endContext() {
    NoContext.end(this);
  }

  /** {@link CallContext#startAttempt}, or {@link CallContext.AttemptSpan#NONE} if it fails. */
  public final <R> CallContext.AttemptSpan startAttemptSpan(
      String method, R request, CallContext.HeaderSetter<R> headers) {
    return NoContext.startAttempt(this, method, request, headers);
  }

  /** Ends {@code span} from {@link #startAttemptSpan}. */
  public final void endAttemptSpan(CallContext.AttemptSpan span, int status, Throwable failure) {
    NoContext.endAttempt(this, span, status, failure);
  }

  /** True once the call ended (returned, failed or was abandoned). */
  public synchronized boolean isFinished() {
    return (flags & FINISHED) != 0;
  }

  /**
   * True when the call ended during the current attempt with no decision about it: its adapter
   * abandoned it there (the application's own failure). A call that decided on the attempt's
   * response head before the attempt failed (java.net.http) has its decision, which {@link
   * #onFailure} gives again.
   */
  synchronized boolean endedWithoutDecision() {
    return (flags & FINISHED) != 0 && decision == null;
  }

  /**
   * Takes one retry from the budget for the decision at {@code now} ({@link CallMoment}); false
   * when it is spent. Keeps the budget's ticket, where the retry was counted, for a give-back.
   */
  boolean takeFromBudget(long now) {
    long ticket = takeRetry(now);
    if (!RetryBudget.granted(ticket)) {
      return false;
    }
    if (!state.observe) {
      // Observe mode keeps the retry spent and never gives it back: no extras made for it.
      extras().retryTicket = ticket;
    }
    return true;
  }

  /** Runs {@link RetryRules} on this call's live state, then carries the decision out. */
  private Decision decide(AttemptResult result, long retryAfterNanos, long now) {
    Decision d =
        RetryRules.decide(
            state.retry,
            request(),
            result,
            attempt,
            extras == null ? attempt : attempt - extras.clientResends,
            new CallMoment(this, extras, startNanos, now, retryAfterNanos));
    // Only the breaker rule gives this reason here: end as the next attempt would have.
    if (d.reason() == GiveUpReason.CIRCUIT_OPEN) {
      CircuitBreakerOpenException e = breaker().rejection(now, state.engine.clock().wallMillis());
      if (wants(RetryEvent.Type.BREAKER_REJECTED, attempt)) {
        queue(RetryEvent.breakerRejectedRetry(this, result, e));
      }
      finish(result, GiveUpReason.CIRCUIT_OPEN, now);
      return Decision.fail(result, GiveUpReason.CIRCUIT_OPEN, CallExtras.withEarlier(extras, e));
    }
    if (!d.retry()) {
      finish(result, d.reason(), now);
      return d;
    }
    if (!state.observe
        && refusedSinceReload(
            result.connectFailureAfterSending() ? Outcome.RESET : result.outcome())) {
      // A reload since the call began made the rule for unsafe requests stricter: the retry it
      // took from the budget (its ticket kept by takeFromBudget) is pending, and the end gives it
      // back.
      retryDecided();
      finish(result, GiveUpReason.NOT_IDEMPOTENT, now);
      return Decision.done(result, GiveUpReason.NOT_IDEMPOTENT);
    }
    if (wants(RetryEvent.Type.RETRY, attempt)) {
      queue(RetryEvent.retry(this, result, d.delayNanos()));
    }
    if (state.observe) {
      // Reported as "would retry"; the caller gets what it gets without the agent. The budget
      // stays spent, as the retry would have spent it (observe mode shows when it would refuse).
      finish(result, null, now);
      return Decision.done(result, null);
    }
    extras().previousDelayNanos = d.delayNanos();
    retryDecided();
    return d;
  }

  /**
   * Whether the policy now in force ({@link RetryEngine#retryPolicyNow}, after a reload) refuses to
   * repeat this request after {@code outcome} where the call's own policy repeats it: a reload can
   * make a call under way safer, never looser. An operator who reloads {@code unsafeMethods:
   * always} to {@code never} to stop duplicate charges stops the retries of POSTs already waiting
   * too. Only this rule: the other keys of a call under way stay as they were when it began. Asked
   * on a retry's path only (a volatile read and the resolver's look-up), never after a success.
   */
  private boolean refusedSinceReload(Outcome outcome) {
    return refusedSinceReload(request(), outcome);
  }

  /**
   * {@link #refusedSinceReload(Outcome)} for {@code judged}, the request that would be sent again
   * (the call's own, or one the client made itself to follow it): the policy now in force is the
   * call's request's, as the call's own is.
   */
  boolean refusedSinceReload(RequestInfo judged, Outcome outcome) {
    RetryPolicy now = state.engine.retryPolicyNow(request());
    return now != null && now != state.retry && IdempotencyGate.check(now, judged, outcome) != null;
  }

  /**
   * Under the lock: {@code e} (null: none was built) is told once the lock is let go ({@link
   * CallEvents}), by {@link #tellQueued}.
   */
  private void queue(RetryEvent e) {
    if (e != null) {
      extras().events().add(e);
    }
  }

  /**
   * Tells the events this call's step queued under the lock, now that it let go ({@link
   * CallEvents}), and the breaker's transitions first (as they were made first: the outcome is
   * recorded before it is decided; {@link CircuitBreaker#tellTransitions}): each step that may make
   * events calls it as it returns or throws. A step nested in another's hold of the lock (an
   * adapter's override calling the step) leaves them to the outer step. A call that made no event
   * reads one field here and the breaker's flag, and takes no lock.
   */
  private void tellQueued() {
    tellQueued(false);
  }

  /**
   * @param acquired the step took a breaker permit: what the listeners let through at a transition
   *     (out of memory, a broken JVM) leaves the step with no permit in the call's hands, or a
   *     half-open trial just issued would never go back (the breaker refusing the host until the
   *     trials' time ran out, and openFor more)
   */
  private void tellQueued(boolean acquired) {
    CallExtras x = extras; // the thread that queued sees its own write (CallEvents.any)
    CallEvents events = x == null ? null : x.eventsIfAny();
    boolean anyEvents = events != null && events.any();
    CircuitBreaker breaker = state.breaker;
    boolean anyMoves = breaker != null && breaker.anyUntold();
    if (!anyEvents && !anyMoves || Thread.holdsLock(this)) {
      return;
    }
    try {
      if (anyMoves) {
        try {
          breaker.tellTransitions();
        } catch (RuntimeException | Error e) {
          if (acquired) {
            synchronized (this) {
              release();
            }
          }
          throw e;
        }
      }
    } finally {
      if (anyEvents) {
        CallEvents.tell(this, events);
      }
    }
  }

  /** Ends the call at {@code now} (the caller's read: one serves the decision and the end). */
  private void finish(AttemptResult result, GiveUpReason reason, long now) {
    if ((flags & FINISHED) != 0) {
      return;
    }
    flags |= FINISHED;
    if (extras != null && extras.firstAttemptRefused && attempt == 1) {
      // The only attempt never reached the wire (attemptRefused): not counted, not told as made.
      attempt = 0;
    }
    // Releases the permit; a retry decided and never made gives its budget back.
    callEnded(now, extras == null ? RetryBudget.REFUSED : extras.retryTicket);
    RetryEvent giveUp =
        reason != null && wants(RetryEvent.Type.GIVE_UP, attempt)
            ? RetryEvent.giveUp(this, result, reason)
            : null;
    boolean succeeded =
        result.outcome() == Outcome.RESPONSE && !RetryRules.isFailure(state.retry, result);
    RetryEvent complete =
        state.engine.listeners().countEnd(state.counters, this, attempt, result, reason, succeeded);
    if ((flags & HOLDS) != 0) {
      extras().heldEnd = new RetryEvent[] {giveUp, complete};
      return;
    }
    queue(giveUp);
    queue(complete);
  }

  /**
   * While {@code hold} (an adapter's step that may end the call, set around it and cleared after):
   * an end made then (the rate limit's, the breaker's refusal, a retry not made after its wait) is
   * told the listeners only once the adapter says how the caller heard of it ({@link #endHeard}).
   * For an adapter that tells the caller on another thread later, where the caller's cancel that
   * comes meanwhile is what it hears: the give-up then says so, not the refusal. The counters count
   * the end as it is made (they hold no reason). Holds nest: each {@code true} is undone by one
   * {@code false}, so a step's own hold inside an outer one leaves the outer in force.
   */
  public synchronized void holdEnd(boolean hold) {
    int holds = flags & HOLDS;
    if (hold && holds != HOLDS) {
      flags += HOLD_UNIT;
    } else if (!hold && holds != 0) {
      flags -= HOLD_UNIT;
    }
  }

  /**
   * Whether {@link #reservePermit} or {@link #reservePermitAfterWait} may end the call: only an
   * enforced rate limit refuses. Without one, an adapter's {@link #holdEnd} around them would hold
   * nothing, and costs a lock each way on every call: it is left out.
   */
  public boolean permitMayEndCall() {
    return state.limiter != null && !state.observe;
  }

  /**
   * {@link #acquireBreaker}, its refusal's end held ({@link #holdEnd}) under the lock it takes
   * anyway: no lock more for the hold, on every attempt that begins.
   */
  public void acquireBreakerHoldingEnd() throws CircuitBreakerOpenException {
    try {
      acquireBreakerHoldingEndLocked();
    } finally {
      tellQueued(true);
    }
  }

  private synchronized void acquireBreakerHoldingEndLocked() throws CircuitBreakerOpenException {
    flags += HOLD_UNIT; // at most two in force: this one inside permitThenBegin's
    try {
      takeBreaker();
    } finally {
      flags -= HOLD_UNIT;
    }
  }

  /**
   * The caller heard of the call's end: the end {@link #holdEnd} held is told now, its give-up (and
   * the call's completion) said {@code heardAs} when that is not null (the caller heard that the
   * call was cancelled, {@link GiveUpReason#CANCELLED}, or that its timeout ran out, {@link
   * GiveUpReason#CALL_TIMEOUT}), as made otherwise. Nothing when no end is held. Safe to call more
   * than once; the listeners are told once.
   */
  public void endHeard(GiveUpReason heardAs) {
    try {
      endHeardLocked(heardAs);
    } finally {
      tellQueued();
    }
  }

  private synchronized void endHeardLocked(GiveUpReason heardAs) {
    RetryEvent[] held = extras == null ? null : extras.heldEnd;
    if (held == null) {
      return;
    }
    extras.heldEnd = null;
    for (RetryEvent e : held) {
      queue(e == null || heardAs == null || e.reason() == null ? e : e.heardAs(heardAs));
    }
  }

  /**
   * How many attempts the counters count as attempt {@link #attempt} starts: a first attempt is
   * counted at its end (with the call's, when it ends the call: {@link CallCounter}), so with the
   * second, unless the call ended with it already.
   */
  private int toCount() {
    return attempt == 1 ? 0 : attempt == 2 && (flags & FINISHED) == 0 ? 2 : 1;
  }
}
