package dev.retryagent.engine;

import java.io.IOException;
import java.time.Instant;

/**
 * Thrown instead of making a call while the breaker of its host (or route) is open: the call fails
 * at once, without touching the network. An {@link IOException}, so callers' existing error
 * handling already covers it. Made by the engine only; {@link #getMessage()} names the breaker and
 * when it lets trial calls through.
 */
public final class CircuitBreakerOpenException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String breakerKey;
  private final transient Instant retryAt;

  CircuitBreakerOpenException(String breakerKey, Instant retryAt, long inMillis) {
    super(
        "retry-agent: circuit breaker for "
            + breakerKey
            + " is open; it will be tried again at "
            + retryAt
            + " (in "
            + Math.max(0, inMillis)
            + " ms)");
    this.breakerKey = breakerKey;
    this.retryAt = retryAt;
  }

  /** {@code scheme://host:port} or {@code route:name}. */
  public String breakerKey() {
    return breakerKey;
  }

  /** When the breaker lets trial calls through. */
  public Instant retryAt() {
    return retryAt;
  }
}
