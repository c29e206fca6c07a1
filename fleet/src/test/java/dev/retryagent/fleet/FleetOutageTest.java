package dev.retryagent.fleet;

import static dev.retryagent.fleet.TestFleet.UP_TIMEOUT;
import static dev.retryagent.fleet.TestFleet.limit;
import static dev.retryagent.fleet.TestFleet.outageSettings;
import static dev.retryagent.fleet.TestFleet.settings;
import static dev.retryagent.fleet.TestFleet.startUp;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.args.ClientPauseMode;
import redis.clients.jedis.args.ClientType;
import redis.clients.jedis.params.ClientKillParams;

/**
 * Redis is a dependency of the fleet, never of the host: paused, killed, restarted or flushed,
 * acquisitions go on (at the local share, within the command timeout) and the fleet comes back by
 * itself.
 */
@Timeout(90)
class FleetOutageTest {
  private static final long MS = 1_000_000L;
  private static final long LONG_WAIT = 30_000 * MS;

  /** The command timeout is 50 ms; this is what a slow machine may add to it. */
  private static final long WITHIN_COMMAND_TIMEOUT = 500 * MS;

  /**
   * How long the paused-Redis test pauses Redis: an acquisition that waited for Redis's answer
   * rather than its 50 ms command timeout would wait out the rest of it, and be answered.
   */
  private static final Duration PAUSED_FOR = Duration.ofSeconds(4);

  /** How long the killed-Redis test keeps Redis down, at least. */
  private static final Duration DOWN_FOR = Duration.ofSeconds(3);

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

  private FleetSettings.Builder fleetSettings() {
    return outageSettings(redis.url()).keyPrefix("outage-" + PREFIXES.incrementAndGet());
  }

  /**
   * For a fake Redis that answers every command at once, in tests that count the outages it makes:
   * timeouts that no stall of a loaded machine (a GC, two busy cores) reaches, so that every outage
   * is the fake's doing. With the 1 s of {@link TestFleet#settings}, a heartbeat (or a connect's
   * commands, held to connectTimeout) that a stall kept past it was one more outage, said too, and
   * the "said once" counts failed.
   */
  private static FleetSettings.Builder answeringSettings(String url) {
    return settings(url)
        .commandTimeout(Duration.ofSeconds(30))
        .connectTimeout(Duration.ofSeconds(30));
  }

  /**
   * For what is not about an outage: the real Redis with {@link #answeringSettings}' timeouts, that
   * no stall of a loaded machine reaches (the 1 s of {@link TestFleet#settings} a long one did: one
   * more outage, a fallback those tests count as none).
   */
  private FleetSettings.Builder steadySettings() {
    return answeringSettings(redis.url()).keyPrefix("outage-" + PREFIXES.incrementAndGet());
  }

  @Test
  void startNeverWaitsForRedisAndLimitsLocallyUntilItAnswers() {
    try (Jedis admin = redis.admin()) {
      admin.clientPause(1_500, ClientPauseMode.ALL);
    }
    long before = System.nanoTime();
    fleet = FleetConnection.start(fleetSettings().build(), Clock.SYSTEM, log);
    FleetRateLimiter limiter = fleet.limiter("llm", limit(100, 40), Duration.ofSeconds(60));
    long wait = limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    long took = System.nanoTime() - before;

    assertThat(fleet.isUp()).isFalse();
    assertThat(wait).isZero();
    assertThat(took).isLessThan(WITHIN_COMMAND_TIMEOUT);
    assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
    assertThat(limiter.metrics().redisCalls()).isZero();

    await().atMost(UP_TIMEOUT).until(fleet::isUp);
    limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    assertThat(limiter.metrics().redisCalls()).isEqualTo(1);
    assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
  }

  @Test
  void whileRedisIsPausedAcquisitionsGoOnAtTheLocalShareWithinTheCommandTimeout() {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    fleet = startUp(fleetSettings().build(), clock, log);
    // 25% of 100/s with a burst of 40 is 25/s with a burst of 10.
    FleetRateLimiter limiter = fleet.limiter("llm", limit(100, 40), Duration.ofSeconds(60));
    // Shared before the pause: one acquisition answered by Redis. A heartbeat or an acquisition
    // that missed its 50 ms on a loaded machine before the pause was an outage of its own, and
    // the acquisition then fell back: asked again until one is answered, and the local share's
    // burst, which those fallbacks spent, refilled (a second at 25/s refills a burst of 10).
    awaitAnAcquisitionAnsweredByRedis(limiter, clock);
    clock.advance(Duration.ofSeconds(1));
    long fallbacksBefore = limiter.metrics().fallbacks();
    long callsBefore = limiter.metrics().redisCalls();

    try (Jedis admin = redis.admin()) {
      admin.clientPause(PAUSED_FOR.toMillis(), ClientPauseMode.ALL);
    }
    long[] waits = new long[12];
    long slowest = 0;
    for (int i = 0; i < waits.length; i++) {
      long start = System.nanoTime();
      waits[i] = limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT);
      slowest = Math.max(slowest, System.nanoTime() - start);
    }

