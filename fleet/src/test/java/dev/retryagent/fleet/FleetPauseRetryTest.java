package dev.retryagent.fleet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Pause writes Redis keeps refusing, written again at the heartbeat turns. */
@Timeout(60)
class FleetPauseRetryTest {
  private static final long S = 1_000_000_000L;

  private final TestFleet.Lines log = new TestFleet.Lines();
  private final TestFleet.ManualClock clock = new TestFleet.ManualClock();
  private final CountDownLatch done = new CountDownLatch(1);
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

  @Test
  void manyRoutesWritesRedisKeepsRefusingNeverHoldUpTheHeartbeat() throws Exception {
    long refusalMillis = 20;
    Duration commandTimeout = Duration.ofMillis(200);
    List<String> scripts = new CopyOnWriteArrayList<>();
    redis = new FakeRedis();
    // Every pause's write refused, as by a Redis out of memory, and slowly (20 ms each).
    redis.scriptReply =
        sha ->
            sha.equals(Scripts.PAUSE.sha1)
                ? "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
                : "*4\r\n:1\r\n:0\r\n:0\r\n:0\r\n";
    redis.onCommand =
        command -> {
          if (!command.get(0).equalsIgnoreCase("EVALSHA")) {
            return;
          }
          if (command.get(1).equals(Scripts.HEARTBEAT.sha1)) {
            scripts.add("BEAT");
          } else if (command.get(1).equals(Scripts.PAUSE.sha1)) {
            scripts.add("PAUSE");
            try {
              done.await(refusalMillis, TimeUnit.MILLISECONDS); // a slow refusal
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
        };
    fleet =
        TestFleet.startUp(
            TestFleet.settings(redis.url()).commandTimeout(commandTimeout).build(), clock, log);
    int routes = 30;
    List<FleetRateLimiter> limiters = new ArrayList<>();
    for (int i = 0; i < routes; i++) {
      FleetRateLimiter l = fleet.limiter("r" + i, TestFleet.limit(10, 5), Duration.ofSeconds(10));
      limiters.add(l);
      l.pauseFor(clock.nanoTime(), 10 * S);
    }
    // The 429s' own writes, each refused once.
    await()
        .atMost(TestFleet.UP_TIMEOUT)
        .until(() -> limiters.stream().allMatch(l -> l.pauseWrites() >= 1));
    int from = scripts.size();
    // Four heartbeats since, each turn's writes again between two of them.
    await()
        .atMost(TestFleet.UP_TIMEOUT)
        .until(
            () ->
                scripts.subList(from, scripts.size()).stream().filter("BEAT"::equals).count() >= 4);

    // The longest run of writes with no heartbeat among them: what a heartbeat due then waited.
    List<String> since = new ArrayList<>(scripts.subList(from, scripts.size()));
    int longest = 0;
    int run = 0;
    for (String s : since) {
      run = s.equals("PAUSE") ? run + 1 : 0;
      longest = Math.max(longest, run);
    }
    // Written again, but within one commandTimeout a turn, after its heartbeat: at 20 ms each, ten
    // or so (fewer on a slow machine), never all thirty in a row (600 ms, three heartbeats).
    assertThat(since).contains("PAUSE");
    assertThat(longest)
        .as("writes in a row with no heartbeat among them, in %s", since)
        .isLessThanOrEqualTo((int) (commandTimeout.toMillis() / refusalMillis) + 1);
    assertThat(fleet.isUp()).isTrue();
  }

  /**
   * The states of a route's pause write are not one: a write Redis refused waits in the retry queue
   * for the next heartbeat turn, and a 429 meanwhile queues its own write at once, in the other
   * queue, rather than waiting for that turn (so the two flags, pauseRetry and pauseToWrite, may
   * both be set).
   */
  @Test
  void a429WhileARefusedWriteWaitsForItsTurnIsWrittenAtOnce() throws Exception {
    List<String> written = new CopyOnWriteArrayList<>();
    AtomicBoolean refuse = new AtomicBoolean(true);
    redis = new FakeRedis();
    redis.scriptReply =
        sha ->
            sha.equals(Scripts.PAUSE.sha1) && refuse.get()
                ? "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
                : "*4\r\n:1\r\n:0\r\n:0\r\n:0\r\n";
    redis.onCommand =
        command -> {
          if (command.get(0).equalsIgnoreCase("EVALSHA")
              && command.get(1).equals(Scripts.PAUSE.sha1)) {
            written.add(command.get(4)); // ARGV[1]: the pause, µs
          }
        };
    // No heartbeat turn (and so no retry) during the test.
    fleet =
        TestFleet.startUp(
            TestFleet.settings(redis.url()).heartbeatInterval(Duration.ofMinutes(1)).build(),
            clock,
            log);
    FleetRateLimiter l = fleet.limiter("llm", TestFleet.limit(10, 5), Duration.ofSeconds(10));
    l.pauseFor(clock.nanoTime(), 5 * S);
    await().atMost(TestFleet.UP_TIMEOUT).until(() -> l.pauseWrites() == 1); // refused

    refuse.set(false);
    l.pauseFor(clock.nanoTime(), 8 * S);

    await().atMost(TestFleet.UP_TIMEOUT).until(() -> l.pauseWrites() == 2);
    assertThat(written).containsExactly("5000000", "8000000");
  }
}
