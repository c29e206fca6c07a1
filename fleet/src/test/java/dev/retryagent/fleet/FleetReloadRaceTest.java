package dev.retryagent.fleet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** 429 pauses that race a reload replacing the route's limiter. */
@Timeout(60)
class FleetReloadRaceTest {
  private static final long S = 1_000_000_000L;

  private final TestFleet.Lines log = new TestFleet.Lines();
  private final TestFleet.ManualClock clock = new TestFleet.ManualClock();
  private final CountDownLatch answer = new CountDownLatch(1);
  private FakeRedis redis;
  private FleetConnection fleet;

  @AfterEach
  void tearDown() throws Exception {
    answer.countDown();
    if (fleet != null) {
      fleet.close();
    }
    if (redis != null) {
      redis.close();
    }
  }

  @Test
  void a429NotedOnTheOldLimiterAsAReloadReplacesItWhileTheFleetConnectsHoldsAndReachesRedis()
      throws Exception {
    redis = new FakeRedis();
    redis.scriptReply = sha -> "*4\r\n:1\r\n:0\r\n:0\r\n:0\r\n";
    List<String> pauseWrites = new CopyOnWriteArrayList<>();
    redis.onCommand =
        command -> {
          if (command.get(0).equalsIgnoreCase("PING")) {
            TestFleet.holdUntil(answer); // the fleet stays connecting until the test says
          } else if (command.get(0).equalsIgnoreCase("EVALSHA")
              && command.get(1).equals(Scripts.PAUSE.sha1)) {
            pauseWrites.add(command.get(4)); // ARGV[1]: the pause, µs
          }
        };
    fleet = FleetConnection.start(TestFleet.settings(redis.url()).build(), clock, log);
    Duration max = Duration.ofSeconds(10);
    FleetRateLimiter before = fleet.limiter("llm", TestFleet.limit(10, 5), max);

    // The 429's call looks at the route's limiter (this one), and is held just before it notes
    // the pause there, while a reload puts a new limit in its place.
    Thread call;
    FleetRateLimiter after;
    synchronized (before) {
      call = new Thread(() -> before.pauseFor(clock.nanoTime(), 5 * S), "application-429");
      call.setDaemon(true);
      call.start();
      await().atMost(TestFleet.UP_TIMEOUT).until(() -> call.getState() == Thread.State.BLOCKED);
      after = fleet.limiter("llm", TestFleet.limit(20, 5), max);
    }
    call.join(10_000);
    assertThat(fleet.isUp()).isFalse();

    // Honoured by the route's limiter now, which new calls use.
    assertThat(after.pauseRemainingNanos(clock.nanoTime())).isEqualTo(5 * S);
    assertThat(after.metrics().pausesSet()).isEqualTo(1);
    // And written to Redis once it answers.
    answer.countDown();
    await().atMost(TestFleet.UP_TIMEOUT).until(fleet::isUp);
    await().atMost(TestFleet.UP_TIMEOUT).until(() -> !pauseWrites.isEmpty());
    assertThat(pauseWrites).containsExactly("5000000");
  }
}
