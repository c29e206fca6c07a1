package dev.retryagent.internal.observe;

import dev.retryagent.engine.GiveUpReason;
import java.util.ArrayList;
import java.util.List;

/**
 * What the agent did over the life of the JVM, one line per route, for the agent's shutdown hook:
 *
 * <pre>
 * retry-agent: summary [route=llm] calls=120 succeeded=110 failed=10 retries=25 gave-up=4 (attempts=2, deadline=1, not-idempotent=1) breaker-opens=2
 * </pre>
 *
 * <p>{@code gave-up} lists only the reasons that occurred; {@code would-retry}, {@code
 * would-fail-fast} and {@code would-rate-limit} appear only when observe mode counted some.
 */
public final class ExitSummary {
  private ExitSummary() {}

  /** One line per route seen, sorted by route; a single line saying so when there was no call. */
  public static List<String> lines(RetryMetrics metrics) {
    List<String> out = new ArrayList<>();
    for (String route : metrics.routes()) {
      out.add(line(route, metrics.route(route)));
    }
    if (out.isEmpty()) {
      out.add(LogLines.PREFIX + "summary: no calls went through the agent");
    }
    return out;
  }

  /** {@link #lines} joined with line breaks. */
  public static String text(RetryMetrics metrics) {
    return String.join(System.lineSeparator(), lines(metrics));
  }

  static String line(String route, CounterSnapshot c) {
    StringBuilder b =
        new StringBuilder(LogLines.PREFIX)
            .append("summary [route=")
            .append(Sanitizer.routeName(route))
            .append("] calls=")
            .append(c.calls())
            .append(" succeeded=")
            .append(c.succeeded())
            .append(" failed=")
            .append(c.failed())
            .append(" retries=")
            .append(c.retries());
    if (c.wouldRetry() > 0) {
      b.append(" would-retry=").append(c.wouldRetry());
    }
    b.append(" gave-up=").append(c.giveUps());
    if (c.giveUps() > 0) {
      String sep = " (";
      for (GiveUpReason r : GiveUpReason.values()) {
        if (c.giveUps(r) > 0) {
          b.append(sep).append(r.label()).append('=').append(c.giveUps(r));
          sep = ", ";
        }
      }
      b.append(')');
    }
    b.append(" breaker-opens=").append(c.breakerOpens());
    if (c.wouldFailFast() > 0) {
      b.append(" would-fail-fast=").append(c.wouldFailFast());
    }
    if (c.wouldRateLimit() > 0) {
      b.append(" would-rate-limit=").append(c.wouldRateLimit());
    }
    return b.toString();
  }
}
