package dev.retryagent.fleet;

import static dev.retryagent.fleet.TestFleet.UP_TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.config.ConfigLoader;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Jedis;

/**
 * Redis up but refusing the fleet's scripts (out of memory, a renamed EVALSHA): every call pays its
 * round trip and uses the local share, so the fleet must not say it is shared (the {@code
 * retryagent_fleet_shared} gauge, {@code explain}); it says so again once a script succeeds. An
 * error of one route's keys leaves it shared.
 */
@Timeout(90)
class FleetScriptsRefusedTest {
  private static final long MS = 1_000_000L;
  private static final long LONG_WAIT = 30_000 * MS;
  private static final String ACQUIRED = "*4\r\n:1\r\n:0\r\n:0\r\n:0\r\n";

  private static final AtomicInteger PREFIXES = new AtomicInteger();
  private static RedisServerProcess redis;
  private final TestFleet.Lines log = new TestFleet.Lines();
  private FleetMode mode;
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
    if (mode != null) {
      mode.close();
    }
  }

  /**
   * Fleet mode as the agent starts it: {@link FleetMode#shared()} is what the gauge {@code
   * retryagent_fleet_shared} reports.
   */
  private void startUp(String url) throws Exception {
    mode =
        FleetMode.start(
            ConfigLoader.parse(
                    String.join(
                        "\n",
                        "fleet:",
                        "  redis: { url: '" + url + "', commandTimeout: 1s }",
                        "  keyPrefix: refused-" + PREFIXES.incrementAndGet(),
                        "routes:",
                        "  - name: llm",
                        "    match: { hosts: [llm.example] }",
                        "    rateLimit: { enabled: true, scope: fleet, perSecond: 10, burst: 5 }"),
                    "refused.yml",
                    Map.of())
                .fleet(),
            log);
    fleet = mode.connection();
    await("fleet up").atMost(UP_TIMEOUT).until(mode::shared);
  }

  /** The route's limit as the configuration above has it. */
  private FleetRateLimiter limiter(String route) {
    return fleet.limiter(route, TestFleet.limit(10, 5), Duration.ofSeconds(60));
  }

  @Test
  void aRedisOutOfMemoryIsNotSharedWhileItRefusesTheScriptsAndSharedAgainOnceItRunsThem()
      throws Exception {
    startUp(redis.url());
    FleetRateLimiter limiter = limiter("llm");
    limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    assertThat(mode.shared()).isTrue();
    assertThat(limiter.describe()).contains("(Redis up, ");

    try (Jedis admin = redis.admin()) {
      // No memory for a write (noeviction, the default policy): Redis answers every script OOM.
      admin.configSet("maxmemory", "1");
      try {
        limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

        // The call paid its round trip and used the local share; the connection works: no outage.
        assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
        assertThat(fleet.isUp()).isTrue();
        assertThat(fleet.outages()).isZero();
        // And the fleet says what the calls see.
        assertThat(mode.shared()).isFalse();
        assertThat(limiter.describe())
            .doesNotContain("(Redis up, ")
            .contains("refusing the fleet's scripts: ")
            .contains("OOM")
            .contains("this JVM limits itself to");
      } finally {
        admin.configSet("maxmemory", "0");
      }
    }

    // Redis runs the scripts again: the next call is shared, and so is the fleet, the heartbeat
    // (which Redis refused too, meanwhile) included.
    limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
    await().atMost(UP_TIMEOUT).until(mode::shared);
    assertThat(limiter.describe()).contains("(Redis up, ");
    assertThat(fleet.outages()).isZero();
  }

  @Test
  void aRenamedEvalshaIsNotSharedThoughRedisAnswersEveryPing() throws Exception {
    try (FakeRedis fake = new FakeRedis()) {
      fake.scriptReply = sha -> ACQUIRED;
      startUp(fake.url());
      FleetRateLimiter limiter = limiter("llm");
      assertThat(mode.shared()).isTrue();

      // The operator renamed EVALSHA and EVAL (rename-command): PING still answers.
      fake.scriptReply =
          sha -> "-ERR unknown command 'EVALSHA', with args beginning with: 'x' \r\n";
      limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

      assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
      assertThat(fleet.isUp()).isTrue();
      assertThat(mode.shared()).isFalse();
      assertThat(limiter.describe()).contains("refusing the fleet's scripts: ");
      // The heartbeat, a script too, is refused as well: said once, not "still shared".
      await().atMost(UP_TIMEOUT).until(() -> log.count("refuses the fleet's scripts") == 1);
      assertThat(log.count("still shared")).as("%s", log).isZero();

      fake.scriptReply = sha -> ACQUIRED;
      limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
      await().atMost(UP_TIMEOUT).until(mode::shared);
      assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
    }
  }

  @Test
  void aKeyOfTheWrongTypeUnderOneRouteLeavesTheFleetShared() throws Exception {
    startUp(redis.url());
    FleetRateLimiter bad = limiter("bad");
    try (Jedis admin = redis.admin()) {
      // Someone else's data under the route's key: that route's calls fail, not the fleet's.
      admin.hset(fleet.settings().keyPrefix() + ":bad:gcra", "field", "value");
    }

    bad.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

    assertThat(bad.metrics().fallbacks()).isEqualTo(1);
    assertThat(mode.shared()).isTrue();
  }
}
