package dev.retryagent.fleet;

import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.Clock;
import dev.retryagent.policy.RateLimitPolicy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/** What the fleet tests share: fast settings, a recording log, limits. */
final class TestFleet {
  /** Long enough for a loaded 2-core machine, short next to the test timeouts. */
  static final Duration UP_TIMEOUT = Duration.ofSeconds(10);

  private TestFleet() {}

  /**
   * For tests of the limit itself: a faster heartbeat and reconnect, and a command timeout of a
   * second, so that a loaded machine (CI's two cores) does not turn them into outage tests where
   * the local share decides.
   */
  static FleetSettings.Builder settings(String url) {
    return outageSettings(url).commandTimeout(Duration.ofSeconds(1));
  }

  /**
   * For outage tests: the default timeouts (50 ms per command, 200 ms to connect), with a faster
   * heartbeat and reconnect so that they take seconds.
   */
  static FleetSettings.Builder outageSettings(String url) {
    return FleetSettings.builder(url)
        .heartbeatInterval(Duration.ofMillis(200))
        .reconnectBackoff(Duration.ofMillis(50), Duration.ofMillis(400));
  }

  static RateLimitPolicy limit(double perSecond, int burst) {
    return RateLimitPolicy.builder()
        .enabled(true)
        .perSecond(perSecond)
        .burst(burst)
        .maxWait(Duration.ofSeconds(30))
        .build();
  }

  static FleetConnection startUp(FleetSettings settings, Clock clock, Consumer<String> log) {
    FleetConnection c = FleetConnection.start(settings, clock, log);
    await("fleet up").atMost(UP_TIMEOUT).until(c::isUp);
    return c;
  }

  /**
   * Holds the calling thread (a fake Redis's reply, a slow look-up) until the test counts {@code
   * latch} down, at most 30 s; an interrupt ends the hold and is kept.
   */
  static void holdUntil(CountDownLatch latch) {
    try {
      latch.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** A log sink that keeps every line. */
  static final class Lines implements Consumer<String> {
    final List<String> lines = new CopyOnWriteArrayList<>();

    @Override
    public void accept(String line) {
      lines.add(line);
    }

    long count(String fragment) {
      return lines.stream().filter(l -> l.contains(fragment)).count();
    }

    @Override
    public String toString() {
      return String.join("\n", lines);
    }
  }

  /** A clock the test moves by hand, for what is timed by the JVM (local share, leases). */
  static final class ManualClock implements Clock {
    private volatile long nanos = 1_000_000_000L;

    @Override
    public long nanoTime() {
      return nanos;
    }

    @Override
    public long wallMillis() {
      return nanos / 1_000_000;
    }

    void advance(Duration d) {
      nanos += d.toNanos();
    }
  }
}
