package dev.retryagent.engine;

import java.util.function.BooleanSupplier;

/**
 * The part of a call's state that the common case never needs: a call whose first attempt ends it,
 * without a cancel signal, a deadline of the caller's or a client that resends on its own. A {@link
 * RetryCall} makes it on first use (its first retry, or the adapter's first such setting), and this
 * makes its own parts on first use too, so that a call that succeeds at once is one object and an
 * adapter's setting costs only what it sets (issue 13). Not thread-safe: {@link RetryCall} guards
 * it.
 */
final class CallExtras {
  private CallBounds bounds;
  private ClientResends resends;
  // The current attempt is a retry of ours. A call has extras before its second attempt starts
  // (a retry makes them), so before they exist every attempt is the first.
  private boolean inRetry;

  // Made on the first failed attempt: a call retried after statuses alone never needs it, and
  // 10,000 such calls may wait at once (issue 13).
  private EarlierFailures earlier;

  /**
   * The call's end made while its adapter held it ({@link RetryCall#holdEnd}): its give-up and
   * completion events (either null when not made), told by {@link RetryCall#endHeard}; or null.
   */
  RetryEvent[] heldEnd;

  /** The caller's cancel signal ({@link RetryCall#cancelledWhen}), or null. */
  BooleanSupplier cancelled;

  /** A failure while {@link #cancelled} is set was caused by it ({@link RetryCall#abortedWhen}). */
  boolean abortFailsAttempt;

  /**
   * The delay before the previous retry, 0 before the first: the base of decorrelated jitter. From
   * a retry's decision to the next attempt, that retry's delay ({@link RetryCall#waitsToRetry}).
   */
  long previousDelayNanos;

  /**
   * Requests the client sent again on its own so far in the call, each counted as an attempt
   * ({@link RetryCall#clientRepeated} and the like): the backoff's step counts the call's own
   * retries only, which are its attempts less these.
   */
  int clientResends;

  /** Where the budget counted the retry taken last ({@link RetryBudget#acquireRetry}'s ticket). */
  long retryTicket;

  /**
   * What the application's own code threw in the current attempt ({@link
   * RetryCall#applicationFailed}), or null.
   */
  Throwable applicationFailure;

  /**
   * The host got a whole request before the application's failure ({@link #applicationFailure}).
   */
  boolean applicationSentWhole;

  /**
   * A request of the current attempt reached a server before the attempt failed ({@link
   * RetryCall#requestReachedServer}): a connect failure that ends it proves nothing unsent.
   */
  boolean reachedServer;

  /**
   * The client refused the call's first attempt before any of it went out (RetryCall's
   * attemptRefused): the call ends counting no attempt.
   */
  boolean firstAttemptRefused;

  /**
   * The rate limit's permit for the retry decided was reserved at the decision ({@link
   * RetryCall#reserveRetryPermit}): the retry's {@link RetryCall#reservePermit} takes it.
   */
  boolean permitReserved;

  /**
   * That permit came past the retry's backoff: its RATE_LIMITED wait event was told at the
   * decision. False: due within the backoff, no event told; a pause the retry then waits for is its
   * first wait for its permit, and told.
   */
  boolean permitWaitTold;

  /** The call's events, waiting to be told outside its lock ({@link CallEvents}). */
  private CallEvents events;

  /**
   * An asynchronous call's copy of the response released for the retry it waits for ({@link
   * RetryCall#keepToGiveBack}), or null. Here, not in the loop: a field there is 8 B more on every
   * asynchronous call; these extras have room for it (59 B of fields, 64 B in all).
   */
  Object giveBack;

  /** The call's events, made on its first event. */
  CallEvents events() {
    if (events == null) {
      events = new CallEvents();
    }
    return events;
  }

  /** The call's events, or null while it made none. */
  CallEvents eventsIfAny() {
    return events;
  }

  /** The call's bounds, made from its policy and start on first use. */
  CallBounds bounds(HostState state, long startNanos) {
    if (bounds == null) {
      bounds = new CallBounds(state.perAttemptNanos, startNanos + state.deadlineNanos);
    }
    return bounds;
  }

  /** The bounds, or null while nothing set or asked for them (then they are the policy's). */
  CallBounds boundsIfAny() {
    return bounds;
  }

  /** The failures of the attempts before the current one (a call with one attempt has none). */
  EarlierFailures earlier() {
    if (earlier == null) {
      earlier = new EarlierFailures();
    }
    return earlier;
  }

  /** The failure of the latest attempt the call went on after, or null. */
  Throwable latestFailure() {
    return earlier == null ? null : earlier.latest();
  }

  /** {@code last}, carrying the earlier attempts' failures (none when {@code x} is null). */
  static <T extends Throwable> T withEarlier(CallExtras x, T last) {
    return x == null || x.earlier == null ? last : x.earlier.attachTo(last);
  }

  /** True when a caller that gave up at {@code nowNanos} was ended by its own call timeout. */
  boolean callerTimedOut(long nowNanos) {
    return bounds != null && bounds.callerTimedOut(nowNanos);
  }

  /** An attempt of ours starts: a retry, or the call's first. */
  void attemptStarted(boolean retry) {
    inRetry = retry;
    applicationFailure = null;
    applicationSentWhole = false;
    reachedServer = false;
    if (resends != null) {
      resends.attemptStarted(retry);
    }
  }

  /** True when the current attempt is a retry of ours. */
  boolean inRetry() {
    return inRetry;
  }

  /** The client's resends in the current attempt, made on first use. */
  ClientResends resends() {
    if (resends == null) {
      resends = new ClientResends();
      resends.attemptStarted(inRetry);
    }
    return resends;
  }

  /**
   * {@link RetryCall#clientMayResend}, once neither observe mode nor a pass-through answered. Never
   * throws: when the engine fails here (said once per cause), the answer is yes, and the client
   * does what it does without the agent.
   */
  boolean clientMayResend(
      RetryCall call,
      HostState state,
      RequestInfo request,
      RequestInfo followUp,
      AttemptResult result,
      int attempt) {
    try {
      TestFaults.decide();
      // The client's resend counts as a retry: a reload since the call began (during a retry's
      // wait) that made the rule for requests not safe to repeat stricter refuses it too, as it
      // refuses the engine's own retries. Judged by the call's own policy alone, HttpClient 5
      // resent a POST begun under unsafeMethods: always after a reload to never.
      if (state.engine.reloadedSince(state)
          && call.refusedSinceReload(
              followUp != null ? followUp : request,
              result.connectFailureAfterSending() ? Outcome.RESET : result.outcome())) {
        return false;
      }
      return resends().ask(state.retry, request, followUp, result, attempt);
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      state.engine.internalError("deciding whether the client may resend", e, "the client decides");
      return true;
    }
  }

  /** The resends, or null while none were judged, asked for or made. */
  ClientResends resendsIfAny() {
    return resends;
  }
}
