package dev.retryagent.engine;

import java.io.IOException;

/**
 * Thrown instead of making a call when the client-side rate limit of its host gives no permit
 * within {@code rateLimit.maxWait} (or while the host is paused after a 429, beyond the call's
 * deadline). An {@link IOException}, so callers' existing error handling already covers it. Made by
 * the engine only; {@link #getMessage()} says which limit refused and why.
 */
public final class RateLimitedException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String host;

  RateLimitedException(String host, String why) {
    super("retry-agent: rate limit for " + host + ": " + why);
    this.host = host;
  }

  /**
   * No permit for {@code host}: the wait would have passed {@code maxWait}, or the call's deadline
   * when fewer than {@code maxWait} remained; {@code pauseNanos} &gt; 0 when a 429 paused the host.
   * A pause is waited out first and {@code maxWait} counted from its end, so a pause that outlasts
   * the deadline is the reason itself, whatever {@code maxWait} is.
   */
  static RateLimitedException noPermit(
      String host, long remainingNanos, long maxWaitNanos, long pauseNanos) {
    if (pauseNanos > 0 && pauseNanos >= remainingNanos) {
      return new RateLimitedException(
          host,
          "the host is paused after 429 for another "
              + pauseNanos / 1_000_000
              + "ms, past the call's deadline ("
              + remainingNanos / 1_000_000
              + "ms left)");
    }
    String why =
        remainingNanos - pauseNanos < maxWaitNanos
            ? "no permit before the call's deadline (" + remainingNanos / 1_000_000 + "ms left)"
            : "no permit within maxWait " + maxWaitNanos / 1_000_000 + "ms";
    return new RateLimitedException(
        host,
        why
            + (pauseNanos > 0
                ? " (host paused after 429 for another " + pauseNanos / 1_000_000 + "ms)"
                : ""));
  }

  /** {@code scheme://host:port}. */
  public String host() {
    return host;
  }
}
