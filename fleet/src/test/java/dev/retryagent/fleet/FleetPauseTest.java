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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
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
    // Short enough for the CLIENT PAUSE below to be an outage, long enough for a loaded machine to
    // answer every other command.
    return jvms(max, Duration.ofMillis(300));
  }

  /** {@link #jvms(Duration)} with a {@code commandTimeout} of its own. */
  private FleetRateLimiter[] jvms(Duration max, Duration commandTimeout) {
    FleetSettings shared =
        settings(redis.url())
            .keyPrefix("pause-" + PREFIXES.incrementAndGet())
            .commandTimeout(commandTimeout)
            .build();
    FleetRateLimiter[] limiters = new FleetRateLimiter[3];
    for (int i = 0; i < limiters.length; i++) {
      FleetConnection c = startUp(shared, Clock.SYSTEM, log);
      fleets.add(c);
      limiters[i] = c.limiter("llm", limit(50, 20), max);
    }
    return limiters;
  }

  /** Waits for the fleet's thread to have written {@code count} pauses of {@code jvm} to Redis. */
  private static void written(FleetRateLimiter jvm, int count) {
    await()
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(1))
        .atMost(UP_TIMEOUT)
        .until(() -> jvm.pauseWrites() == count);
  }

  private static long now() {
    return System.nanoTime();
  }

  @Test
  void aPauseSetByOneJvmHoldsEveryOtherUntilItPasses() {
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(60));

    jvm[0].pauseFor(now(), 2_000 * MS);
    written(jvm[0], 1);

    assertThat(jvm[1].reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(1_500 * MS, 2_000 * MS);
    assertThat(jvm[2].reserve(now(), LONG_WAIT, 1_000 * MS)).isEqualTo(FleetRateLimiter.REJECTED);
    assertThat(jvm[2].pauseRemainingNanos(now())).isBetween(1_000 * MS, 2_000 * MS);
    assertThat(jvm[0].metrics().pausesSet()).isEqualTo(1);
    assertThat(jvm[1].metrics().pausesHonoured()).isEqualTo(1);
    assertThat(jvm[2].metrics().pausesHonoured()).isEqualTo(1);

    await().atMost(Duration.ofSeconds(5)).until(() -> jvm[2].reserve(now(), 0, 0) == 0);
  }

  /**
   * A caller of one JVM waiting for its permit while another JVM's 429 paused the route: this JVM
   * had not heard of the pause (no reply from Redis since), so the attempt went when the permit
   * fell due, inside the pause. Now the look after the wait asks Redis.
   */
  @Test
  void aWaiterLooksInRedisForAPauseAnotherJvmSetDuringItsWait() {
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(60));

    jvm[0].pauseFor(now(), 2_000 * MS);
    written(jvm[0], 1);

    assertThat(jvm[1].pauseRemainingNanos(now())).isZero(); // not heard of yet
    assertThat(jvm[1].pauseAfterWaitNanos(now(), LONG_WAIT)).isBetween(1_000 * MS, 2_000 * MS);
    assertThat(jvm[1].pauseRemainingNanos(now())).isBetween(1_000 * MS, 2_000 * MS);
  }

  /**
   * The look's round trips: none for a permit given at once (the engine asks only after a wait),
   * none while this JVM heard Redis's pause of the route within HEARD_FRESH_NANOS (an acquisition's
   * reply or another waiter's look), one after that.
   */
  @Test
  void aWaitersLookCostsOneRoundTripAndNoneRightAfterAReply() {
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(60));
    FleetMetrics m = jvm[1].metrics();
    long t = now();

    assertThat(jvm[1].reserve(t, LONG_WAIT, LONG_WAIT)).isZero();
    assertThat(m.redisCalls()).isEqualTo(1);
    assertThat(jvm[1].pauseAfterWaitNanos(t + FleetRateLimiter.HEARD_FRESH_NANOS - 1, LONG_WAIT))
        .isZero();
    assertThat(m.redisCalls()).isEqualTo(1);
    assertThat(jvm[1].pauseAfterWaitNanos(t + FleetRateLimiter.HEARD_FRESH_NANOS, LONG_WAIT))
        .isZero();
    assertThat(m.redisCalls()).isEqualTo(2);
    // The look's own reply is a word from Redis too: a second waiter right after it shares it.
    assertThat(jvm[1].pauseAfterWaitNanos(t + FleetRateLimiter.HEARD_FRESH_NANOS + 1, LONG_WAIT))
        .isZero();
    assertThat(m.redisCalls()).isEqualTo(2);
  }

  @Test
  void aLongerPauseExtendsItAndAShorterOneNeverShortensIt() {
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(60));

    jvm[0].pauseFor(now(), 1_000 * MS);
    written(jvm[0], 1);
    jvm[1].pauseFor(now(), 3_000 * MS);
    written(jvm[1], 1);
    jvm[0].pauseFor(now(), 500 * MS);

    // Written by the fleet's thread, whose reply is the fleet's longer pause.
    await().atMost(UP_TIMEOUT).until(() -> jvm[0].pauseRemainingNanos(now()) > 1_000 * MS);
    assertThat(jvm[0].pauseRemainingNanos(now())).isBetween(2_000 * MS, 3_000 * MS);
    assertThat(jvm[2].reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(2_500 * MS, 3_000 * MS);
    assertThat(jvm[0].metrics().pausesSet()).isEqualTo(1);
    assertThat(jvm[1].metrics().pausesSet()).isEqualTo(1);
  }

  @Test
  void aPauseIsNeverLongerThanRetryAfterMax() {
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(2));

    jvm[0].pauseFor(now(), 3_600_000 * MS);
    written(jvm[0], 1);

    assertThat(jvm[1].reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(1_500 * MS, 2_000 * MS);
    try (Jedis admin = redis.admin()) {
      String key = fleets.get(0).settings().keyPrefix() + ":llm:pause";
      assertThat(admin.pttl(key)).isBetween(1_000L, 2_001L);
    }
  }

  /**
   * A rolling change of retryAfter.max: one JVM still allows an hour, another a second. The
   * hour-long pause the first wrote held the second for its second, then again after each wait (the
   * deadline was still in Redis), so in full: an hour, a second at a time. Now the second waits it
   * once, for its own bound; a later 429 (a new deadline) holds it again, once.
   */
  @Test
  void aJvmWaitsAFleetPauseLongerThanItsOwnRetryAfterMaxOnceForItsOwnBound() {
    jvms(Duration.ofSeconds(3_600));
    FleetRateLimiter longer =
        fleets.get(0).limiter("llm-short", limit(50, 20), Duration.ofSeconds(3_600));
    FleetRateLimiter shorter =
        fleets.get(1).limiter("llm-short", limit(50, 20), Duration.ofSeconds(1));

    waitsOutItsOwnBound(longer, 3_600_000 * MS, shorter);

    // Waited: neither an acquisition nor a waiter's look (Redis asked: nothing heard lately) nor
    // this JVM's own shorter 429 takes the deadline on again.
    long afterTheWait = now();
    assertThat(shorter.reserve(afterTheWait, LONG_WAIT, LONG_WAIT)).isZero();
    assertThat(
            shorter.pauseAfterWaitNanos(
                afterTheWait + FleetRateLimiter.HEARD_FRESH_NANOS, LONG_WAIT))
        .isZero();
    assertThat(shorter.metrics().redisCalls()).isEqualTo(3);
    shorter.pauseFor(now(), 200 * MS);
    written(shorter, 1);
    assertThat(shorter.pauseRemainingNanos(now())).isLessThanOrEqualTo(200 * MS);
    assertThat(shorter.metrics().pausesHonoured()).isEqualTo(1);

    // A JVM that allows the hour honours all of it.
    assertThat(
            fleets
                .get(2)
                .limiter("llm-short", limit(50, 20), Duration.ofSeconds(3_600))
                .reserve(now(), LONG_WAIT, LONG_WAIT))
        .isEqualTo(FleetRateLimiter.REJECTED);

    // A later 429 moves the deadline: a new pause, held again for this JVM's bound.
    longer.pauseFor(now(), 7_200_000 * MS);
    written(longer, 2);
    assertThat(shorter.reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(500 * MS, 1_000 * MS);
  }

  /**
   * A deadline is a time of its own Redis's clock: one waited on the Redis a reload leaves says
   * nothing of a pause on the Redis it moves to, even one ending sooner.
   */
  @Test
  void aReloadOntoAnotherRedisHoldsAPauseThereEndingBeforeTheOneWaitedOnTheOldOne()
      throws Exception {
    try (RedisServerProcess other = RedisServerProcess.start()) {
      String prefix = "pause-" + PREFIXES.incrementAndGet();
      FleetSettings here = settings(redis.url()).keyPrefix(prefix).build();
      FleetSettings there = settings(other.url()).keyPrefix(prefix).build();
      FleetConnection longerHere = startUp(here, Clock.SYSTEM, log);
      fleets.add(longerHere);
      FleetConnection before = startUp(here, Clock.SYSTEM, log);
      fleets.add(before);
      FleetRateLimiter longer = longerHere.limiter("llm", limit(50, 20), Duration.ofSeconds(3_600));
      FleetRateLimiter shorter = before.limiter("llm", limit(50, 20), Duration.ofSeconds(1));
      waitsOutItsOwnBound(longer, 3_600_000 * MS, shorter);

      // The reload moves fleet.redis.url; there, another JVM's 429 pauses the route for a minute.
      FleetConnection after = reload(there, before);
      FleetConnection longerThere = startUp(there, Clock.SYSTEM, log);
      fleets.add(longerThere);
      FleetRateLimiter longerOnB =
          longerThere.limiter("llm", limit(50, 20), Duration.ofSeconds(3_600));
      FleetRateLimiter moved = after.limiter("llm", limit(50, 20), Duration.ofSeconds(1));
      waitsOutItsOwnBound(longerOnB, 60_000 * MS, moved);

      // A reload that stays on that Redis keeps what was waited there: not waited again.
      FleetConnection again = reload(there, after);
      assertThat(
              again
                  .limiter("llm", limit(50, 20), Duration.ofSeconds(1))
                  .reserve(now(), LONG_WAIT, LONG_WAIT))
          .isZero();
    }
  }

  /**
   * A reload of {@code previous} onto {@code settings}: the new connection started in its place
   * (handed what it held), the old one closed, the new one up.
   */
  private FleetConnection reload(FleetSettings settings, FleetConnection previous) {
    FleetConnection next = FleetConnection.start(settings, Clock.SYSTEM, log, previous);
    fleets.add(next);
    previous.close();
    await().atMost(UP_TIMEOUT).until(next::isUp);
    return next;
  }

  /**
   * {@code longer} (retryAfter.max past {@code pauseNanos}) takes a 429's pause of {@code
   * pauseNanos}; {@code shorter}, retryAfter.max 1 s, waits it for its own bound only (what is left
   * of it, 500 ms to 1 s), and then no more.
   */
  private static void waitsOutItsOwnBound(
      FleetRateLimiter longer, long pauseNanos, FleetRateLimiter shorter) {
    longer.pauseFor(now(), pauseNanos);
    written(longer, 1);

    assertThat(shorter.reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(500 * MS, 1_000 * MS);
    await().atMost(Duration.ofSeconds(5)).until(() -> shorter.pauseRemainingNanos(now()) == 0);
  }

  @Test
  void waitersForAPauseAreSpreadByTheLimitWhenItEnds() {
    // A round trip past commandTimeout (a CI machine at load 14 took one) decides that permit
    // locally, from this JVM's share, and the spacing measured below is then not Redis's: no
    // outage here, so the bound is long.
    FleetRateLimiter[] jvm = jvms(Duration.ofSeconds(60), Duration.ofSeconds(5));
    jvm[0].pauseFor(now(), 1_000 * MS);
    written(jvm[0], 1);

    List<Long> waits = new ArrayList<>();
    long[] before = new long[24];
    long[] after = new long[24];
    for (int i = 0; i < 24; i++) {
      before[i] = now();
      waits.add(jvm[i % 3].reserve(before[i], LONG_WAIT, LONG_WAIT));
      after[i] = now();
    }

    // The burst of 20 goes when the pause ends, then one permit every 20 ms (50/s).
    assertThat(waits.subList(0, 20)).allSatisfy(w -> assertThat(w).isBetween(800 * MS, 1_000 * MS));
    // Each wait counts from Redis's clock as its script ran, between before and after: the 80 ms
    // between the 20th permit's start and the 24th's lies within what those bounds allow (a wait
    // minus a wait, taken at moments apart, measured the time between the calls as well).
    long earliest = before[23] + waits.get(23) - (after[19] + waits.get(19));
    long latest = after[23] + waits.get(23) - (before[19] + waits.get(19));
    assertThat(80 * MS)
        .as("waits %s; %s / %s / %s", waits, jvm[0].metrics(), jvm[1].metrics(), jvm[2].metrics())
        .isBetween(earliest - MS, latest + MS);
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
    // Once the fleet's thread has found it cannot write it.
    written(jvm[0], 1);
    await().atMost(UP_TIMEOUT).until(() -> fleets.stream().allMatch(FleetConnection::isUp));
    // Written back on reconnect: a JVM that never saw the 429 now waits for it.
    assertThat(jvm[2].reserve(now(), LONG_WAIT, LONG_WAIT)).isBetween(1_000 * MS, 6_000 * MS);
    assertThat(jvm[2].metrics().pausesHonoured()).isEqualTo(1);
  }

  @Test
  void a429GoesBackToTheApplicationWithoutWaitingForRedisToTakeThePause() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    try (FakeRedis fake = new FakeRedis()) {
      // Redis takes its time over the pause (a slow round trip, within commandTimeout).
      fake.scriptReply =
          sha -> {
            if (!sha.equals(Scripts.PAUSE.sha1)) {
              return ":1\r\n";
            }
            TestFleet.holdUntil(release);
            return "*3\r\n:1\r\n:10000000\r\n:1790000000000000\r\n";
          };
      FleetConnection c =
          startUp(
              settings(fake.url()).commandTimeout(Duration.ofSeconds(5)).build(),
              Clock.SYSTEM,
              log);
      fleets.add(c);
      FleetRateLimiter limiter = c.limiter("llm", limit(50, 20), Duration.ofSeconds(60));

      // The engine calls this on the application's thread, as the 429 comes back to it.
      long start = now();
      long left = limiter.pauseFor(start, 10_000 * MS);
      long took = now() - start;
      release.countDown();

      // Honoured here at once; the application's call not held for Redis's round trip.
      assertThat(left).isEqualTo(10_000 * MS);
      assertThat(took).isLessThan(2_500 * MS);
      await().atMost(UP_TIMEOUT).until(() -> limiter.pauseWrites() == 1);
      assertThat(limiter.metrics().pausesSet()).isEqualTo(1);
      assertThat(fake.received).contains("EVALSHA");
      assertThat(c.outages()).isZero();
      assertThat(c.isUp()).isTrue();
    } finally {
      release.countDown();
    }
  }

  /** A fake Redis's answers to the fleet's scripts, each script's SHA-1 kept in {@code runs}. */
  private static java.util.function.Function<String, String> answers(List<String> runs) {
    return sha -> {
      runs.add(sha);
      return sha.equals(Scripts.PAUSE.sha1)
          ? "*3\r\n:1\r\n:10000000\r\n:1790000000000000\r\n"
          : ":1\r\n";
    };
  }

  /**
   * A fleet on {@code fake} whose thread is held in a heartbeat until {@code release}: a pause then
   * waits in its queue. Every script run's SHA-1 goes to {@code runs}.
   */
  private FleetConnection heldInAHeartbeat(
      FakeRedis fake, List<String> runs, CountDownLatch release) throws Exception {
    AtomicBoolean holdBeats = new AtomicBoolean();
    CountDownLatch beating = new CountDownLatch(1);
    java.util.function.Function<String, String> answer = answers(runs);
    fake.scriptReply =
        sha -> {
          if (sha.equals(Scripts.HEARTBEAT.sha1) && holdBeats.get()) {
            beating.countDown();
            TestFleet.holdUntil(release);
          }
          return answer.apply(sha);
        };
    FleetConnection c =
        startUp(
            settings(fake.url()).commandTimeout(Duration.ofSeconds(5)).build(), Clock.SYSTEM, log);
    fleets.add(c);
    holdBeats.set(true);
    assertThat(beating.await(30, TimeUnit.SECONDS)).isTrue();
    return c;
  }

  @Test
  void aPauseStillQueuedWhenTheFleetClosesIsWrittenToRedisBeforeItLeaves() throws Exception {
    List<String> runs = new CopyOnWriteArrayList<>();
    CountDownLatch release = new CountDownLatch(1);
    try (FakeRedis fake = new FakeRedis()) {
      FleetConnection c = heldInAHeartbeat(fake, runs, release);
      FleetRateLimiter limiter = c.limiter("llm", limit(50, 20), Duration.ofSeconds(60));

      // The 429's pause waits in the thread's queue as the JVM shuts down.
      limiter.pauseFor(now(), 10_000 * MS);
      Thread closing = new Thread(c::close, "closing");
      closing.start();
      await().atMost(UP_TIMEOUT).until(() -> c.state() == FleetConnection.State.CLOSED);
      release.countDown();
      closing.join(30_000);

      assertThat(closing.isAlive()).isFalse();
      assertThat(runs).contains(Scripts.PAUSE.sha1);
    } finally {
      release.countDown();
    }
  }

  @Test
  void every429ThatExtendsThePauseIsCountedThoughTheThreadWritesThemInOneRoundTrip()
      throws Exception {
    List<String> runs = new CopyOnWriteArrayList<>();
    CountDownLatch release = new CountDownLatch(1);
    try (FakeRedis fake = new FakeRedis()) {
      FleetConnection c = heldInAHeartbeat(fake, runs, release);
      FleetRateLimiter limiter = c.limiter("llm", limit(50, 20), Duration.ofSeconds(60));

      // Three 429s, each longer, and a shorter one that extends nothing, while the thread is busy.
      long now = now();
      limiter.pauseFor(now, 5_000 * MS);
      limiter.pauseFor(now, 6_000 * MS);
      limiter.pauseFor(now, 7_000 * MS);
      limiter.pauseFor(now, 1_000 * MS);
      release.countDown();
      await().atMost(UP_TIMEOUT).until(() -> limiter.pauseWrites() == 1);

      assertThat(runs.stream().filter(Scripts.PAUSE.sha1::equals).count()).isEqualTo(1);
      assertThat(limiter.metrics().pausesSet()).isEqualTo(3);
    } finally {
      release.countDown();
    }
  }

  @Test
  void a429OnALimiterAReloadLeftToACallUnderWayReachesTheFleetStartedInItsPlace() throws Exception {
    List<String> runs = new CopyOnWriteArrayList<>();
    try (FakeRedis fake = new FakeRedis()) {
      fake.scriptReply = answers(runs);
      FleetSettings shared = settings(fake.url()).build();
      FleetConnection before = startUp(shared, Clock.SYSTEM, log);
      fleets.add(before);
      FleetRateLimiter old = before.limiter("llm", limit(50, 20), Duration.ofSeconds(60));
      FleetConnection after = reload(shared, before);
      FleetRateLimiter current = after.limiter("llm", limit(50, 20), Duration.ofSeconds(60));

      // A call that took its permit before the reload gets a 429.
      old.pauseFor(now(), 10_000 * MS);

      // This JVM's calls from now on honour it, and the new fleet writes it to Redis.
      assertThat(current.pauseRemainingNanos(now())).isGreaterThan(9_000 * MS);
      await().atMost(UP_TIMEOUT).until(() -> runs.contains(Scripts.PAUSE.sha1));
    }
  }

  @Test
  void aRetryOnALimiterAReloadLeftToACallUnderWayHonoursThePausesOfTheFleetInItsPlace()
      throws Exception {
    List<String> runs = new CopyOnWriteArrayList<>();
    try (FakeRedis fake = new FakeRedis()) {
      fake.scriptReply = answers(runs);
      FleetSettings shared = settings(fake.url()).build();
      FleetConnection before = startUp(shared, Clock.SYSTEM, log);
      fleets.add(before);
      FleetRateLimiter old = before.limiter("llm", limit(50, 20), Duration.ofSeconds(60));
      FleetConnection after = FleetConnection.start(shared, Clock.SYSTEM, log, before);
      fleets.add(after);
      before.close();
      FleetRateLimiter current = after.limiter("llm", limit(50, 20), Duration.ofSeconds(60));

      // A call after the reload gets a 429; one from before it is about to retry.
      current.pauseFor(now(), 10_000 * MS);

      assertThat(old.reserve(now(), LONG_WAIT, 1_000 * MS)).isEqualTo(FleetRateLimiter.REJECTED);
      assertThat(current.metrics().pausesHonoured()).isEqualTo(1);
      // As the refusal says it.
      assertThat(old.pauseRemainingNanos(now())).isGreaterThan(9_000 * MS);
    }
  }

  @Test
  void thePauseLeftIsNeverMoreThanRetryAfterMaxFromAnEarlierNow() throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    try (FakeRedis fake = new FakeRedis()) {
      // Redis holds another JVM's longer pause: the thread learns its 2 s (this JVM's bound).
      fake.scriptReply =
          sha ->
              sha.equals(Scripts.PAUSE.sha1)
                  ? "*3\r\n:0\r\n:60000000\r\n:1790000000000000\r\n"
                  : ":1\r\n";
      FleetConnection c = startUp(settings(fake.url()).build(), clock, log);
      fleets.add(c);
      FleetRateLimiter limiter = c.limiter("llm", limit(50, 20), Duration.ofSeconds(2));
      // The 429's time, read before the fleet's thread read its own, 100 ms later.
      long asked = clock.nanoTime();
      clock.advance(Duration.ofMillis(100));

      limiter.pauseFor(asked, 1_000 * MS);
      written(limiter, 1);

      assertThat(limiter.pauseRemainingNanos(asked)).isEqualTo(2_000 * MS);
    }
  }

  @Test
  void a429OnALimiterWhoseLimitAReloadChangedHoldsForTheNewOneWhileRedisIsAway() throws Exception {
    FakeRedis gone = new FakeRedis();
    String url = gone.url();
    gone.close();
    FleetConnection c = FleetConnection.start(settings(url).build(), Clock.SYSTEM, log);
    fleets.add(c);
    FleetRateLimiter old = c.limiter("llm", limit(50, 20), Duration.ofSeconds(60));
    FleetRateLimiter changed = c.limiter("llm", limit(20, 5), Duration.ofSeconds(60));

    old.pauseFor(now(), 10_000 * MS);

    // The new limit's calls honour it, and it is the one written back when Redis is.
    assertThat(changed.pauseRemainingNanos(now())).isGreaterThan(9_000 * MS);
    assertThat(changed.metrics().pausesSet()).isEqualTo(1);
  }

  /**
   * A 429 while the fleet's thread connects, after it wrote back the pauses it knew of and before
   * it is up: not written then (not up), nor by the write-back (already past it). Written once up.
   */
  @Test
  void a429WhileTheFleetConnectsAfterItsWriteBackReachesRedisOnceItIsUp() throws Exception {
    CountDownLatch limiterMade = new CountDownLatch(1);
    CountDownLatch writingBack = new CountDownLatch(1);
    CountDownLatch releaseWriteBack = new CountDownLatch(1);
    AtomicBoolean first = new AtomicBoolean(true);
    List<Long> written = new CopyOnWriteArrayList<>();
    try (FakeRedis fake = new FakeRedis()) {
      fake.onCommand =
          command -> {
            String name = command.get(0).toUpperCase(java.util.Locale.ROOT);
            if (name.equals("PING")) {
              // The connect starts once the route's limiter holds a pause to write back.
              TestFleet.holdUntil(limiterMade);
            } else if (name.equals("EVALSHA") && command.get(1).equals(Scripts.PAUSE.sha1)) {
              written.add(Long.parseLong(command.get(4)));
              if (first.getAndSet(false)) {
                writingBack.countDown();
                TestFleet.holdUntil(releaseWriteBack);
              }
            }
          };
      fake.scriptReply =
          sha ->
              sha.equals(Scripts.PAUSE.sha1)
                  ? "*3\r\n:1\r\n:2000000\r\n:1790000000000000\r\n"
                  : ":1\r\n";
      FleetConnection c =
          FleetConnection.start(
              settings(fake.url()).commandTimeout(Duration.ofSeconds(5)).build(),
              Clock.SYSTEM,
              log);
      fleets.add(c);
      FleetRateLimiter limiter = c.limiter("llm", limit(50, 20), Duration.ofSeconds(60));
      limiter.pauseFor(now(), 2_000 * MS);
      limiterMade.countDown();
      assertThat(writingBack.await(30, TimeUnit.SECONDS)).isTrue();

      // The 429 comes while the write-back of the 2 s pause is under way: the fleet is not up.
      assertThat(c.isUp()).isFalse();
      limiter.pauseFor(now(), 8_000 * MS);
      releaseWriteBack.countDown();
      await().atMost(UP_TIMEOUT).until(c::isUp);

      // Redis is told of the 8 s pause, not only of the 2 s one.
      await()
          .atMost(UP_TIMEOUT)
          .untilAsserted(() -> assertThat(written).anyMatch(us -> us > 7_000_000L));
      assertThat(written.get(0)).isLessThanOrEqualTo(2_000_000L);
    } finally {
      limiterMade.countDown();
      releaseWriteBack.countDown();
    }
  }

  /**
   * A pause's write that Redis refuses while up (out of memory here; a busy pool or an error of the
   * route's key alike) is not an outage, so no write-back comes after it: the thread writes it
   * again at its next heartbeats while it lasts, no sooner (no hot loop), and never for longer than
   * asked.
   */
  @Test
  void aPauseWriteRedisRefusesWhileUpIsWrittenAgainAtTheNextHeartbeats() throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    List<Long> written = new CopyOnWriteArrayList<>();
    List<Long> writtenAt = new CopyOnWriteArrayList<>();
    try (FakeRedis fake = new FakeRedis()) {
      fake.onCommand =
          command -> {
            if (command.get(0).equalsIgnoreCase("EVALSHA")
                && command.get(1).equals(Scripts.PAUSE.sha1)) {
              written.add(Long.parseLong(command.get(4)));
              writtenAt.add(System.nanoTime());
            }
          };
      fake.scriptReply =
          sha ->
              sha.equals(Scripts.PAUSE.sha1)
                  ? "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
                  : ":1\r\n";
      FleetSettings settings = settings(fake.url()).build();
      FleetConnection c = startUp(settings, clock, log);
      fleets.add(c);
      FleetRateLimiter limiter = c.limiter("llm", limit(50, 20), Duration.ofSeconds(60));

      limiter.pauseFor(clock.nanoTime(), 8_000 * MS);

      await().atMost(UP_TIMEOUT).until(() -> written.size() >= 4);
      assertThat(c.isUp()).isTrue();
      // What is left of the 8 s, never more.
      assertThat(written).allMatch(us -> us > 0 && us <= 8_000_000L);
      // One retry per heartbeat turn at most: the retries are a heartbeat interval apart.
      long interval = settings.heartbeatInterval().toNanos();
      for (int i = 2; i < writtenAt.size(); i++) {
        assertThat(writtenAt.get(i) - writtenAt.get(i - 1)).isGreaterThan(interval / 2);
      }

      // Once the pause has passed, nothing is left to write.
      clock.advance(Duration.ofSeconds(9));
      int before = written.size();
      long turns = limiter.pauseWrites();
      await().atMost(UP_TIMEOUT).until(() -> limiter.pauseWrites() >= turns + 1);
      assertThat(written.size()).isLessThanOrEqualTo(before + 1);
    }
  }

  @Test
  void aPauseWaitingToBeWrittenAgainIsWrittenWhenTheFleetCloses() throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    List<Long> written = new CopyOnWriteArrayList<>();
    try (FakeRedis fake = new FakeRedis()) {
      fake.onCommand =
          command -> {
            if (command.get(0).equalsIgnoreCase("EVALSHA")
                && command.get(1).equals(Scripts.PAUSE.sha1)) {
              written.add(Long.parseLong(command.get(4)));
            }
          };
      // The first write is refused (not an outage), every later one taken.
      fake.scriptReply =
          sha ->
              sha.equals(Scripts.PAUSE.sha1) && written.size() <= 1
                  ? "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
                  : ":1\r\n";
      // No heartbeat turn comes before the close: the retry would wait for it.
      FleetSettings settings =
          settings(fake.url()).heartbeatInterval(Duration.ofMinutes(10)).build();
      FleetConnection c = startUp(settings, clock, log);
      FleetRateLimiter limiter = c.limiter("llm", limit(50, 20), Duration.ofSeconds(60));
      limiter.pauseFor(clock.nanoTime(), 8_000 * MS);
      await().atMost(UP_TIMEOUT).until(() -> written.size() >= 1);

      // A JVM exiting (or a reload closing this fleet) writes what is queued, this one included:
      // the other JVMs would not hear of the provider's 429 otherwise.
      c.close();

      assertThat(written).hasSize(2);
      assertThat(written.get(1)).isPositive().isLessThanOrEqualTo(8_000_000L);
    }
  }

  /**
   * The engine's reload race: a call under the settings before a reload asks for its route's limit
   * after a call under the new settings did. The old limit never replaces the new one (every
   * limiter of the route forwards to the latest, so it would hold until the next reload); a later
   * reload back to it does.
   */
  @Test
  void aLimitAskedUnderOlderSettingsNeverReplacesOneAskedUnderNewerOnes() throws Exception {
    FakeRedis gone = new FakeRedis();
    String url = gone.url();
    gone.close();
    FleetConnection c = FleetConnection.start(settings(url).build(), Clock.SYSTEM, log);
    fleets.add(c);
    Duration max = Duration.ofSeconds(60);
    FleetRateLimiter before = c.limiter("llm", limit(50, 20), max, 1);
    FleetRateLimiter after = c.limiter("llm", limit(20, 5), max, 2);

    FleetRateLimiter stale = c.limiter("llm", limit(50, 20), max, 1);

    assertThat(stale).isSameAs(after);
    assertThat(c.latest(before).limit()).isEqualTo(limit(20, 5));
    assertThat(c.latest(after)).isSameAs(after);
    // The same limit asked again under the newer settings is the same limiter.
    assertThat(c.limiter("llm", limit(20, 5), max, 3)).isSameAs(after);
    assertThat(c.limiter("llm", limit(50, 20), max, 2)).isSameAs(after);
    // A reload after that back to the first limit.
    FleetRateLimiter back = c.limiter("llm", limit(50, 20), max, 4);
    assertThat(c.latest(after)).isSameAs(back);
    assertThat(back.limit()).isEqualTo(limit(50, 20));
  }
}
