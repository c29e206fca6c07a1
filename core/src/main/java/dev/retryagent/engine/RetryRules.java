package dev.retryagent.engine;

import dev.retryagent.policy.RetryPolicy;
import java.util.EnumSet;
import java.util.Set;

/**
 * SPI: the decision after an attempt, in one place: a ladder of guard clauses, each rule that can
 * end the call in the order the engine applies them. {@link RetryCall} runs it with the live state
 * of a call; {@code explain} runs it for a first attempt with a {@link Hypothetical} moment, so the
 * two cannot disagree on the rules that do not depend on the moment.
 */
public final class RetryRules {
  private RetryRules() {}

  /**
   * What the ladder asks of the moment: the live call, or {@link Hypothetical}. The ladder asks in
   * its own order and only as far as it goes, so an answer with a side effect (the budget) is asked
   * for last.
   */
  public interface Moment {
    /** True when the caller gave up (cancelled, timed out): nobody waits for a retry. */
    boolean callerGaveUp();

    /**
     * True when the caller's own timeout for the whole call is what ended it (so a give-up says so
     * rather than "cancelled"); asked only once the caller gave up or the attempt was cancelled.
     */
    default boolean callerTimedOut() {
      return false;
    }

    /**
     * Requests the client is expected to add on its own to the next attempt: as many as it sent the
     * last attempt's request again by itself without asking the call first (the JDK after a
     * connection that closed before any byte of the answer, OkHttp after a 408, HttpClient 4.5
     * after an I/O failure), since it will likely do so for the retry too. A resend the client
     * asked for ({@link RetryRules#clientMayResend}) is not expected: it will ask again.
     */
    default int clientResendsExpected() {
      return 0;
    }

    /**
     * The delay this attempt's {@code Retry-After} asks for, in nanoseconds, or -1 (no header, or a
     * policy that does not wait for it).
     */
    long retryAfterNanos();

    /** The delay before the previous retry, 0 before the first: the base of decorrelated jitter. */
    long previousDelayNanos();

    /** A uniform random value in [0, 1) for jitter; drawn once per retry the ladder computes. */
    double nextRandom();

    /** True when a retry after {@code delayNanos} could not start before the call's deadline. */
    boolean pastDeadline(long delayNanos);

    /**
     * True when a retry after {@code delayNanos} could not start before the caller's own timeout
     * for the whole call, and that timeout comes before the deadline.
     */
    default boolean pastCallerTimeout(long delayNanos) {
      return false;
    }

    /** True when the breaker would still be open after {@code delayNanos}. */
    boolean breakerOpenAfter(long delayNanos);

    /** Takes one retry from the host's budget; false when it is spent. */
    boolean takeFromBudget();
  }

  /**
   * The decision after attempt number {@code attempt} (1-based) came to {@code result}: retry after
   * {@link Decision#delayNanos()}, or end the call, with the reason when the result is a failure.
   * The rules in order: the caller's cancel (or its call timeout), retries enabled, the outcome
   * retryable, safe to repeat (the method, the idempotency key, the body), an attempt left
   * (counting the client's own resends), {@code Retry-After} not too long, the caller's call
   * timeout, the deadline, the breaker, the budget.
   */
  public static Decision decide(
      RetryPolicy retry, RequestInfo request, AttemptResult result, int attempt, Moment moment) {
    return decide(retry, request, result, attempt, attempt, moment);
  }

