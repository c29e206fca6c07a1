package dev.retryagent.fleet;

import static dev.retryagent.fleet.TestFleet.UP_TIMEOUT;
import static dev.retryagent.fleet.TestFleet.limit;
import static dev.retryagent.fleet.TestFleet.settings;
import static dev.retryagent.fleet.TestFleet.startUp;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.Clock;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.SetParams;

/** One JVM's fleet limit against a real Redis: the GCRA, refusals, keys, leases. */
@Timeout(60)
class FleetLimitTest {
  private static final long MS = 1_000_000L;
  private static final long LONG_WAIT = 30_000 * MS;
  private static final AtomicInteger PREFIXES = new AtomicInteger();

  private static RedisServerProcess redis;
  private final TestFleet.Lines log = new TestFleet.Lines();
  private FleetConnection fleet;

  @BeforeAll
  static void startRedis() throws Exception {
    redis = RedisServerProcess.start();
  }

  @AfterAll
  static void stopRedis() throws Exception {
    redis.close();
  }

  @AfterEach
  void closeFleet() {
    if (fleet != null) {
      fleet.close();
    }
  }

  private FleetRateLimiter limiter(double perSecond, int burst, int lease, Clock clock) {
    fleet =
        startUp(
            settings(redis.url())
                .keyPrefix("limit-" + PREFIXES.incrementAndGet())
                .leasePermits(lease)
                .build(),
            clock,
            log);
    return fleet.limiter("llm", limit(perSecond, burst), Duration.ofSeconds(60));
  }

  @Test
  void grantsTheBurstAtOnceThenReservesPermitsOneIntervalApart() {
    FleetRateLimiter limiter = limiter(10, 3, 1, Clock.SYSTEM);

    long[] waits = new long[6];
    for (int i = 0; i < waits.length; i++) {
      waits[i] = limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    }

    assertThat(waits[0]).isZero();
    assertThat(waits[1]).isZero();
    assertThat(waits[2]).isZero();
    // Permits 4, 5, 6 are reserved 100 ms apart, by Redis's clock (less the ms between calls).
    assertThat(waits[3]).isBetween(50 * MS, 100 * MS);
    assertThat(waits[4] - waits[3]).isBetween(70 * MS, 100 * MS);
    assertThat(waits[5] - waits[4]).isBetween(70 * MS, 100 * MS);
    assertThat(limiter.metrics().granted()).isEqualTo(6);
    assertThat(limiter.metrics().waited()).isEqualTo(3);
    assertThat(limiter.metrics().fallbacks()).isZero();
  }

  @Test
  void refusesAPermitFurtherAwayThanMaxWaitAndSpendsNothingOnIt() {
    FleetRateLimiter limiter = limiter(1, 1, 1, Clock.SYSTEM);

    long first = limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    long refused = limiter.reserve(System.nanoTime(), 100 * MS, LONG_WAIT);
    long next = limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

    assertThat(first).isZero();
    assertThat(refused).isEqualTo(FleetRateLimiter.REJECTED);
    // Had the refusal taken a permit, the next one would be two seconds away.
    assertThat(next).isBetween(700 * MS, 1000 * MS);
    assertThat(limiter.metrics().refused()).isEqualTo(1);
    assertThat(limiter.metrics().granted()).isEqualTo(2);
  }

  @Test
  void refusesWhenThePermitComesAfterTheCallersDeadline() {
    FleetRateLimiter limiter = limiter(1, 1, 1, Clock.SYSTEM);
    limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

    long wait = limiter.reserve(System.nanoTime(), LONG_WAIT, 300 * MS);

    assertThat(wait).isEqualTo(FleetRateLimiter.REJECTED);
  }

  @Test
  void keepsItsStateUnderKeyPrefixAndRouteWithExpiries() {
    FleetRateLimiter limiter = limiter(10, 5, 1, Clock.SYSTEM);
    String prefix = fleet.settings().keyPrefix();

    try (Jedis admin = redis.admin()) {
      // The bucket's key lives about 100 ms: read at once, on a connection already open.
      limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
      assertThat(admin.pttl(prefix + ":llm:gcra")).isBetween(1L, 1_000L);

      limiter.pauseFor(System.nanoTime(), 2_000 * MS);
      // Written to Redis by the fleet's thread.
      await().atMost(UP_TIMEOUT).until(() -> limiter.pauseWrites() == 1);
      assertThat(admin.pttl(prefix + ":llm:pause")).isBetween(1_000L, 2_001L);
      assertThat(admin.zrange(prefix + ":instances", 0, -1)).containsExactly(fleet.instanceId());
      assertThat(admin.pttl(prefix + ":instances")).isPositive();
    }
  }