    // Counted, not timed (a stall of the machine lengthens any time). Redis answers nothing
    // before the pause ends, so an acquisition that waited for it rather than for its command
    // timeout was answered by Redis, not by the local share: every one fell back. Only the first
    // asked Redis (and waited its command timeout; none did when a heartbeat met the pause first),
    // the other 11 did not wait for Redis at all. The time is a bound derived from the pause, not
    // a timing claim: a stall would have to outlast the whole pause to fail it.
    assertThat(limiter.metrics().redisCalls()).isBetween(callsBefore, callsBefore + 1);
    assertThat(limiter.metrics().fallbacks()).isEqualTo(fallbacksBefore + 12);
    assertThat(slowest).isLessThan(PAUSED_FOR.toNanos());
    assertThat(fleet.state()).isEqualTo(FleetConnection.State.DOWN);
    assertThat(waits).startsWith(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    assertThat(waits[10]).isEqualTo(40 * MS);
    assertThat(waits[11]).isEqualTo(80 * MS);
    // Said once for the outage, not per acquisition that fell back (a heartbeat that missed its
    // 50 ms on a loaded machine before the pause is an outage too, said once as well, and so is a
    // first connect that missed it).
    awaitOneLinePerOutage();
    assertThat(log.lines.get(0)).contains("(25% of each limit)", redis.url());

    // Back: acquisitions ask Redis again (one that found a heartbeat's missed 50 ms, on a loaded
    // machine, an outage again falls back: the next one is asked).
    awaitAnAcquisitionAnsweredByRedis(limiter, clock);
    awaitOneLinePerOutage();
  }

  @Test
  void redisKilledAndRestartedMidRunFailsNoAcquisitionAndTheFleetResumes() throws Exception {
    fleet = startUp(fleetSettings().build(), Clock.SYSTEM, log);
    FleetRateLimiter limiter = fleet.limiter("llm", limit(200, 20), Duration.ofSeconds(60));
    Load load = new Load(limiter);
    load.thread.start();
    try {
      await().atMost(UP_TIMEOUT).until(() -> limiter.metrics().granted() > 20);

      redis.kill();
      await().atMost(UP_TIMEOUT).until(() -> fleet.state() == FleetConnection.State.DOWN);
      long fallbacks = limiter.metrics().fallbacks();
      // Down longer than the bound on the slowest acquisition below: one that waited for Redis
      // to come back would exceed it.
      await()
          .pollDelay(DOWN_FOR)
          .atMost(UP_TIMEOUT)
          .until(() -> limiter.metrics().fallbacks() > fallbacks + 20);

      redis.restart();
      await().atMost(UP_TIMEOUT).until(fleet::isUp);
      long granted = limiter.metrics().granted();
      await().atMost(UP_TIMEOUT).until(() -> limiter.metrics().granted() > granted + 20);
    } finally {
      load.stop();
    }

    assertThat(load.errors).isEmpty();
    assertThat(load.refused.get()).isZero();
    // A sanity bound, not a timing claim: far above the 50 ms command timeout (so a stall of a
    // loaded machine's scheduler or GC does not fail it), below the time Redis was down.
    assertThat(load.slowest.get()).isLessThan(DOWN_FOR.toNanos() * 2 / 3);
    // The kill is an outage, said once, and so is its end.
    awaitOneLinePerOutage();
  }

  @Test
  void anIdleJvmNoticesTheOutageByItsHeartbeat() throws Exception {
    fleet = startUp(fleetSettings().build(), Clock.SYSTEM, log);
    try {
      redis.kill();
      await().atMost(UP_TIMEOUT).until(() -> fleet.state() == FleetConnection.State.DOWN);
      awaitOneLinePerOutage();
    } finally {
      redis.restart();
    }
    await().atMost(UP_TIMEOUT).until(fleet::isUp);
  }

