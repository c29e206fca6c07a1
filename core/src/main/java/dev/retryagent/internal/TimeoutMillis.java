package dev.retryagent.internal;

/**
 * The rule of {@code dev.retryagent.engine.CallBounds#shorterTimeout} for clients whose timeouts
 * are whole milliseconds and take 0 for none (HttpURLConnection, Apache HttpClient 4.5; 5.x rounds
 * its bound with {@link #roundedUp}).
 */
public final class TimeoutMillis {
  private static final long NANOS_PER_MILLI = 1_000_000L;

  private TimeoutMillis() {}

  /**
   * The application's timeout, shortened to the attempt's bound when that is shorter.
   *
   * @param applicationMillis the application's timeout; 0 or less: none (infinite, or left to the
   *     client), which the bound then replaces
   * @param attemptNanos the policy's bound on the attempt ({@code
   *     RetryCall.attemptTimeoutNanos()}), or -1 for none: {@code applicationMillis} is returned as
   *     it is
   * @return {@code applicationMillis}, or the bound rounded up to a whole millisecond, never 0
   *     (which the clients read as no timeout at all)
   */
  public static int shorter(int applicationMillis, long attemptNanos) {
    if (attemptNanos < 0) {
      return applicationMillis;
    }
    int attempt = (int) Math.min(Integer.MAX_VALUE, roundedUp(attemptNanos));
    return applicationMillis <= 0 ? attempt : Math.min(applicationMillis, attempt);
  }

  /**
   * A bound of {@code nanos} (0 or more) in whole milliseconds, rounded up: at least 1, since 0 is
   * no timeout at all to these clients.
   */
  public static long roundedUp(long nanos) {
    // Without overflow for the longest bound: (n - 1) / 10^6 + 1 is ceil(n / 10^6) for n > 0, and
    // 1 for 0.
    return (nanos - 1) / NANOS_PER_MILLI + 1;
  }
}
