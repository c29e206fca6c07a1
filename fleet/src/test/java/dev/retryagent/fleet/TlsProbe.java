package dev.retryagent.fleet;

import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.Clock;
import dev.retryagent.internal.observe.Sinks;
import java.time.Duration;

/**
 * Forked by {@link FleetTlsTest}, whose trust store is a JVM-wide setting: joins the fleet at the
 * {@code rediss://} URL given, waits until it is up or has failed twice, acquires once and prints
 * what happened. Log lines go to stderr.
 */
public final class TlsProbe {
  private TlsProbe() {}

  public static void main(String[] args) throws Exception {
    try (FleetConnection fleet =
        FleetConnection.start(TestFleet.settings(args[0]).build(), Clock.SYSTEM, Sinks.stderr())) {
      // A TLS handshake in a fresh JVM is slow on a loaded two-core machine: bounded well inside
      // the 60 s the test gives this process.
      await()
          .atMost(Duration.ofSeconds(40))
          .until(() -> fleet.isUp() || fleet.failedConnects() >= 2);
      FleetRateLimiter limiter =
          fleet.limiter("llm", TestFleet.limit(10, 5), Duration.ofSeconds(60));
      // No wait for a permit; a deadline far enough for a slow machine's round trip.
      long wait = limiter.reserve(System.nanoTime(), 0, 30_000_000_000L);
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