  @Test
  void aRedisDemotedToAReadOnlyReplicaIsAnOutageAndTheFleetReconnects() throws Exception {
    fleet = startUp(steadySettings().build(), Clock.SYSTEM, log);
    FleetRateLimiter limiter = fleet.limiter("llm", limit(100, 40), Duration.ofSeconds(60));
    int deadPort;
    try (java.net.ServerSocket s =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      deadPort = s.getLocalPort();
    }
    try (Jedis admin = redis.admin()) {
      // A failover behind one address: the server this JVM is connected to is a replica now.
      admin.replicaof("127.0.0.1", deadPort);
      try {
        limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

        // Not shared any more: said so (the gauge, the log), and the thread reconnects, which is
        // what reaches the new primary once the address points at it.
        assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
        assertThat(fleet.isUp()).as("%s", log).isFalse();
        assertThat(log.count("is unreachable")).isEqualTo(1);
      } finally {
        admin.replicaofNoOne();
      }
    }
    await().atMost(UP_TIMEOUT).until(fleet::isUp);
    assertThat(log.count("answers again")).isEqualTo(1);
  }

  @Test
  void whenEveryConnectionIsBusyTheLocalShareStillLimitsThoughOtherCallsGetThrough()
      throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    fleet = startUp(steadySettings().maxConnections(1).build(), clock, log);
    // 10/s, burst 4: the local share is 2.5/s, burst 1.
    FleetRateLimiter limiter = fleet.limiter("llm", limit(10, 4), Duration.ofSeconds(60));
    java.lang.reflect.Field field = RedisGateway.class.getDeclaredField("slots");
    field.setAccessible(true);
    java.util.concurrent.Semaphore slots =
        (java.util.concurrent.Semaphore) field.get(fleet.gateway());

