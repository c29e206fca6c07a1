package dev.retryagent.fleet;

import static dev.retryagent.fleet.TestFleet.limit;
import static dev.retryagent.fleet.TestFleet.settings;
import static dev.retryagent.fleet.TestFleet.startUp;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Several instances (a connection each, as separate JVMs would have) share one limit: together they
 * never exceed it in any second, each gets a fair share, and leases exceed it by no more than the
 * leases outstanding.
 */
@Timeout(60)
class FleetShareTest {
  private static final long MS = 1_000_000L;
  private static final long SECOND = 1_000 * MS;
  private static final AtomicInteger PREFIXES = new AtomicInteger();

  private static RedisServerProcess redis;
  private final List<FleetConnection> fleets = new ArrayList<>();
  private final TestFleet.Lines log = new TestFleet.Lines();

  @BeforeAll
  static void startRedis() throws Exception {
    redis = RedisServerProcess.start();
  }

  @AfterAll
  static void stopRedis() throws Exception {
    redis.close();
  }

  @AfterEach
  void closeFleets() {
    fleets.forEach(FleetConnection::close);
  }

  private FleetRateLimiter[] instances(int n, double perSecond, int burst, int lease) {
    FleetSettings shared =
        settings(redis.url())
            .keyPrefix("share-" + PREFIXES.incrementAndGet())
            .leasePermits(lease)
            .build();
    FleetRateLimiter[] limiters = new FleetRateLimiter[n];
    for (int i = 0; i < n; i++) {
      FleetConnection c = startUp(shared, Clock.SYSTEM, log);
      fleets.add(c);
      limiters[i] = c.limiter("llm", limit(perSecond, burst), Duration.ofSeconds(60));
    }
    return limiters;
  }

  @Test
  void threeInstancesNeverExceedTheLimitInAnySecondAndEachGetsAFairShare() throws Exception {
    double perSecond = 30;
    int burst = 6;
    FleetRateLimiter[] limiters = instances(3, perSecond, burst, 1);
    long start = System.nanoTime();
    long end = start + 3 * SECOND;

    List<PermitLoad> loads = new ArrayList<>();
    for (int i = 0; i < limiters.length; i++) {
      loads.add(new PermitLoad("jvm" + i, limiters[i], 2, 5 * SECOND, end, t -> {}).start());
    }
    for (PermitLoad load : loads) {
      load.join(20_000);
    }

    List<PermitLoad.Permit> permits = new ArrayList<>();
    List<Long> used = new ArrayList<>();
    for (PermitLoad load : loads) {
      assertThat(load.errors).isEmpty();
      assertThat(load.refused.get()).isZero();
      permits.addAll(load.permits);
      load.permits.forEach(p -> used.add(p.used));
    }
    for (FleetRateLimiter l : limiters) {
      assertThat(l.metrics().fallbacks()).as("fallbacks").isZero();
    }
    int limitPerSecond = (int) perSecond + burst;
    // As Redis timed them: never more than perSecond + burst in any second (+1: the GCRA's
    // microsecond rounding at the window's edges).
    assertThat(PermitLoad.maxInAnyWindow(permits, SECOND)).isLessThanOrEqualTo(limitPerSecond + 1);
    // As a server would count them, when used: the same, give or take thread scheduling.
    assertThat(PermitLoad.maxUsedInAnyWindow(used, SECOND)).isLessThanOrEqualTo(limitPerSecond + 3);
    // Over the whole run: at most burst + perSecond * span, and the demand really reached it.
    double span = PermitLoad.span(permits) / 1e9;
    assertThat(permits.size())
        .isBetween((int) (perSecond * span) - 3, (int) (burst + perSecond * span) + 1);
    for (PermitLoad load : loads) {
      assertThat((double) load.permits.size() / permits.size()).isBetween(0.25, 0.42);
    }
  }

  @Test
  void leasesExceedTheLimitByNoMoreThanTheLeasesOutstanding() throws Exception {
    double perSecond = 300;
    int burst = 40;
    int lease = 10;
    FleetRateLimiter[] limiters = instances(3, perSecond, burst, lease);
    // Each instance takes a lease of 10 from the full bucket (30 of 40) and keeps 9...
    for (FleetRateLimiter l : limiters) {
      // No wait for a permit, and no deadline near enough to cut the round trip short.
      assertThat(l.reserve(System.nanoTime(), 0, 30 * SECOND)).isZero();
    }
    // ...then the bucket fills again (40 permits at 300/s: 133 ms), leases still held.
    long filled = System.nanoTime() + 150 * MS;
    await().atMost(Duration.ofSeconds(1)).until(() -> System.nanoTime() - filled >= 0);

    long start = System.nanoTime();
    long end = start + SECOND;
    List<PermitLoad> loads = new ArrayList<>();
    for (int i = 0; i < limiters.length; i++) {
      loads.add(new PermitLoad("jvm" + i, limiters[i], 3, 50 * MS, end, t -> {}).start());
    }
    for (PermitLoad load : loads) {
      load.join(20_000);
    }

    List<PermitLoad.Permit> permits = new ArrayList<>();
    for (PermitLoad load : loads) {
      assertThat(load.errors).isEmpty();
      permits.addAll(load.permits);
    }
    long inTheSecond = PermitLoad.countWithin(permits, start, SECOND);
    for (FleetRateLimiter l : limiters) {
      assertThat(l.metrics().fallbacks()).as("fallbacks").isZero();
    }
    int outstanding = limiters.length * (lease - 1);
    assertThat(inTheSecond).isLessThanOrEqualTo((long) perSecond + burst + outstanding + 1);
    long leased = 0;
    long calls = 0;
    long granted = 0;
    for (FleetRateLimiter l : limiters) {
      leased += l.metrics().leased();
      calls += l.metrics().redisCalls();
      granted += l.metrics().granted();
    }
    assertThat(leased).isGreaterThanOrEqualTo(outstanding);
    assertThat(calls).isLessThan(granted);
    System.out.printf(
        "leases: %d permits in the second (bound %d), %d leased, %d round trips for %d permits%n",
        inTheSecond, (long) perSecond + burst + outstanding, leased, calls, granted);
  }
}
