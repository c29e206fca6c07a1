package dev.retryagent.fleet;

import dev.retryagent.engine.Clock;
import dev.retryagent.observe.Sinks;
import java.time.Duration;

/**
 * Forked by {@link FleetTlsTest}, whose trust store is a JVM-wide setting: joins the fleet at the
 * {@code rediss://} URL given, waits up to a few seconds for it, acquires once and prints what
 * happened. Log lines go to stderr.
 */
public final class TlsProbe {
  private TlsProbe() {}

  public static void main(String[] args) throws Exception {
    try (FleetConnection fleet =
        FleetConnection.start(TestFleet.settings(args[0]).build(), Clock.SYSTEM, Sinks.stderr())) {
      long end = System.nanoTime() + 5_000_000_000L;
      // A forked JVM without the test's helpers at hand: a bounded poll is its await.
      while (!fleet.isUp() && fleet.failedConnects() < 3 && System.nanoTime() - end < 0) {
        Thread.sleep(20);
      }
      FleetRateLimiter limiter =
          fleet.limiter("llm", TestFleet.limit(10, 5), Duration.ofSeconds(60));
      long wait = limiter.reserve(System.nanoTime(), 0, 0);
      System.out.println(
          "state="
              + fleet.state()
              + " wait="
              + wait
              + " redisCalls="
              + limiter.metrics().redisCalls()
              + " fallbacks="
              + limiter.metrics().fallbacks());
    }
  }
}
