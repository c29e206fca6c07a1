package dev.retryagent.engine;

import dev.retryagent.internal.observe.Sanitizer;
import java.io.IOException;
import java.time.Instant;

/**
 * Thrown instead of making a call while the breaker of its host (or route) is open: the call fails
 * at once, without touching the network. An {@link IOException}, so callers' existing error
 * handling already covers it. Made by the engine only; {@link #getMessage()} names the breaker and
 * when it lets trial calls through.
 *
 * <p>It is made for every call refused while the breaker is open, so it is cheap (issue 13): it
 * carries no stack trace (where it was thrown is the caller's own call to the client, and the
 * message names the breaker), and its message is written when first asked for.
 */
public final class CircuitBreakerOpenException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String breakerKey;
  private final long retryAtMillis;
  private final long inMillis;
  private transient String message;

  /**
   * @param retryAtMillis when the breaker lets trial calls through, on the wall clock
   * @param inMillis how long that is from now
   */
  CircuitBreakerOpenException(String breakerKey, long retryAtMillis, long inMillis) {
    super((String) null);
    this.breakerKey = breakerKey;
    this.retryAtMillis = retryAtMillis;
    this.inMillis = Math.max(0, inMillis);
  }

  @Override
  public String getMessage() {
    String m = message;
    if (m == null) {
      m =
          "retry-agent: circuit breaker for "
              + shownKey(breakerKey)
              + " is open; it will be tried again at "
              + retryAt()
              + " (in "
              + inMillis
              + " ms)";
      message = m;
    }
    return m;
  }

  /** No stack trace: see the class comment. */
  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }

  /** {@code scheme://host:port} or {@code route:name}. */
  public String breakerKey() {
    return breakerKey;
  }

  /** When the breaker lets trial calls through. */
  public Instant retryAt() {
    return Instant.ofEpochMilli(retryAtMillis);
  }

  /**
   * The key as the agent's log lines write it: a route's name quoted when outside the old rule (a
   * route named {@code x, observe}), a host on one line and cut past 253 characters: {@link
   * Sanitizer#breakerKey}, as the log lines write it.
   */
  private static String shownKey(String key) {
    if (key == null) {
      return "null";
    }
    return Sanitizer.breakerKey(key);
  }
}
