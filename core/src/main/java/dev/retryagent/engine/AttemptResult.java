package dev.retryagent.engine;

import java.io.IOException;

/**
 * SPI: what one attempt came to, as one value: a response status, or the exception the client threw
 * (with the {@link Outcome} the engine's classification gives it). A call that ended before any
 * attempt has no outcome and status -1, and possibly the engine's own exception (the breaker's).
 * Immutable and thread-safe; {@link RetryRules#decide} takes one.
 */
public final class AttemptResult {
  private static final AttemptResult NONE = new AttemptResult(null, -1, null);
  private static final AttemptResult CANCELLED = new AttemptResult(Outcome.CANCELLED, -1, null);

  // Responses are values: one per status, made on first use (races make equal twins, harmlessly).
  private static final AttemptResult[] RESPONSES = new AttemptResult[600];

  private final Outcome outcome;
  private final int status;
  private final Throwable error;
  // A connect failure after another request of the attempt reached a server (afterSending).
  private final boolean afterSending;

  private AttemptResult(Outcome outcome, int status, Throwable error) {
    this(outcome, status, error, false);
  }

  private AttemptResult(Outcome outcome, int status, Throwable error, boolean afterSending) {
    this.outcome = outcome;
    this.status = status;
    this.error = error;
    this.afterSending = afterSending;
  }

  /** A whole response head arrived with {@code status}. */
  public static AttemptResult response(int status) {
    if (status < 0 || status >= RESPONSES.length) {
      return new AttemptResult(Outcome.RESPONSE, status, null);
    }
    AttemptResult r = RESPONSES[status];
    if (r == null) {
      r = new AttemptResult(Outcome.RESPONSE, status, null);
      RESPONSES[status] = r;
    }
    return r;
  }

  /**
   * The client threw {@code error}; its outcome is what the engine's classification makes of it:
   * {@link Outcome#CONNECT_FAILURE} when nothing was sent, {@link Outcome#RESET}, {@link
   * Outcome#TIMEOUT}, {@link Outcome#CANCELLED} for an interrupt or a cancellation, {@link
   * Outcome#POOL_TIMEOUT} when the client's own pool had no connection in time, else {@link
   * Outcome#OTHER_EXCEPTION}.
   */
  public static AttemptResult thrown(Throwable error) {
    return new AttemptResult(TransportClassifier.classify(error), -1, error);
  }

  /**
   * This failure, known to have come after a request of the same attempt reached a server: a
   * redirect's hop (a POST answered 307, its {@code Location} refusing the connection), the
   * client's own resend. A connect failure then proves only that the last connection was never
   * made, not that the call's request was never sent ({@link #connectFailureAfterSending}).
   */
  AttemptResult afterSending() {
    return outcome == Outcome.CONNECT_FAILURE && !afterSending
        ? new AttemptResult(outcome, status, error, true)
        : this;
  }

  /**
   * True for a connect failure after a request of the attempt reached a server: {@code retryOn}
   * still names it {@code connect}, but the rule for requests not safe to repeat ({@link
   * IdempotencyGate}) takes it as a failure after sending.
   */
  boolean connectFailureAfterSending() {
    return afterSending;
  }

  /** The caller abandoned the call outside an attempt (cancelled, or interrupted while waiting). */
  static AttemptResult cancelled() {
    return CANCELLED;
  }

  /**
   * The attempt ended in the application's own {@code error} (its request body), not in the host's
   * answer: {@link Outcome#APPLICATION_FAILED}, with the error for the log.
   */
  static AttemptResult applications(Throwable error) {
    return new AttemptResult(Outcome.APPLICATION_FAILED, -1, error);
  }

  /**
   * The host answered with {@code status} a request the application's own code broke (its body
   * shorter than its declared length): the answer is the host's reaction to the application's
   * mistake, not the host's outcome, so {@link Outcome#APPLICATION_FAILED}, with the status.
   */
  static AttemptResult applicationsAnswered(int status) {
    return new AttemptResult(Outcome.APPLICATION_FAILED, status, null);
  }

  /** No attempt was made (the rate limit refused the call). */
  static AttemptResult none() {
    return NONE;
  }

  /** No attempt was made because the engine refused the call with {@code error} (breaker open). */
  static AttemptResult refused(IOException error) {
    return new AttemptResult(null, -1, error);
  }

  /** The kind of result, or null when no attempt was made. */
  public Outcome outcome() {
    return outcome;
  }

  /** The response status, or -1. */
  public int status() {
    return status;
  }

  /** The exception, or null. */
  public Throwable error() {
    return error;
  }

  @Override
  public String toString() {
    return status >= 0 ? Integer.toString(status) : String.valueOf(outcome);
  }
}
