package dev.retryagent.it.load;

import java.nio.file.Path;

/**
 * The soak's configuration, in three variants the test cycles through on reload (0, 1, 2, 0, ...):
 * 0 to 1 changes the retry section only (breakers, budgets and limiters are kept), 1 to 2 also the
 * breaker section (new breakers), 2 to 0 goes back to the first breaker section (whose breakers are
 * still tracked). Routes and their names never change, so counters compare per route.
 *
 * <p>Everything is on: retries with short backoff (an idempotency key makes a POST retryable), the
 * attempt header the server counts by, a per-host budget, a host breaker shared by the routes that
 * inherit it and a route breaker on {@code url}, a per-host rate limit and a tight one of its own
 * for {@code apache} (so both waits and rejections happen). The host breaker opens at 70% failures
 * over 50 attempts, which a server failing 30% of them at random hardly ever reaches: most calls
 * reach the server, the load is real (with a 50% threshold over 20, the breaker was open most of
 * the time and 97% of the calls were refused at once). The {@code url} route's own breaker (45%
 * over 20) opens and closes all through the run, so refusals, half-open trials and reopenings are
 * exercised under load too. The log level is {@code error}: the call lines of a soak would be
 * millions; the agent's own lines (start-up, reload, internal errors) are printed at every level.
 */
final class SoakConfig {
  static final String[] ROUTES = {
    "jdk-send", "jdk-async", "ok-execute", "ok-enqueue", "url", "apache"
  };
  static final int VARIANTS = 3;

  private SoakConfig() {}

  static String yaml(int variant, int prometheusPort, Path deadLetters) {
    int maxAttempts = variant == 1 ? 4 : 3;
    String openFor = variant == 2 ? "400ms" : "300ms";
    StringBuilder y = new StringBuilder();
    y.append("agent:\n")
        .append("  log: { level: error }\n")
        .append("  metrics: { jmx: true, prometheus: { enabled: true, host: 127.0.0.1, port: ")
        .append(prometheusPort)
        .append(" } }\n")
        .append("  deadLetter: { path: \"")
        .append(deadLetters)
        .append("\" }\n")
        .append("defaults:\n")
        .append("  retry:\n")
        .append("    maxAttempts: ")
        .append(maxAttempts)
        .append("\n")
        .append("    unsafeMethods: if-idempotency-key\n")
        .append("    attemptHeader: ")
        .append(SoakServer.ATTEMPT_HEADER)
        .append("\n")
        .append("    backoff: { initial: 2ms, max: 20ms, jitter: full }\n")
        .append("  budget: { ratio: 0.1, minPerSecond: 5, window: 10s }\n")
        .append("  circuitBreaker:\n")
        .append("    window: { type: count, size: 50 }\n")
        .append("    minimumCalls: 20\n")
        .append("    failureRateThreshold: 70%\n")
        .append("    openFor: ")
        .append(openFor)
        .append("\n")
        .append("    halfOpenCalls: 3\n")
        .append("  rateLimit: { enabled: true, perSecond: 20000, burst: 2000, maxWait: 20ms }\n")
        .append("routes:\n");
    for (String route : ROUTES) {
      y.append("  - name: ").append(route).append("\n");
      y.append("    match: { paths: [\"/").append(route).append("/**\"] }\n");
      if (route.equals("url")) {
        y.append("    circuitBreaker:\n");
        y.append("      { scope: route, window: { type: count, size: 20 }, minimumCalls: 10,")
            .append(" failureRateThreshold: 45% }\n");
      }
      if (route.equals("apache")) {
        y.append("    rateLimit: { perSecond: 100, burst: 10, maxWait: 5ms }\n");
      }
    }
    return y.toString();
  }
}
