package dev.retryagent.engine;

/**
 * SPI, for {@link #shorterTimeout} only: the time bounds of one call, in {@link Clock#nanoTime()}
 * terms: the policy's {@code deadline} (which retries never run past), the caller's own timeout for
 * the whole call when the client has one (OkHttp's {@code callTimeout}: the client enforces it, the
 * engine only stops retrying before it), and the bound they leave each attempt. Not thread-safe:
 * {@link RetryCall} guards it; its one public member is the rule adapters apply to each of the
 * client's own per-attempt timeouts.
 */
public final class CallBounds {
  /**
   * A caller that gives up this close to its own call timeout was ended by it: the adapter learns
   * the timeout a moment after the client started counting it.
   */
  static final long CALLER_TIMEOUT_SLACK_NANOS = 50_000_000L;

  /**
   * A retry planned to start this close to the deadline (or closer), after a wait no longer than
   * this, keeps the response it retries through its wait where the loop can ({@link
   * RetryCall#waitEndsNearDeadline}): a wait that then ends late, at or past the deadline (a JVM
   * paused, a scheduler held up), ends the call with that response ({@link
   * RetryCall#retryTooLate}). Further from the deadline the response is released before the wait,
   * so its connection serves other calls meanwhile, and so it is before a longer wait (a kept
   * response holds its connection, an Apache pool's lease, for the whole wait).
   */
  static final long NEAR_DEADLINE_NANOS = 1_000_000_000L;

  private final long perAttemptNanos;
  private long deadlineNanos;
  private boolean callerTimeout;
  private long callerDeadlineNanos;

  /**
   * The rule for one of the client's per-attempt timeouts (a request timeout; a connect, read or
   * write timeout): the shorter of the policy's bound ({@link RetryCall#attemptTimeoutNanos()}) and
   * the client's own, which is kept untouched when it is the shorter, so that when it expires the
   * caller sees exactly what it would see without retries.
   *
   * @param limitNanos the policy's bound, or -1 for none
   * @param clientNanos the client's own timeout, or 0 or less for none
   * @return the timeout to give the attempt, or -1 to keep the client's own
   */
  public static long shorterTimeout(long limitNanos, long clientNanos) {
    if (limitNanos < 0 || (clientNanos > 0 && clientNanos <= limitNanos)) {
      return -1;
    }
    return limitNanos;
  }

  /**
   * @param perAttemptNanos {@code perAttemptTimeout}, or -1 for none
   * @param deadlineNanos when the policy's deadline ends
   */
  CallBounds(long perAttemptNanos, long deadlineNanos) {
    this.perAttemptNanos = perAttemptNanos;
    this.deadlineNanos = deadlineNanos;
  }

  /** Shortens the deadline when {@code atNanos} is sooner. */
  void limitDeadline(long atNanos) {
    if (atNanos - deadlineNanos < 0) {
      deadlineNanos = atNanos;
    }
  }

  /** The caller's call timeout ends at {@code atNanos} (the sooner of two is kept). */
  void limitToCallerTimeout(long atNanos) {
    if (!callerTimeout || atNanos - callerDeadlineNanos < 0) {
      callerDeadlineNanos = atNanos;
      callerTimeout = true;
    }
  }

  /**
   * The policy's bound on attempt {@code attempt} starting at {@code nowNanos}, or -1 for none:
   * {@code perAttemptTimeout}, and for a retry the time left before the deadline. The first attempt
   * is the caller's own: only {@code perAttemptTimeout} bounds it.
   */
  long attemptTimeoutNanos(int attempt, long nowNanos) {
    long timeout = perAttemptNanos;
    if (attempt > 1) {
      long remaining = Math.max(1, deadlineNanos - nowNanos);
      timeout = timeout < 0 ? remaining : Math.min(timeout, remaining);
    }
    return timeout;
  }

  /**
   * Time left at {@code nowNanos} before the deadline or the caller's timeout, whichever is first.
   */
  long remainingNanos(long nowNanos) {
    long end =
        callerTimeout && callerDeadlineNanos - deadlineNanos < 0
            ? callerDeadlineNanos
            : deadlineNanos;
    return Math.max(0, end - nowNanos);
  }

  /** True when an attempt starting at {@code atNanos} would start at or after the deadline. */
  boolean pastDeadline(long atNanos) {
    return atNanos - deadlineNanos >= 0;
  }

  /**
   * True when an attempt starting at {@code atNanos} would start at or after the caller's call
   * timeout, and that timeout comes no later than the deadline (the earlier bound names the cause).
   */
  boolean pastCallerTimeout(long atNanos) {
    return callerTimeout
        && callerDeadlineNanos - deadlineNanos <= 0
        && atNanos - callerDeadlineNanos >= 0;
  }

  /** True when a caller that gave up at {@code nowNanos} was ended by its own call timeout. */
  boolean callerTimedOut(long nowNanos) {
    return callerTimeout && nowNanos - (callerDeadlineNanos - CALLER_TIMEOUT_SLACK_NANOS) >= 0;
  }
}