  /**
   * {@link #decide(RetryPolicy, RequestInfo, AttemptResult, int, Moment)} for a call whose client
   * sent requests again by itself: {@code attempt} counts them (for {@code maxAttempts}, which
   * bounds what the server sees), {@code ownAttempts} does not, and is the backoff's step: {@code
   * backoff.initial} is the delay before the call's first retry, however often the client resent
   * inside the first attempt. Counted with the resends, a retry after OkHttp's own repeat of a 408
   * waited {@code initial x multiplier}.
   */
  static Decision decide(
      RetryPolicy retry,
      RequestInfo request,
      AttemptResult result,
      int attempt,
      int ownAttempts,
      Moment moment) {
    boolean failure = isFailure(retry, result);
    // Nobody is waiting for the answer any more: the caller cancelled, or its timeout ran out. A
    // response that is no failure (a 200 whose head came before the cancel) goes back as any
    // other: no give-up to tell of (no dead letter, no give-up count for a call that succeeded).
    if (result.outcome() == Outcome.CANCELLED || moment.callerGaveUp()) {
      GiveUpReason gaveUp =
          moment.callerTimedOut() ? GiveUpReason.CALL_TIMEOUT : GiveUpReason.CANCELLED;
      return Decision.done(result, failure ? gaveUp : null);
    }
    // The application's own code broke the request: nothing of the host's to retry.
    if (result.outcome() == Outcome.APPLICATION_FAILED) {
      return Decision.done(result, GiveUpReason.APPLICATION_FAILED);
    }
    // The client's own pool had no connection in time: nothing reached the host; the application
    // gets the client's exception, as without the agent.
    if (result.outcome() == Outcome.POOL_TIMEOUT) {
      return Decision.done(result, GiveUpReason.POOL_TIMEOUT);
    }
    // Retries off, an outcome retryOn does not name, a request not safe to repeat: the outcome
    // goes back as it came (a retryable outcome is always a failure, so the reason is named).
    GiveUpReason refused = policyRefusal(retry, request, result);
    if (refused != null) {
      return Decision.done(result, failure ? refused : null);
    }
    // maxAttempts counts every attempt, the first included, and bounds the requests the server
    // sees: a retry the client would likely send twice by itself needs two attempts left.
    if (attempt + moment.clientResendsExpected() >= retry.maxAttempts()) {
      return Decision.done(result, GiveUpReason.ATTEMPTS);
    }
    // A server that asks for more than we may wait gets its answer back at once.
    long retryAfterNanos = moment.retryAfterNanos();
    if (retryAfterNanos != RetryAfter.NONE && retryAfterNanos > retry.retryAfterMax().toNanos()) {
      return Decision.done(result, GiveUpReason.RETRY_AFTER_TOO_LONG);
    }
    long delay =
        Backoff.delayNanos(
            retry.backoff(),
            Math.max(1, ownAttempts),
            moment.previousDelayNanos(),
            moment.nextRandom());
    // Never sooner than the server asked.
    if (retryAfterNanos != RetryAfter.NONE) {
      delay = Math.max(delay, retryAfterNanos);
    }
    // Never start a retry that cannot begin before the caller stops waiting, or the deadline.
    if (moment.pastCallerTimeout(delay)) {
      return Decision.done(result, GiveUpReason.CALL_TIMEOUT);
    }
    if (moment.pastDeadline(delay)) {
      return Decision.done(result, GiveUpReason.DEADLINE);
    }
    // A retry that would find the breaker open ends the call now rather than after the wait.
    if (moment.breakerOpenAfter(delay)) {
      return Decision.done(result, GiveUpReason.CIRCUIT_OPEN);
    }
    // Last, so the budget is only spent on retries that will really be made.
    if (!moment.takeFromBudget()) {
      return Decision.done(result, GiveUpReason.BUDGET);
    }
    return Decision.retryAfter(delay, result);
  }

  /**
   * Why the policy itself never retries {@code result} of {@code request}, whatever the moment:
   * retries off, an outcome {@code retryOn} does not name, a request not safe to repeat (the rule
   * that keeps a charge from happening twice); null when it retries it, moment permitting.
   */
  private static GiveUpReason policyRefusal(
      RetryPolicy retry, RequestInfo request, AttemptResult result) {
    GiveUpReason refused = outcomeRefusal(retry, result);
    return refused != null ? refused : IdempotencyGate.check(retry, request, result);
  }

  /**
   * Why the policy never retries {@code result}, whatever the request: retries off, or an outcome
   * {@code retryOn} does not name; null when it retries it, the request and moment permitting.
   */
  private static GiveUpReason outcomeRefusal(RetryPolicy retry, AttemptResult result) {
    if (!retry.enabled()) {
      return GiveUpReason.RETRY_DISABLED;
    }
    if (!isRetryable(retry, result)) {
      return GiveUpReason.NON_RETRYABLE;
    }
    return null;
  }

