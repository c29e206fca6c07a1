package dev.retryagent.engine;

import java.io.IOException;

/**
 * Thrown instead of making a call when the client-side rate limit of its host gives no permit
 * within {@code rateLimit.maxWait} (or while the host is paused after a 429, beyond the call's
 * deadline).
 */
public final class RateLimitedException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String host;

  public RateLimitedException(String host, String why) {
    super("retry-agent: rate limit for " + host + ": " + why);
    this.host = host;
  }

  /** {@code scheme://host:port}. */
  public String host() {
    return host;
  }
}