    // Many callers on a slow Redis: some find every connection busy, some get one. One that finds
    // them busy waits for a connection as long as its deadline allows (here under the 30 s command
    // timeout, so that the test does not wait 30 s): a second, past which the wait would be
    // refused.
    long busyDeadline = 1_000 * MS;
    slots.acquire();
    assertThat(limiter.reserve(clock.nanoTime(), LONG_WAIT, busyDeadline)).isZero();
    slots.release();
    assertThat(limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT)).isZero();
    slots.acquire();
    long wait;
    try {
      wait = limiter.reserve(clock.nanoTime(), LONG_WAIT, busyDeadline);
    } finally {
      slots.release();
    }

    assertThat(limiter.metrics().fallbacks()).isEqualTo(2);
    assertThat(fleet.isUp()).isTrue();
    // The local share's burst of 1 is spent: the next permit is 400 ms on, not a fresh burst.
    assertThat(wait).isEqualTo(400 * MS);
  }

  @Test
  void withoutRedisEachJvmTakesOneOverTheLiveInstancesLastSeenWhenSoConfigured() throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    FleetSettings shared = fleetSettings().fallbackPerLiveInstance(true).build();
    fleet = startUp(shared, clock, log);
    try (FleetConnection other = startUp(shared, clock, log)) {
      await().atMost(UP_TIMEOUT).until(() -> fleet.liveInstances() == 2);
      FleetRateLimiter limiter = fleet.limiter("llm", limit(100, 10), Duration.ofSeconds(60));
      try {
        redis.kill();
        await().atMost(UP_TIMEOUT).until(() -> fleet.state() == FleetConnection.State.DOWN);

        // Half of 100/s with a burst of 10: 50/s, a burst of 5.
        long[] waits = new long[7];
        for (int i = 0; i < waits.length; i++) {
          waits[i] = limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT);
        }
        assertThat(waits).containsExactly(0, 0, 0, 0, 0, 20 * MS, 40 * MS);
        assertThat(limiter.describe()).contains("this JVM limits itself to 50/s");
        assertThat(log.lines.get(0)).contains("1/2, the live instances last seen");
      } finally {
        redis.restart();
      }
      await().atMost(UP_TIMEOUT).until(fleet::isUp);
    }
  }

  @Test
  void aFlushedScriptCacheIsLoadedAgainWithoutAFallback() {
    fleet = startUp(steadySettings().build(), Clock.SYSTEM, log);
    FleetRateLimiter limiter = fleet.limiter("llm", limit(100, 40), Duration.ofSeconds(60));
    limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    long reloads = fleet.scriptReloads();
    limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    assertThat(fleet.scriptReloads()).isEqualTo(reloads);

    try (Jedis admin = redis.admin()) {
      admin.scriptFlush();
    }
    long wait = limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

    assertThat(wait).isZero();
    assertThat(fleet.scriptReloads()).isEqualTo(reloads + 1);
    assertThat(limiter.metrics().fallbacks()).isZero();
    assertThat(limiter.metrics().granted()).isEqualTo(3);
    assertThat(fleet.isUp()).isTrue();
    assertThat(log.lines).isEmpty();
  }

  @Test
  void aReloadThatChangesTheLimitWhileRedisIsAwayKeepsThe429PauseThisJvmHolds() throws Exception {
    int deadPort;
    try (java.net.ServerSocket s =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      deadPort = s.getLocalPort();
    }
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    fleet =
        FleetConnection.start(outageSettings("redis://127.0.0.1:" + deadPort).build(), clock, log);
    FleetRateLimiter before = fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));
    before.pauseFor(clock.nanoTime(), 10_000 * MS);

    // The reload: the same route with another perSecond (the engine then asks for its limiter).
    FleetRateLimiter after = fleet.limiter("llm", limit(20, 5), Duration.ofSeconds(60));

    assertThat(fleet.isUp()).isFalse();
    assertThat(after).isNotSameAs(before);
    assertThat(after.pauseRemainingNanos(clock.nanoTime())).isEqualTo(10_000 * MS);
    assertThat(after.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT)).isEqualTo(10_000 * MS);
  }

  @Test
  void anUnexpectedFailureOfTheHeartbeatIsAnOutageAndTheThreadGoesOnAndRecovers() throws Exception {
    try (FakeRedis fake = new FakeRedis()) {
      fleet = startUp(answeringSettings(fake.url()).build(), Clock.SYSTEM, log);
      Thread thread = fleetThread();

      // A reply no Redis gives the heartbeat (a proxy's, say): a string of 2 GiB, which the
      // client cannot even allocate (OutOfMemoryError: Requested array size exceeds VM limit).
      fake.scriptReply = sha -> "$2147483647\r\n";
      await()
          .dontCatchUncaughtExceptions()
          .atMost(UP_TIMEOUT)
          .until(
              () -> fleet.state() == FleetConnection.State.DOWN && log.count("is unreachable") > 0);
      assertThat(log.count("is unreachable")).as("%s", log).isEqualTo(1);

      // The thread tries again (and meets the same reply) until Redis answers as it should.
      await().atMost(UP_TIMEOUT).until(() -> fleet.failedConnects() >= 2);
      fake.scriptReply = sha -> ":1\r\n";
      await().dontCatchUncaughtExceptions().atMost(UP_TIMEOUT).until(fleet::isUp);
      assertThat(log.count("answers again")).as("%s", log).isEqualTo(1);
      assertThat(thread.isAlive()).isTrue();
    }
  }

  @Test
  void aReplyTheClientCannotReadInAnAcquisitionIsAnOutageNeverTheCallsError() throws Exception {
    try (FakeRedis fake = new FakeRedis()) {
      fleet = startUp(answeringSettings(fake.url()).build(), Clock.SYSTEM, log);
      FleetRateLimiter limiter = fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));
      // The acquisition's script gets a 2 GiB string (OutOfMemoryError in the client, nothing
      // allocated); the heartbeat is answered as Redis would.
      fake.scriptReply = sha -> sha.equals(Scripts.ACQUIRE.sha1) ? "$2147483647\r\n" : ":1\r\n";

      long wait = limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

      assertThat(wait).as("the local share's first permit").isZero();
      assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
      assertThat(fleet.outages()).isEqualTo(1);
      assertThat(log.count("is unreachable")).as("%s", log).isEqualTo(1);
    }
  }

  /**
   * A Redis restart is every JVM's outage at once: after an outage that follows a steady spell up,
   * the first reconnect is spread over 0..reconnectMin, not made at once by every JVM together.
   */
  @Test
  void theFirstReconnectAfterASteadySpellUpIsSpreadOverReconnectMin() throws Exception {
    try (FakeRedis fake = new FakeRedis()) {
      fleet =
          startUp(
              answeringSettings(fake.url())
                  .reconnectBackoff(Duration.ofSeconds(3), Duration.ofSeconds(5))
                  .build(),
              Clock.SYSTEM,
              log);
      // This JVM's draw: near the top of the range, about 3 s.
      fleet.random =
          new java.util.Random() {
            private static final long serialVersionUID = 1L;

            @Override
            public double nextDouble() {
              return 0.99;
            }
          };
      long upAt = System.nanoTime();
      await()
          .atMost(UP_TIMEOUT)
          .until(() -> System.nanoTime() - upAt > FleetConnection.FLAP_NANOS + 100_000_000L);
      // A failover: the connection answers one script READONLY, an outage; then Redis answers.
      AtomicLong failedAt = new AtomicLong();
      AtomicLong nextAt = new AtomicLong();
      fake.onCommand =
          command -> {
            if (failedAt.get() != 0) {
              nextAt.compareAndSet(0, System.nanoTime());
            }
          };
      fake.scriptReply =
          sha -> {
            if (failedAt.compareAndSet(0, System.nanoTime())) {
              return "-READONLY You can't write against a read only replica.\r\n";
            }
            return ":1\r\n";
          };
      await().atMost(UP_TIMEOUT).until(() -> nextAt.get() != 0);
      // The reconnect's first command came after the drawn ~3 s (before: at once), well over 1 s.
      assertThat(nextAt.get() - failedAt.get()).isGreaterThan(TimeUnit.SECONDS.toNanos(1));
      await().atMost(UP_TIMEOUT).until(fleet::isUp);
    }
  }

  /**
   * A Redis that answers the connect, PING and the heartbeat but not an acquisition in time (one
   * whose latency hovers around commandTimeout): each acquisition is an outage. The fleet
   * reconnected at once after each, with a fresh backoff, so every call that found it up paid a
   * whole commandTimeout, and Redis got a new connection and the log two lines per call. An outage
   * soon after a connect now waits the backoff, doubling, before the next connect.
   */
  @Test
  void aRedisThatGoesAwayRightAfterEachConnectIsReconnectedWithBackoffNotAtOnce() throws Exception {
    CountDownLatch end = new CountDownLatch(1);
    try (FakeRedis fake = new FakeRedis()) {
      fake.scriptReply =
          sha -> {
            if (sha.equals(Scripts.ACQUIRE.sha1)) {
              TestFleet.holdUntil(end); // past commandTimeout: a timeout
            }
            return ":1\r\n";
          };
      // Backoff from 100 ms doubling to 5 s: the waits after the six outages are at least half of
      // 100, 200, 400, 800, 1600, 3200 ms (jittered): 3.15 s in all.
      fleet =
          startUp(
              FleetSettings.builder(fake.url())
                  .commandTimeout(Duration.ofMillis(100))
                  .reconnectBackoff(Duration.ofMillis(100), Duration.ofSeconds(5))
                  .build(),
              Clock.SYSTEM,
              log);
      FleetRateLimiter limiter = fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));
      long down = 0;
      long seen = fleet.outages();
      for (int outage = 1; outage <= 6; outage++) {
        long wentDown = fleetWentDown(limiter, seen);
        await()
            .atMost(Duration.ofSeconds(30))
            .pollInterval(Duration.ofMillis(10))
            .until(fleet::isUp);
        down += System.nanoTime() - wentDown;
        seen = fleet.outages();
      }

      // At least: a heartbeat that missed its 100 ms on a loaded machine is one more, which only
      // lengthens the backoff.
      assertThat(fleet.outages()).isGreaterThanOrEqualTo(6);
      // A lower bound only: a loaded machine makes the waits longer, never shorter.
      assertThat(down / MS).as("ms down in all").isGreaterThanOrEqualTo(3_150);
    } finally {
      end.countDown();
    }
  }

  /**
   * Redis's client {@code timeout} (a managed Redis's idle cut, a proxy's or a load balancer's)
   * closes a connection idle that long. The heartbeat took the idle connection used last, so the
   * warm-up's second one idled until Redis closed it, and the next calls that took it (two at once,
   * after a quiet spell) found it dead: an outage that was none, said in two lines, those calls at
   * the local share. The heartbeat now takes the one idle longest: each is in use every few beats.
   */
  @Test
  void theHeartbeatKeepsEveryIdleConnectionInUseSoRedisNeverClosesOneForIdling() {
    try (Jedis admin = redis.admin()) {
      admin.configSet("timeout", "1");
      try {
        fleet = startUp(steadySettings().build(), Clock.SYSTEM, log);
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> fleetClients(admin) == FleetConnection.WARM_CONNECTIONS);
        // Redis closes a client idle for over a second (its cron looks at each about once a
        // second); the heartbeat (every 200 ms here) keeps each of the two in use.
        await()
            .during(Duration.ofSeconds(4))
            .atMost(Duration.ofSeconds(30))
            .until(() -> fleetClients(admin) == FleetConnection.WARM_CONNECTIONS);
        assertThat(fleet.outages()).isZero();
      } finally {
        admin.configSet("timeout", "0");
      }
    }
  }

  private static long fleetClients(Jedis admin) {
    return admin
        .clientList()
        .lines()
        .filter(l -> l.contains("name=" + RedisGateway.CLIENT_NAME + " "))
        .count();
  }

  /**
   * One acquisition while up, which times out: an outage after the {@code seen} ones (or a
   * heartbeat that missed its timeout on a loaded machine just before it was one, and it fell
   * back).
   */
  private long fleetWentDown(FleetRateLimiter limiter, long seen) {
    limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    assertThat(fleet.outages()).isGreaterThan(seen);
    return System.nanoTime();
  }

  @Test
  void aKeyOfTheWrongTypeUnderOneRouteLeavesTheOtherRoutesSharedAfterAnOutage() throws Exception {
    FleetSettings shared = steadySettings().build();
    fleet = startUp(shared, Clock.SYSTEM, log);
    FleetRateLimiter bad = fleet.limiter("bad", limit(10, 5), Duration.ofSeconds(60));
    FleetRateLimiter good = fleet.limiter("good", limit(10, 5), Duration.ofSeconds(60));
    String badKey = shared.keyPrefix() + ":bad:pause";
    try (Jedis admin = redis.admin()) {
      // Someone else's data under the route's key.
      admin.hset(badKey, "field", "value");
      // A 429 on that route: Redis refuses the pause (WRONGTYPE), this JVM holds it.
      bad.pauseFor(System.nanoTime(), 20_000 * MS);
      assertThat(bad.pauseRemainingNanos(System.nanoTime())).isPositive();
      assertThat(fleet.isUp()).isTrue();

      // An outage: Redis drops the fleet's connections.
      admin.clientKill(
          ClientKillParams.clientKillParams()
              .type(ClientType.NORMAL)
              .skipMe(ClientKillParams.SkipMe.YES));
    }
    await().atMost(UP_TIMEOUT).until(() -> fleet.outages() == 1);

    // Back: the other route shares again, the bad one keeps its pause and limits itself.
    await().atMost(UP_TIMEOUT).until(fleet::isUp);
    good.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    assertThat(good.metrics().fallbacks()).isZero();
    assertThat(bad.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT)).isGreaterThan(10_000 * MS);
    assertThat(log.lines).anyMatch(l -> l.contains("route bad") && l.contains(badKey));
    assertThat(log.count("is unreachable")).as("%s", log).isEqualTo(1);
  }

  @Test
  void aFleetJoinedInPlaceOfAnotherWritesThePauseThatOneHeldToItsRedis() throws Exception {
    int deadPort;
    try (java.net.ServerSocket s =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      deadPort = s.getLocalPort();
    }
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    FleetConnection left =
        FleetConnection.start(outageSettings("redis://127.0.0.1:" + deadPort).build(), clock, log);
    left.limiter("llm", limit(10, 5), Duration.ofSeconds(60))
        .pauseFor(clock.nanoTime(), 20_000 * MS);

    FleetSettings next = steadySettings().build();
    fleet = FleetConnection.start(next, clock, log, left);
    left.close();
    await().atMost(UP_TIMEOUT).until(fleet::isUp);

    FleetRateLimiter limiter = fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));
    assertThat(limiter.pauseRemainingNanos(clock.nanoTime())).isEqualTo(20_000 * MS);
    try (Jedis admin = redis.admin()) {
      assertThat(admin.pttl(next.keyPrefix() + ":llm:pause")).isBetween(10_000L, 20_001L);
    }
  }

  @Test
  void aScriptReplyTooShortIsAnErrorOfTheRouteNeverAnExceptionOfTheCall() throws Exception {
    try (FakeRedis fake = new FakeRedis()) {
      fleet = startUp(answeringSettings(fake.url()).build(), Clock.SYSTEM, log);
      FleetRateLimiter limiter = fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));
      // One value where the scripts answer two to four (a proxy's reply, not Redis's).
      fake.scriptReply = sha -> sha.equals(Scripts.HEARTBEAT.sha1) ? ":1\r\n" : "*1\r\n:1\r\n";

      assertThat(limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT)).isZero();
      assertThat(limiter.pauseFor(System.nanoTime(), 10_000 * MS)).isPositive();

      assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
      assertThat(log.count("answered the rate limit of route llm")).as("%s", log).isEqualTo(1);
      assertThat(fleet.isUp()).isTrue();
    }
  }

  @Test
  void aLiveCountKeyOfTheWrongTypeLeavesTheLimitsShared() throws Exception {
    FleetSettings shared = steadySettings().build();
    String instancesKey = shared.keyPrefix() + ":instances";
    try (Jedis admin = redis.admin()) {
      // Someone else's data under the fleet's live count.
      admin.set(instancesKey, "not a sorted set");
    }
    fleet = FleetConnection.start(shared, Clock.SYSTEM, log);
    FleetRateLimiter limiter = fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));

    await().atMost(UP_TIMEOUT).until(fleet::isUp);
    limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    assertThat(limiter.metrics().redisCalls()).isEqualTo(1);
    assertThat(limiter.metrics().fallbacks()).isZero();
    assertThat(log.count(instancesKey)).as("%s", log).isEqualTo(1);
    assertThat(log.count("is unreachable")).as("%s", log).isZero();
  }

  @Test
  void aReloadThatChangesTheLimitKeepsCountingWhereTheRouteWas() throws Exception {
    fleet = startUp(steadySettings().build(), Clock.SYSTEM, log);
    FleetRateLimiter before = fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));
    before.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    before.pauseFor(System.nanoTime(), 1_000 * MS);
    // Written to Redis by the fleet's thread; counted as it came.
    await().atMost(UP_TIMEOUT).until(() -> before.pauseWrites() == 1);
    assertThat(before.metrics().pausesSet()).isEqualTo(1);

    FleetRateLimiter after = fleet.limiter("llm", limit(20, 5), Duration.ofSeconds(60));

    assertThat(after).isNotSameAs(before);
    assertThat(after.metrics().granted()).isEqualTo(1);
    assertThat(after.metrics().pausesSet()).isEqualTo(1);
  }

  @Test
  void theBackgroundThreadIsADaemonOnTheSystemLoaderAndEndsOnClose() {
    fleet = startUp(fleetSettings().build(), Clock.SYSTEM, log);

    Thread thread = fleetThread();
    assertThat(thread.isDaemon()).isTrue();
    assertThat(thread.getContextClassLoader()).isSameAs(ClassLoader.getSystemClassLoader());

    fleet.close();
    await().atMost(UP_TIMEOUT).until(() -> !thread.isAlive());
    assertThat(fleet.state()).isEqualTo(FleetConnection.State.CLOSED);
  }

  @Test
  void aCloseWhileTheThreadConnectsToARedisThatDoesNotAnswerEndsTheThreadWithinTheClose()
      throws Exception {
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    try (FakeRedis fake = new FakeRedis()) {
      // A Redis that takes the connection and never answers: the thread waits a whole command
      // timeout for each step of its connect, longer than close() waits for it.
      fake.onCommand =
          command -> {
            held.countDown();
            TestFleet.holdUntil(release);
          };
      fleet =
          FleetConnection.start(
              outageSettings(fake.url()).commandTimeout(Duration.ofSeconds(60)).build(),
              Clock.SYSTEM,
              log);
      assertThat(held.await(30, TimeUnit.SECONDS)).isTrue();
      Thread thread = fleet.thread();
      Thread closing = new Thread(fleet::close, "closing");
      closing.start();

      // Ended within close(), long before the command timeout: nothing of it after close returns.
      await().atMost(UP_TIMEOUT).until(() -> !closing.isAlive());
      assertThat(thread.isAlive()).isFalse();
      assertThat(fleet.state()).isEqualTo(FleetConnection.State.CLOSED);
      assertThat(log.lines).isEmpty();
    } finally {
      release.countDown();
    }
  }

  @Test
  void aCloseWhileUpWhoseEveryStepWouldOpenAConnectionToASilentRedisEndsTheThreadWithinItsWait()
      throws Exception {
    CountDownLatch settingUp = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean silent = new AtomicBoolean();
    Duration connectTimeout = Duration.ofSeconds(1);
    Duration commandTimeout = Duration.ofMillis(100);
    try (FakeRedis fake = new FakeRedis()) {
      // From `silent` on, a Redis that takes connections and never answers.
      fake.onCommand =
          command -> {
            if (silent.get()) {
              if (command.get(0).equalsIgnoreCase("CLIENT")) {
                settingUp.countDown();
              }
              TestFleet.holdUntil(release);
            }
          };
      fleet =
          startUp(
              outageSettings(fake.url())
                  .connectTimeout(connectTimeout)
                  .commandTimeout(commandTimeout)
                  .heartbeatInterval(Duration.ofSeconds(60))
                  .build(),
              Clock.SYSTEM,
              log);
      silent.set(true);
      // The idle connections go, each to a call its deadline cut short (the call's own failure,
      // no outage): every step of the close then opens a connection of its own.
      RedisGateway gateway = fleet.gateway();
      for (int i = 0; i <= FleetConnection.WARM_CONNECTIONS; i++) {
        try {
          gateway.eval(Scripts.HEARTBEAT, List.of("k"), List.of("i", "1", "0"), 50 * MS);
        } catch (FleetUnavailableException expected) {
          assertThat(expected.kind()).isEqualTo(FleetUnavailableException.Kind.BUSY);
        }
      }
      assertThat(fleet.isUp()).isTrue();
      // A 429 pause to write: the thread opens a connection whose set-up is never answered...
      fleet
          .limiter("a", limit(10, 5), Duration.ofSeconds(60))
          .pauseFor(System.nanoTime(), LONG_WAIT);
      assertThat(settingUp.await(30, TimeUnit.SECONDS)).isTrue();
      // ...and two more queue up for the close to write, then the leave: a connect each.
      fleet
          .limiter("b", limit(10, 5), Duration.ofSeconds(60))
          .pauseFor(System.nanoTime(), LONG_WAIT);
      fleet
          .limiter("c", limit(10, 5), Duration.ofSeconds(60))
          .pauseFor(System.nanoTime(), LONG_WAIT);
      Thread thread = fleet.thread();

      long start = System.nanoTime();
      fleet.close();
      long took = System.nanoTime() - start;

      // close() waits connectTimeout + 4 commandTimeouts at most, and the thread has ended then.
      assertThat(thread.isAlive()).as("the fleet's thread after close").isFalse();
      assertThat(took)
          .isLessThan(connectTimeout.plus(commandTimeout.multipliedBy(4)).toNanos() + 500 * MS);
      assertThat(fleet.state()).isEqualTo(FleetConnection.State.CLOSED);
    } finally {
      release.countDown();
    }
  }

  @Test
  void closingLeavesTheLiveCountAtOnce() {
    FleetSettings shared = fleetSettings().build();
    fleet = startUp(shared, Clock.SYSTEM, log);
    FleetConnection other = startUp(shared, Clock.SYSTEM, log);
    await().atMost(UP_TIMEOUT).until(() -> fleet.liveInstances() == 2);

    other.close();

    try (Jedis admin = redis.admin()) {
      assertThat(admin.zrange(shared.keyPrefix() + ":instances", 0, -1))
          .containsExactly(fleet.instanceId());
    }
    await().atMost(UP_TIMEOUT).until(() -> fleet.liveInstances() == 1);
  }

  private static Thread fleetThread() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals(FleetConnection.THREAD_NAME))
        .findFirst()
        .orElseThrow(AssertionError::new);
  }

  /**
   * Acquires until one is answered by Redis, not by the local share: one that met an outage (a
   * heartbeat's or its own missed 50 ms on a loaded machine) falls back, and the next is asked.
   */
  private static void awaitAnAcquisitionAnsweredByRedis(FleetRateLimiter limiter, Clock clock) {
    await()
        .atMost(UP_TIMEOUT)
        .until(
            () -> {
              long calls = limiter.metrics().redisCalls();
              long fallbacks = limiter.metrics().fallbacks();
              limiter.reserve(clock.nanoTime(), LONG_WAIT, LONG_WAIT);
              return limiter.metrics().redisCalls() == calls + 1
                  && limiter.metrics().fallbacks() == fallbacks;
            });
  }

  /**
   * Each outage said once, and each end of one. With a 50 ms commandTimeout a loaded machine may
   * add outages to the one a test makes (a heartbeat whose read timed out), each as real and said
   * once too: the lines are counted against the outages, not against one. A first connect that
   * failed is said too but is no outage (none after being up): one line more. A line is written
   * just after its state changes, out of the lock, hence the wait.
   */
  private void awaitOneLinePerOutage() {
    await("each outage said once, and each end of one")
        .atMost(UP_TIMEOUT)
        .until(
            () -> {
              long outages = fleet.outages();
              long said = log.count("is unreachable");
              long ends = log.count("answers again");
              return outages > 0
                  && (said == outages || said == outages + 1)
                  && (ends == said || (ends == said - 1 && !fleet.isUp()));
            });
  }

  /** One application thread: acquire, wait what it says, acquire again. */
  private static final class Load implements Runnable {
    final Thread thread = new Thread(this, "load");
    final FleetRateLimiter limiter;
    final List<Throwable> errors = new CopyOnWriteArrayList<>();
    final AtomicInteger refused = new AtomicInteger();
    final AtomicLong slowest = new AtomicLong();
    final AtomicBoolean running = new AtomicBoolean(true);

    Load(FleetRateLimiter limiter) {
      this.limiter = limiter;
    }

    @Override
    public void run() {
      while (running.get()) {
        try {
          long start = System.nanoTime();
          long wait = limiter.reserve(start, LONG_WAIT, LONG_WAIT);
          slowest.accumulateAndGet(System.nanoTime() - start, Math::max);
          if (wait == FleetRateLimiter.REJECTED) {
            refused.incrementAndGet();
          } else {
            LockSupport.parkNanos(wait);
          }
        } catch (Throwable t) {
          errors.add(t);
        }
      }
    }

    void stop() throws InterruptedException {
      running.set(false);
      thread.join(10_000);
    }
  }
}