  /**
   * A route name may hold a ':' (RouteKeys): route a:b under prefix P and route b under prefix P:a
   * were both keyed P:a:b, one bucket for two fleets' limits. The name is percent-encoded in the
   * key, so each keeps its own; a name of the earlier rule keeps its key (llm above).
   */
  @Test
  void aRouteNameWithAColonKeepsItsOwnBucket() {
    String prefix = "colon-" + PREFIXES.incrementAndGet();
    FleetConnection other =
        startUp(settings(redis.url()).keyPrefix(prefix + ":a").build(), Clock.SYSTEM, log);
    try {
      fleet = startUp(settings(redis.url()).keyPrefix(prefix).build(), Clock.SYSTEM, log);
      FleetRateLimiter ab = fleet.limiter("a:b", limit(0.1, 1), Duration.ofSeconds(60));
      FleetRateLimiter b = other.limiter("b", limit(0.1, 1), Duration.ofSeconds(60));

      assertThat(ab.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT)).isZero();
      // Sharing a:b's bucket, b's first permit would be ten seconds away.
      assertThat(b.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT)).isZero();
      try (Jedis admin = redis.admin()) {
        assertThat(admin.exists(prefix + ":a%3Ab:gcra")).isTrue();
        assertThat(admin.exists(prefix + ":a:b:gcra")).isTrue();
      }
      assertThat(ab.describe()).contains("under " + prefix + ":a%3Ab");
    } finally {
      other.close();
    }
  }

  @Test
  void aLeaseServesTheNextPermitsWithoutARoundTrip() {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    FleetRateLimiter limiter = limiter(100, 20, 5, clock);

    for (int i = 0; i < 5; i++) {
      assertThat(limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT)).isZero();
    }
    assertThat(limiter.metrics().redisCalls()).isEqualTo(1);
    assertThat(limiter.metrics().leased()).isEqualTo(4);

    limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT);
    assertThat(limiter.metrics().redisCalls()).isEqualTo(2);
  }

  @Test
  void aLeaseExpiresAfterOneSecondOfThisJvmsTime() {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    FleetRateLimiter limiter = limiter(100, 20, 5, clock);
    limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT);

    clock.advance(Duration.ofMillis(1_001));
    limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT);

    assertThat(limiter.metrics().redisCalls()).isEqualTo(2);
    assertThat(limiter.metrics().leased()).isZero();
  }

  @Test
  void aPauseDropsTheLeaseSoNoLeasedPermitSkipsIt() {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    FleetRateLimiter limiter = limiter(100, 20, 5, clock);
    limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT);

    limiter.pauseFor(clock.nanoTime(), 1_000 * MS);
    long wait = limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT);

    assertThat(wait).isBetween(900 * MS, 1_000 * MS);
    assertThat(limiter.metrics().leased()).isZero();
    assertThat(limiter.metrics().pausesHonoured()).isEqualTo(1);
  }

  @Test
  void noLeaseWhileTheBucketHasFewerPermitsThanTheLease() {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    FleetRateLimiter limiter = limiter(1, 20, 5, clock);
    // 4 leases of 5 empty the burst of 20; the next permit is a lone reservation.
    for (int i = 0; i < 20; i++) {
      assertThat(limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT)).isZero();
    }
    long wait = limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT);

    assertThat(limiter.metrics().redisCalls()).isEqualTo(5);
    assertThat(wait).isBetween(500 * MS, 1_000 * MS);
    assertThat(limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT)).isGreaterThan(wait);
  }

  /**
   * A fleet on a fake Redis that takes {@code roundTrip} (by {@code clock}) over each acquisition.
   */
  private FleetRateLimiter slowAcquisitions(
      FakeRedis fake, TestFleet.ManualClock clock, Duration roundTrip) {
    fleet = startUp(settings(fake.url()).build(), clock, log);
    fake.onCommand =
        command -> {
          if (command.get(0).equalsIgnoreCase("EVALSHA")
              && command.get(1).equals(Scripts.ACQUIRE.sha1)) {
            clock.advance(roundTrip);
          }
        };
    return fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));
  }

  @Test
  void aPermitWhoseWaitEndsPastTheDeadlineOnceTheRoundTripIsCountedIsRefused() throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    try (FakeRedis fake = new FakeRedis()) {
      FleetRateLimiter limiter = slowAcquisitions(fake, clock, Duration.ofMillis(300));
      // Redis grants a permit in 900 ms: within the 1 s the call had when it asked, but the reply
      // came 300 ms later, so the call would start 200 ms past its deadline.
      fake.scriptReply =
          sha ->
              sha.equals(Scripts.ACQUIRE.sha1) ? "*4\r\n:1\r\n:900000\r\n:0\r\n:0\r\n" : ":1\r\n";

      long wait = limiter.reserve(clock.nanoTime(), 1_000 * MS, 1_000 * MS);

      assertThat(wait).isEqualTo(FleetRateLimiter.REJECTED);
      assertThat(limiter.metrics().refused()).isEqualTo(1);
      // One that fits what the round trip left still waits, from the reply.
      fake.scriptReply =
          sha ->
              sha.equals(Scripts.ACQUIRE.sha1) ? "*4\r\n:1\r\n:600000\r\n:0\r\n:0\r\n" : ":1\r\n";
      assertThat(limiter.reserve(clock.nanoTime(), 1_000 * MS, 1_000 * MS)).isEqualTo(600 * MS);
    }
  }

  @Test
  void theLocalShareAfterARoundTripThatFailedHasOnlyWhatItLeftOfTheDeadline() throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    try (FakeRedis fake = new FakeRedis()) {
      FleetRateLimiter limiter = slowAcquisitions(fake, clock, Duration.ofMillis(300));
      // An error of the route's keys, after 300 ms: the local share (2.5/s, a burst of 1) decides.
      fake.scriptReply =
          sha -> sha.equals(Scripts.ACQUIRE.sha1) ? "-WRONGTYPE not ours\r\n" : ":1\r\n";
      assertThat(limiter.reserve(clock.nanoTime(), 1_000 * MS, 1_000 * MS)).isZero();

      // The next permit of the share is 400 ms after the first: 100 ms after this reply, which
      // came 300 ms into a call that had 350 ms; past its deadline from the time it asked.
      long wait = limiter.reserve(clock.nanoTime(), 350 * MS, 350 * MS);

      assertThat(wait).isEqualTo(FleetRateLimiter.REJECTED);
      assertThat(limiter.metrics().fallbacks()).isEqualTo(2);
    }
  }

  @Test
  void aPermitWhoseWaitEndsPastMaxWaitOnceTheRoundTripIsCountedIsRefused() throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    try (FakeRedis fake = new FakeRedis()) {
      FleetRateLimiter limiter = slowAcquisitions(fake, clock, Duration.ofMillis(300));
      // Redis grants a permit in 900 ms: within the maxWait of 1 s the call had when it asked,
      // but the reply came 300 ms later, so the call would wait 1.2 s for it. The deadline is
      // far.
      fake.scriptReply =
          sha ->
              sha.equals(Scripts.ACQUIRE.sha1) ? "*4\r\n:1\r\n:900000\r\n:0\r\n:0\r\n" : ":1\r\n";

      long wait = limiter.reserve(clock.nanoTime(), 1_000 * MS, LONG_WAIT);

      assertThat(wait).isEqualTo(FleetRateLimiter.REJECTED);
      assertThat(limiter.metrics().refused()).isEqualTo(1);
      // One that fits what the round trip left of maxWait still waits, from the reply.
      fake.scriptReply =
          sha ->
              sha.equals(Scripts.ACQUIRE.sha1) ? "*4\r\n:1\r\n:700000\r\n:0\r\n:0\r\n" : ":1\r\n";
      assertThat(limiter.reserve(clock.nanoTime(), 1_000 * MS, LONG_WAIT)).isEqualTo(700 * MS);
      // A permit granted at once is no wait for one: the round trip is Redis's (commandTimeout).
      fake.scriptReply =
          sha -> sha.equals(Scripts.ACQUIRE.sha1) ? "*4\r\n:1\r\n:0\r\n:0\r\n:0\r\n" : ":1\r\n";
      assertThat(limiter.reserve(clock.nanoTime(), 0, LONG_WAIT)).isZero();
    }
  }

  @Test
  void aRoundTripDuringAPauseIsNotCountedAgainstMaxWait() throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    try (FakeRedis fake = new FakeRedis()) {
      FleetRateLimiter limiter = slowAcquisitions(fake, clock, Duration.ofMillis(300));
      // Another JVM's pause of 2 s, then the permit 900 ms after it: maxWait counts from the end
      // of the pause, which the round trip came before.
      fake.scriptReply =
          sha ->
              sha.equals(Scripts.ACQUIRE.sha1)
                  ? "*4\r\n:1\r\n:2900000\r\n:2000000\r\n:0\r\n"
                  : ":1\r\n";

      assertThat(limiter.reserve(clock.nanoTime(), 1_000 * MS, LONG_WAIT)).isEqualTo(2_900 * MS);
    }
  }

  @Test
  void theLocalShareAfterARoundTripThatFailedHasOnlyWhatItLeftOfMaxWait() throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    try (FakeRedis fake = new FakeRedis()) {
      FleetRateLimiter limiter = slowAcquisitions(fake, clock, Duration.ofMillis(300));
      // An error of the route's keys, after 300 ms: the local share (2.5/s, a burst of 1) decides.
      fake.scriptReply =
          sha -> sha.equals(Scripts.ACQUIRE.sha1) ? "-WRONGTYPE not ours\r\n" : ":1\r\n";
      assertThat(limiter.reserve(clock.nanoTime(), 1_000 * MS, LONG_WAIT)).isZero();

      // The next permit of the share is 400 ms after the first: 100 ms after this reply, which
      // came 300 ms into a call whose maxWait was 350 ms; past it from the time it asked.
      long wait = limiter.reserve(clock.nanoTime(), 350 * MS, LONG_WAIT);

      assertThat(wait).isEqualTo(FleetRateLimiter.REJECTED);
      assertThat(limiter.metrics().fallbacks()).isEqualTo(2);
    }
  }

  @Test
  void aRoundTripNeverHoldsTheCallPastItsDeadline() throws Exception {
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    try (FakeRedis fake = new FakeRedis()) {
      fleet =
          startUp(
              settings(fake.url()).commandTimeout(Duration.ofSeconds(10)).build(),
              Clock.SYSTEM,
              log);
      FleetRateLimiter limiter = fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));
      // Redis takes its time over the acquisition, within commandTimeout.
      fake.scriptReply =
          sha -> {
            if (sha.equals(Scripts.ACQUIRE.sha1)) {
              TestFleet.holdUntil(release);
            }
            return ":1\r\n";
          };

      long start = System.nanoTime();
      long wait = limiter.reserve(start, LONG_WAIT, 300 * MS);
      long took = System.nanoTime() - start;
      release.countDown();

      // The call's deadline was 300 ms away: the local share decided then, not 10 s later.
      assertThat(took).isLessThan(5_000 * MS);
      assertThat(wait).isZero();
      assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
      // The call's own time ran out, not Redis's: no outage.
      assertThat(fleet.isUp()).isTrue();
      assertThat(fleet.outages()).isZero();
    } finally {
      release.countDown();
    }
  }

  /**
   * Above a million permits a second the interval is under a microsecond, while Redis's clock in
   * microseconds is about 1.8e15, where a double steps by 0.25: the theoretical arrival time moved
   * on by 0.1 µs stayed where it was, and the limit limited nothing. Each permit moves it on by its
   * interval, whatever the clock.
   */
  @Test
  void aLimitAboveAMillionPerSecondMovesTheArrivalTimeOnByEachPermit() {
    FleetRateLimiter limiter = limiter(10_000_000, 1, 1, Clock.SYSTEM);
    String key = fleet.settings().keyPrefix() + ":llm:gcra";
    long start;
    try (Jedis admin = redis.admin()) {
      List<String> time = admin.time();
      // Ten seconds of permits reserved already: every permit below waits behind them.
      start = Long.parseLong(time.get(0)) * 1_000_000 + Long.parseLong(time.get(1)) + 10_000_000;
      admin.set(key, Long.toString(start), SetParams.setParams().px(60_000));
    }

    for (int i = 0; i < 1000; i++) {
      assertThat(limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT))
          .isBetween(8_000 * MS, 10_000 * MS);
    }

    try (Jedis admin = redis.admin()) {
      BigDecimal tat = new BigDecimal(admin.get(key));
      // 1000 permits of 0.1 µs each: 100 µs.
      assertThat(tat.subtract(BigDecimal.valueOf(start)).doubleValue()).isBetween(99.9, 100.1);
    }
  }
}
