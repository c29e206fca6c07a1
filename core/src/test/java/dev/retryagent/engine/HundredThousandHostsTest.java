package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.internal.observe.RetryMetrics;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.testing.FakeRequest;
import java.lang.management.ManagementFactory;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Issue 14, "Load and time": a service that calls 100,000 distinct hosts, every one of which fails
 * (so no breaker is ever idle, the worst case for the registries). Breakers, budgets and rate
 * limiters stay within {@code maxHosts} (the contract's default, 10,000), the metrics within their
 * own bound of 1,000 hosts plus {@code other}, and the heap the engine keeps stops growing once the
 * bound is reached. Fake clock, no sleeping, no thread: the engine alone.
 */
class HundredThousandHostsTest {
  private static final int HOSTS = 100_000;
  private static final int MAX_HOSTS = CircuitBreakerPolicy.DEFAULT_MAX_HOSTS;

  private final FakeClock clock = new FakeClock();
  private final RetryMetrics metrics = new RetryMetrics();
  private final RetryEngine engine;

  HundredThousandHostsTest() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(2);
    p.rateLimit.enabled(true);
    engine =
        RetryEngine.builder()
            .clock(clock)
            .sleeper(clock::advance) // records nothing: the heap measured is the engine's
            .scheduler(new ManualScheduler(clock))
            .random(new ScriptedRandom(0.5))
            .policy(p.build())
            .listener(metrics)
            .build();
  }

  private static String host(int i) {
    return "h" + i + ".example";
  }

  /** One call to host {@code i}: 503, retried once, 503 again. */
  private void callFailingHost(int i) {
    Script script = new Script(clock, Script.respond(503), Script.respond(503));
    try {
      SyncRetryLoop.execute(
          engine.newCall(FakeRequest.of("GET", host(i))),
          engine.sleeper(),
          script::runSync,
          FakeResponse.ACCESS);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    clock.advance(1_000_000);
  }

  @Test
  void registriesStayWithinMaxHostsAndTheHeapStopsGrowingAtTheBound() {
    for (int i = 0; i < 2 * MAX_HOSTS; i++) {
      callFailingHost(i);
    }
    long atTwiceTheBound = retainedHeap();
    for (int i = 2 * MAX_HOSTS; i < HOSTS; i++) {
      callFailingHost(i);
    }
    long atTheEnd = retainedHeap();

    assertThat(engine.trackedTargets()).isEqualTo(MAX_HOSTS);
    assertThat(engine.breakers()).hasSize(MAX_HOSTS);
    // Every breaker holds a failure, so none is idle: the least recently used go, the newest stay.
    assertThat(engine.breakers().stream().map(CircuitBreaker::key).collect(Collectors.toList()))
        .isEqualTo(
            IntStream.range(HOSTS - MAX_HOSTS, HOSTS)
                .mapToObj(i -> "http://" + host(i) + ":80")
                .collect(Collectors.toList()));
    assertThat(metrics.trackedHosts()).isEqualTo(RetryMetrics.DEFAULT_MAX_HOSTS);
    assertThat(metrics.hosts()).hasSize(RetryMetrics.DEFAULT_MAX_HOSTS + 1);
    assertThat(metrics.host(RetryMetrics.OTHER_HOST).calls())
        .isEqualTo(HOSTS - RetryMetrics.DEFAULT_MAX_HOSTS);
    assertThat(metrics.total().calls()).isEqualTo(HOSTS);
    assertThat(metrics.total().attempts()).isEqualTo(2L * HOSTS);

    // 80,000 more hosts past the bound: a leak of 13 bytes per host would fail this.
    assertThat(atTheEnd - atTwiceTheBound)
        .as("heap growth from %d to %d hosts (bytes)", 2 * MAX_HOSTS, HOSTS)
        .isLessThan(1L << 20);
    System.out.printf(
        "100,000 hosts: %d tracked; heap after GC %d KiB at %d hosts, %d KiB at %d%n",
        engine.trackedTargets(), atTwiceTheBound >> 10, 2 * MAX_HOSTS, atTheEnd >> 10, HOSTS);
  }

  @Test
  void tenThousandTrackedHostsKeepLessThanThirtyTwoMebibytes() {
    long empty = retainedHeap();
    for (int i = 0; i < MAX_HOSTS; i++) {
      callFailingHost(i);
    }
    long full = retainedHeap();
    assertThat(engine.trackedTargets()).isEqualTo(MAX_HOSTS);
    // Measured: about 1 KiB per host (a breaker with its window of 50, a budget, a limiter, and
    // the metrics of the first 1,000 hosts); the bound leaves room for other JVMs' layouts.
    assertThat(full - empty).isLessThan(32L << 20);
    System.out.printf(
        "%d tracked hosts (breaker, budget, limiter; metrics for 1,000): %d KiB retained%n",
        MAX_HOSTS, (full - empty) >> 10);
  }

  /** Heap in use after full collections: what is reachable. */
  private static long retainedHeap() {
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 3; i++) {
      System.gc();
      used = Math.min(used, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
    }
    return used;
  }
}
