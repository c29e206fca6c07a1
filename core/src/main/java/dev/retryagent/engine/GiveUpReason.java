package dev.retryagent.engine;

import java.util.Locale;

/** Why a failed call went back to the caller without another attempt. */
public enum GiveUpReason {
  /** {@code maxAttempts} were made. */
  ATTEMPTS,
  /** The next attempt could not have started before the deadline. */
  DEADLINE,
  /** The host's retry budget was spent. */
  BUDGET,
  /** The outcome is not retryable ({@code retryOn} does not name it). */
  NON_RETRYABLE,
  /** Not safe to repeat: the method is not idempotent and {@code unsafeMethods} forbids it. */
  NOT_IDEMPOTENT,
  /** The request body could not be sent again (one-shot, or larger than the replay limit). */
  BODY_NOT_REPLAYABLE,
  /** {@code Retry-After} asked for longer than {@code retryAfter.max}. */
  RETRY_AFTER_TOO_LONG,
  /** The circuit breaker was open. */
  CIRCUIT_OPEN,
  /** No rate-limit permit within {@code maxWait}. */
  RATE_LIMITED,
  /** Retries are disabled for this route. */
  RETRY_DISABLED,
  /** The caller cancelled or interrupted the call. */
  CANCELLED,
  /**
   * The caller's own timeout for the whole call (OkHttp's {@code callTimeout}) ended it, or would
   * pass before the next attempt could start.
   */
  CALL_TIMEOUT,
  /**
   * The application's own code failed the request, not the host: its request body (a body that
   * threw while it wrote, or wrote other than the length it declared). The caller gets that failure
   * as the client gave it; nothing is retried.
   */
  APPLICATION_FAILED,
  /**
   * The client found no connection in its own pool within its own wait for one (Apache HttpClient's
   * {@code connectionRequestTimeout}, the pool held by the application's other calls): nothing
   * reached the host, and the caller gets the client's exception as it gave it; nothing is retried.
   */
  POOL_TIMEOUT;

  /** Lower-case, hyphenated: for logs, metrics labels and dead letters. */
  public String label() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }
}