  /**
   * Whether a client may send the request again by itself, inside attempt number {@code attempt}
   * (1-based, the client's resends counted, {@code inRetry} when the attempt is a retry of ours),
   * after {@code result}: the question HttpClient 5's own retry strategy asks through the adapter.
   *
   * <ul>
   *   <li>Never for a request the policy would not repeat after this outcome ({@link
   *       IdempotencyGate}: a POST without key, whatever the route's other settings): HttpClient 5
   *       resends a POST answered 429 or 503 by itself, and with the agent it must not, as OkHttp's
   *       and the JDK's own resends of such a request are turned off (the same rule), so that a
   *       request not safe to repeat reaches the server once.
   *   <li>Never when the policy retries the outcome: the call's own retry, with its backoff, {@code
   *       Retry-After} rule, deadline, breaker and budget, stands in for the client's resend, so
   *       the two never multiply and the last attempt is never spent on a resend the policy did not
   *       choose.
   *   <li>Otherwise (retries off, an outcome {@code retryOn} does not name) in the call's first
   *       attempt, as the client does without the agent; in a retry of ours only with an attempt
   *       left for it, so that {@code maxAttempts} still bounds what the server sees.
   * </ul>
   */
  public static boolean clientMayResend(
      RetryPolicy retry, RequestInfo request, AttemptResult result, int attempt, boolean inRetry) {
    return clientMayResend(retry, request, null, result, attempt, inRetry);
  }

  /**
   * {@link #clientMayResend(RetryPolicy, RequestInfo, AttemptResult, int, boolean)} for a request
   * the client made itself to follow the call's, inside the attempt: {@code followUp}, the GET of a
   * redirect after a POST answered 301, 302 or 303 (null: the call's own request is resent). While
   * the call's request is safe to repeat, the rule is the call's (a retry of ours, which follows
   * the redirect again, stands in for the resend). When it is not (a POST without key), no retry of
   * ours ever comes, and a follow-up that is safe to repeat on its own is the client's to resend,
   * as without the agent (bounded as above): refused, the application got the follow-up's failure
   * where the client alone sent the GET again.
   */
  public static boolean clientMayResend(
      RetryPolicy retry,
      RequestInfo request,
      RequestInfo followUp,
      AttemptResult result,
      int attempt,
      boolean inRetry) {
    if (IdempotencyGate.check(retry, request, result) != null) {
      if (followUp == null || IdempotencyGate.check(retry, followUp, result) != null) {
        return false;
      }
      return !inRetry || attempt < retry.maxAttempts();
    }
    // The request is safe to repeat (asked once, above): the policy retries the outcome itself.
    if (outcomeRefusal(retry, result) == null) {
      return false;
    }
    return !inRetry || attempt < retry.maxAttempts();
  }

  /** True when {@code retryOn} names the result: its status, its transport kind or exception. */
  static boolean isRetryable(RetryPolicy retry, AttemptResult result) {
    return result.outcome() == Outcome.RESPONSE
        ? Classifier.isRetryableStatus(retry, result.status())
        : Classifier.isRetryableException(retry, result.outcome(), result.error());
  }

  /** A failure for the caller: an exception, a retryable status or a server error. */
  static boolean isFailure(RetryPolicy retry, AttemptResult result) {
    if (result.outcome() != Outcome.RESPONSE) {
      return true;
    }
    return result.status() >= 500 || retry.retryOnStatuses().contains(result.status());
  }

  /**
   * A first attempt judged before it happens: nothing waited yet, no {@code Retry-After}, and every
   * rule that depends on the moment (deadline, breaker, budget, {@code Retry-After}) taken as
   * passed. Remembers which of those the ladder reached, as the reasons they would give: what a
   * retry also needs at run time. Not thread-safe; one per explanation.
   */
  public static final class Hypothetical implements Moment {
    private final EnumSet<GiveUpReason> assumed = EnumSet.noneOf(GiveUpReason.class);

    /** The rules taken as passed so far, as the reasons they would give when they do not pass. */
    public Set<GiveUpReason> assumed() {
      return EnumSet.copyOf(assumed);
    }

    @Override
    public boolean callerGaveUp() {
      return false;
    }

    @Override
    public long retryAfterNanos() {
      assumed.add(GiveUpReason.RETRY_AFTER_TOO_LONG);
      return RetryAfter.NONE;
    }

    @Override
    public long previousDelayNanos() {
      return 0;
    }

    @Override
    public double nextRandom() {
      return 0;
    }

    @Override
    public boolean pastDeadline(long delayNanos) {
      assumed.add(GiveUpReason.DEADLINE);
      return false;
    }

    @Override
    public boolean breakerOpenAfter(long delayNanos) {
      assumed.add(GiveUpReason.CIRCUIT_OPEN);
      return false;
    }

    @Override
    public boolean takeFromBudget() {
      assumed.add(GiveUpReason.BUDGET);
      return true;
    }
  }
}
