package dev.retryagent.fleet;

import static dev.retryagent.fleet.TestFleet.UP_TIMEOUT;
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
import redis.clients.jedis.Jedis;
import redis.clients.jedis.args.ClientPauseMode;

/**
 * The fleet-wide 429 pause: set by one JVM, honoured by all until it passes, extended by a longer
 * one, never shortened, bounded by {@code retryAfter.max}. Three connections stand for three JVMs.
 */
@Timeout(60)
class FleetPauseTest {
  private static final long MS = 1_000_000L;
  private static final long LONG_WAIT = 30_000 * MS;
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

  /** Three JVMs' limiters of one route, with {@code retryAfter.max} = {@code max}. */
  private FleetRateLimiter[] jvms(Duration max) {
    FleetSettings shared =
        settings(redis.url())
            .keyPrefix("pause-" + PREFIXES.incrementAndGet())
            // Short enough for the CLIENT PAUSE below to be an outage, long enough for a loaded
            // machine to answer every other command.
            .commandTimeout(Duration.ofMillis(300))
            .build();
    FleetRateLimiter[] limiters = new FleetRateLimiter[3];
    for (int i = 0; i < limiters.length; i++) {
      FleetConnection c = startUp(shared, Clock.SYSTEM, log);
      fleets.add(c);
      limiters[i] = c.limiter("llm", limit(50, 20), max);
    }
    return limiters;
  }

  private static long now() {
    return System.nanoTime();
  }

  @Test
  void aPauseSetByOneJvmHoldsEveryOtherUntilItPasses() {
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(60));

    jvm[0].pauseFor(now(), 2_000 * MS);

    assertThat(jvm[1].reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(1_500 * MS, 2_000 * MS);
    assertThat(jvm[2].reserve(now(), LONG_WAIT, 1_000 * MS)).isEqualTo(FleetRateLimiter.REJECTED);
    assertThat(jvm[2].pauseRemainingNanos(now())).isBetween(1_000 * MS, 2_000 * MS);
    assertThat(jvm[0].metrics().pausesSet()).isEqualTo(1);
    assertThat(jvm[1].metrics().pausesHonoured()).isEqualTo(1);
    assertThat(jvm[2].metrics().pausesHonoured()).isEqualTo(1);

    await().atMost(Duration.ofSeconds(5)).until(() -> jvm[2].reserve(now(), 0, 0) == 0);
  }

  @Test
  void aLongerPauseExtendsItAndAShorterOneNeverShortensIt() {
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(60));

    jvm[0].pauseFor(now(), 1_000 * MS);
    jvm[1].pauseFor(now(), 3_000 * MS);
    long left = jvm[0].pauseFor(now(), 500 * MS);

    assertThat(left).isBetween(2_500 * MS, 3_000 * MS);
    assertThat(jvm[2].reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(2_500 * MS, 3_000 * MS);
    assertThat(jvm[0].metrics().pausesSet()).isEqualTo(1);
    assertThat(jvm[1].metrics().pausesSet()).isEqualTo(1);
  }

  @Test
  void aPauseIsNeverLongerThanRetryAfterMax() {
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(2));

    jvm[0].pauseFor(now(), 3_600_000 * MS);

    assertThat(jvm[1].reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(1_500 * MS, 2_000 * MS);
    try (Jedis admin = redis.admin()) {
      String key = fleets.get(0).settings().keyPrefix() + ":llm:pause";
      assertThat(admin.pttl(key)).isBetween(1_000L, 2_001L);
    }
  }

  @Test
  void aJvmNeverHonoursAFleetPauseLongerThanItsOwnRetryAfterMax() {
    // A rolling change of retryAfter.max: one JVM still allows an hour, this one two seconds.
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(3_600));
    FleetRateLimiter shorter =
        fleets.get(1).limiter("llm-short", limit(50, 20), Duration.ofSeconds(2));
    FleetRateLimiter longer =
        fleets.get(0).limiter("llm-short", limit(50, 20), Duration.ofSeconds(3_600));

    longer.pauseFor(now(), 3_600_000 * MS);

    assertThat(shorter.reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(1_500 * MS, 2_000 * MS);
    assertThat(shorter.pauseRemainingNanos(now())).isBetween(1_500 * MS, 2_000 * MS);
    // Extending it from here, the answer is Redis's longer deadline: still this JVM's bound.
    assertThat(shorter.pauseFor(now(), 1_000 * MS)).isBetween(1_500 * MS, 2_000 * MS);
    // A JVM that allows the hour still honours it: its callers cannot wait that long.
    assertThat(jvm[2].reserve(now(), LONG_WAIT, LONG_WAIT)).isZero();
    FleetRateLimiter third =
        fleets.get(2).limiter("llm-short", limit(50, 20), Duration.ofSeconds(3_600));
    assertThat(third.reserve(now(), LONG_WAIT, LONG_WAIT)).isEqualTo(FleetRateLimiter.REJECTED);
  }

  @Test
  void waitersForAPauseAreSpreadByTheLimitWhenItEnds() {
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(60));
    jvm[0].pauseFor(now(), 1_000 * MS);

    List<Long> waits = new ArrayList<>();
    for (int i = 0; i < 24; i++) {
      waits.add(jvm[i % 3].reserve(now(), LONG_WAIT, LONG_WAIT));
    }

    // The burst of 20 goes when the pause ends, then one permit every 20 ms (50/s).
    assertThat(waits.subList(0, 20)).allSatisfy(w -> assertThat(w).isBetween(900 * MS, 1_000 * MS));
    assertThat(waits.get(23) - waits.get(19)).isBetween(70 * MS, 80 * MS);
  }

  @Test
  void aPauseSetWhileRedisIsAwayHoldsLocallyAndReachesTheFleetWhenItIsBack() {
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(60));
    try (Jedis admin = redis.admin()) {
      admin.clientPause(1_500, ClientPauseMode.ALL);
    }

    jvm[0].pauseFor(now(), 6_000 * MS);

    assertThat(jvm[0].reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(5_000 * MS, 6_000 * MS);
    assertThat(jvm[0].metrics().fallbacks()).isEqualTo(1);
    assertThat(jvm[0].metrics().pausesSet()).isEqualTo(1);
    await().atMost(UP_TIMEOUT).until(() -> fleets.stream().allMatch(FleetConnection::isUp));
    // Written back on reconnect: a JVM that never saw the 429 now waits for it.
    assertThat(jvm[2].reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(1_000 * MS, 6_000 * MS);
    assertThat(jvm[2].metrics().pausesHonoured()).isEqualTo(1);
  }
}
