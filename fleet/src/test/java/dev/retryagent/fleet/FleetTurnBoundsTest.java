package dev.retryagent.fleet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The fleet thread's turn (the 429s' writes, the refused ones again, a connection a shared thread
 * lacked) never holds the heartbeat past what one round trip may take, and never starts a write
 * with too little time left for Redis's answer.
 */
@Timeout(60)
class FleetTurnBoundsTest {
  private static final long S = 1_000_000_000L;
  private static final String OK = "*4\r\n:1\r\n:0\r\n:0\r\n:0\r\n";

  private final TestFleet.Lines log = new TestFleet.Lines();
  private final TestFleet.ManualClock clock = new TestFleet.ManualClock();
  private final CountDownLatch done = new CountDownLatch(1);
  private final List<Long> beats = new CopyOnWriteArrayList<>();
  private FakeRedis redis;
  private FleetConnection fleet;

  @AfterEach
  void tearDown() throws Exception {
    done.countDown();
    if (fleet != null) {
      fleet.close();
    }
    if (redis != null) {
      redis.close();
    }
  }

  private void hold(long millis) {
    try {
      done.await(millis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private boolean isScript(List<String> command, Scripts.Script script) {
    return command.get(0).equalsIgnoreCase("EVALSHA") && command.get(1).equals(script.sha1);
  }

  /** The longest time between two heartbeats Redis received from the {@code from}th on. */
  private long longestGapMillis(int from) {
    List<Long> since = new ArrayList<>(beats.subList(from, beats.size()));
    long longest = 0;
    for (int i = 1; i < since.size(); i++) {
      longest = Math.max(longest, since.get(i) - since.get(i - 1));
    }
    return TimeUnit.NANOSECONDS.toMillis(longest);
  }

  @Test
  void manyRoutes429sAnsweredSlowlyNeverHoldUpTheHeartbeat() throws Exception {
    // Every pause's write answered, but slowly (20 ms: Redis out of breath, or a connection
    // waited for): 60 routes' 429s at once are 1.2 s of writes, six heartbeat intervals.
    redis = new FakeRedis();
    redis.scriptReply = sha -> OK;
    redis.onCommand =
        command -> {
          if (isScript(command, Scripts.HEARTBEAT)) {
            beats.add(System.nanoTime());
          } else if (isScript(command, Scripts.PAUSE)) {
            hold(20);
          }
        };
    fleet =
        TestFleet.startUp(
            TestFleet.settings(redis.url())
                .commandTimeout(Duration.ofMillis(100))
                .connectTimeout(Duration.ofMillis(50))
                .build(),
            clock,
            log);
    List<FleetRateLimiter> limiters = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      limiters.add(fleet.limiter("r" + i, TestFleet.limit(10, 5), Duration.ofSeconds(10)));
    }
    await().atMost(TestFleet.UP_TIMEOUT).until(() -> beats.size() >= 1);
    int from = beats.size() - 1;
    for (FleetRateLimiter l : limiters) {
      l.pauseFor(clock.nanoTime(), 10 * S);
    }

    // Every one written, none lost.
    await()
        .atMost(TestFleet.UP_TIMEOUT)
        .until(() -> limiters.stream().allMatch(l -> l.pauseWrites() >= 1));
    int writtenAt = beats.size();
    await().atMost(TestFleet.UP_TIMEOUT).until(() -> beats.size() >= writtenAt + 1);

    // A turn writes within commandTimeout + connectTimeout (150 ms), then the heartbeat if due:
    // the gaps stay well within the live count's three intervals (600 ms); drained whole before
    // it, 1.2 s.
    assertThat(longestGapMillis(from))
        .as("longest time between heartbeats, ms")
        .isLessThan(3 * 200);
    assertThat(fleet.isUp()).isTrue();
  }

  @Test
  void aConnectionWantedOpensWithinConnectTimeoutAndNeverHoldsTheHeartbeat() throws Exception {
    // The next connection's CLIENT SETNAME answered after 1.5 s (within commandTimeout, 2 s).
    AtomicBoolean stallNextSetUp = new AtomicBoolean();
    AtomicInteger setUps = new AtomicInteger();
    redis = new FakeRedis();
    redis.scriptReply = sha -> OK;
    redis.onCommand =
        command -> {
          if (isScript(command, Scripts.HEARTBEAT)) {
            beats.add(System.nanoTime());
          } else if (command.get(0).equalsIgnoreCase("CLIENT")) {
            setUps.incrementAndGet();
            if (stallNextSetUp.compareAndSet(true, false)) {
              hold(1500);
            }
          }
        };
    fleet =
        TestFleet.startUp(
            TestFleet.settings(redis.url())
                .commandTimeout(Duration.ofSeconds(2))
                .connectTimeout(Duration.ofMillis(100))
                .build(),
            clock,
            log);
    await().atMost(TestFleet.UP_TIMEOUT).until(() -> beats.size() >= 1);
    int from = beats.size() - 1;
    int before = setUps.get();
    stallNextSetUp.set(true);
    // As a call on a shared thread that found no idle connection leaves it (the idle ones stay,
    // so the heartbeats need no new one).
    RedisGateway g = fleet.gateway();
    Field wanted = RedisGateway.class.getDeclaredField("connectionWanted");
    wanted.setAccessible(true);
    wanted.setBoolean(g, true);
    fleet.openWanted(g);

    await().atMost(TestFleet.UP_TIMEOUT).until(() -> setUps.get() > before);
    int openedAt = beats.size();
    // Three heartbeats after the open began: its stall, 1.5 s, is over by then on the old code.
    await().atMost(TestFleet.UP_TIMEOUT).until(() -> beats.size() >= openedAt + 3);

    assertThat(longestGapMillis(from))
        .as("longest time between heartbeats, ms")
        .isLessThan(3 * 200);
    assertThat(fleet.isUp()).isTrue();
  }

  @Test
  void aRefusedWriteIsNotStartedWithTooLittleTimeLeftForTheAnswer() throws Exception {
    // Every pause's write refused (OOM) after 40 ms; commandTimeout 2 s: fifty a turn would fit
    // but the last has less than its answer's 40 ms left, times out, and its connection goes. Now
    // none starts with less than a quarter (500 ms) left: a loaded machine's slow answer still
    // comes within it (a 400 ms timeout left 60 ms of slack).
    AtomicInteger setUps = new AtomicInteger();
    AtomicInteger pauses = new AtomicInteger();
    redis = new FakeRedis();
    redis.scriptReply =
        sha ->
            sha.equals(Scripts.PAUSE.sha1)
                ? "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
                : OK;
    redis.onCommand =
        command -> {
          if (isScript(command, Scripts.HEARTBEAT)) {
            beats.add(System.nanoTime());
          } else if (isScript(command, Scripts.PAUSE)) {
            pauses.incrementAndGet();
            hold(40);
          } else if (command.get(0).equalsIgnoreCase("CLIENT")) {
            setUps.incrementAndGet();
          }
        };
    fleet =
        TestFleet.startUp(
            TestFleet.settings(redis.url()).commandTimeout(Duration.ofSeconds(2)).build(),
            clock,
            log);
    List<FleetRateLimiter> limiters = new ArrayList<>();
    for (int i = 0; i < 80; i++) {
      FleetRateLimiter l = fleet.limiter("r" + i, TestFleet.limit(10, 5), Duration.ofSeconds(10));
      limiters.add(l);
      l.pauseFor(clock.nanoTime(), 10 * S);
    }
    await()
        .atMost(TestFleet.UP_TIMEOUT)
        .until(() -> limiters.stream().allMatch(l -> l.pauseWrites() >= 1));
    int connections = setUps.get();
    int pausesBefore = pauses.get();
    int from = beats.size();
    await().atMost(TestFleet.UP_TIMEOUT).until(() -> beats.size() >= from + 5);

    // Written again at each turn, each refusal heard: no write timed out, no healthy connection
    // closed as broken (a new one would be set up in its place).
    assertThat(pauses.get()).isGreaterThan(pausesBefore);
    assertThat(setUps.get()).as("connections set up since").isEqualTo(connections);
    assertThat(fleet.isUp()).isTrue();
  }
}
