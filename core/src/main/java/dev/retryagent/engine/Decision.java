package dev.retryagent.engine;

import java.io.IOException;

/**
 * What to do after an attempt: retry after {@link #delayNanos()}, or end the call with the
 * attempt's result (or with {@link #error()} instead, when the engine must fail the call itself).
 * SPI: made by {@link RetryCall} and {@link RetryRules}, read by adapters. Immutable.
 */
public final class Decision {
  // "Done, no reason" after a response is a value per status: the success path's decision is one of
  // these, made on first use (races make equal twins, harmlessly).
  private static final Decision[] DONE_RESPONSES = new Decision[600];

  // A retry decided, without its delay: what a call keeps while an asynchronous adapter waits
  // (kept()), one value per status, or per outcome after an exception. 10,000 calls may wait at
  // once (issue 13), and a Decision each would be 40 B more per waiting call. Made on first use.
  private static final Decision[] KEPT_RETRY_RESPONSES = new Decision[600];
  private static final Decision[] KEPT_RETRY_FAILURES = new Decision[Outcome.values().length];

  private final boolean retry;
  // A retry kept() without its delay: never handed out (again() makes the decision).
  private final boolean keptRetry;
  private final long delayNanos;
  private final Outcome outcome;
  private final int status;
  private final GiveUpReason reason;
  private final IOException error;

  private Decision(
      boolean retry,
      boolean keptRetry,
      long delayNanos,
      Outcome outcome,
      int status,
      GiveUpReason reason,
      IOException error) {
    this.retry = retry;
    this.keptRetry = keptRetry;
    this.delayNanos = delayNanos;
    this.outcome = outcome;
    this.status = status;
    this.reason = reason;
    this.error = error;
  }

  static Decision retryAfter(long delayNanos, AttemptResult result) {
    return new Decision(true, false, delayNanos, result.outcome(), result.status(), null, null);
  }

  static Decision done(AttemptResult result, GiveUpReason reason) {
    int status = result.status();
    if (reason != null
        || result.outcome() != Outcome.RESPONSE
        || status < 0
        || status >= DONE_RESPONSES.length) {
      return new Decision(false, false, 0, result.outcome(), status, reason, null);
    }
    Decision d = DONE_RESPONSES[status];
    if (d == null) {
      d = new Decision(false, false, 0, Outcome.RESPONSE, status, null, null);
      DONE_RESPONSES[status] = d;
    }
    return d;
  }

  static Decision fail(AttemptResult result, GiveUpReason reason, IOException error) {
    return new Decision(false, false, 0, result.outcome(), result.status(), reason, error);
  }

  /**
   * This retry decision as its call keeps it while an asynchronous adapter waits: without the delay
   * (the call keeps that), a value shared by every retry after the same status or outcome; any
   * other decision as it is.
   */
  Decision kept() {
    if (!retry || keptRetry || outcome == null) {
      return this;
    }
    Decision[] values;
    int index;
    if (outcome != Outcome.RESPONSE) {
      values = KEPT_RETRY_FAILURES;
      index = outcome.ordinal();
    } else if (status >= 0 && status < KEPT_RETRY_RESPONSES.length) {
      values = KEPT_RETRY_RESPONSES;
      index = status;
    } else {
      return this;
    }
    Decision d = values[index];
    if (d == null) {
      d = new Decision(true, true, 0, outcome, status, null, null);
      values[index] = d;
    }
    return d;
  }

  /**
   * A decision as its call keeps it, as it was made: a retry {@link #kept} without its delay gets
   * {@code delayNanos} (the delay the call kept) back; any other decision is itself.
   */
  Decision again(long delayNanos) {
    return keptRetry ? new Decision(true, false, delayNanos, outcome, status, null, null) : this;
  }

  /** True: discard the attempt's result, wait {@link #delayNanos()}, make another attempt. */
  public boolean retry() {
    return retry;
  }

  /** The wait before the next attempt when {@link #retry()}, else 0. */
  public long delayNanos() {
    return delayNanos;
  }

  /** What the attempt came to; null when no attempt was made. */
  public Outcome outcome() {
    return outcome;
  }

  /** The attempt's status, or -1 when it ended in an exception. */
  public int status() {
    return status;
  }

  /** Why a failed call was not retried, or null (success, or retrying). */
  public GiveUpReason reason() {
    return reason;
  }

  /**
   * When non-null, the call must end with this exception instead of the attempt's result (whose
   * body is to be discarded): e.g. the breaker opened and the next attempt would fail fast.
   */
  public IOException error() {
    return error;
  }

  @Override
  public String toString() {
    return retry
        ? "retry in " + delayNanos / 1_000_000 + "ms"
        : "done" + (reason == null ? "" : " (" + reason.label() + ")");
  }
}
