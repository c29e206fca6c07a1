package dev.retryagent.engine;

import java.io.IOException;

/**
 * What to do after an attempt: retry after {@link #delayNanos()}, or end the call with the
 * attempt's result (or with {@link #error()} instead, when the engine must fail the call itself).
 * SPI: made by {@link RetryCall} and {@link RetryRules}, read by adapters. Immutable.
 */
public final class Decision {
  private final boolean retry;
  private final long delayNanos;
  private final Outcome outcome;
  private final int status;
  private final GiveUpReason reason;
  private final IOException error;

  private Decision(
      boolean retry,
      long delayNanos,
      Outcome outcome,
      int status,
      GiveUpReason reason,
      IOException error) {
    this.retry = retry;
    this.delayNanos = delayNanos;
    this.outcome = outcome;
    this.status = status;
    this.reason = reason;
    this.error = error;
  }

  static Decision retryAfter(long delayNanos, AttemptResult result) {
    return new Decision(true, delayNanos, result.outcome(), result.status(), null, null);
  }

  static Decision done(AttemptResult result, GiveUpReason reason) {
    return new Decision(false, 0, result.outcome(), result.status(), reason, null);
  }

  static Decision fail(AttemptResult result, GiveUpReason reason, IOException error) {
    return new Decision(false, 0, result.outcome(), result.status(), reason, error);
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
