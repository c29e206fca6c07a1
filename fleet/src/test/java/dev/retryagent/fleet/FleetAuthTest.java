package dev.retryagent.fleet;

import static dev.retryagent.fleet.TestFleet.UP_TIMEOUT;
import static dev.retryagent.fleet.TestFleet.limit;
import static dev.retryagent.fleet.TestFleet.settings;
import static dev.retryagent.fleet.TestFleet.startUp;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.Clock;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Jedis;

/** A Redis that requires a password: the right one connects, a wrong one is one clear line. */
@Timeout(60)
class FleetAuthTest {
  private static final String PASSWORD = "s3cret-of-default";
  private static final String ALICE_PASSWORD = "w@nd%r:land";
  private static final long LONG_WAIT = 30_000_000_000L;

  private static RedisServerProcess redis;
  private final TestFleet.Lines log = new TestFleet.Lines();
  private FleetConnection fleet;

  @BeforeAll
  static void startRedis() throws Exception {
    redis = RedisServerProcess.start(PASSWORD);
    try (Jedis admin = redis.admin()) {
      admin.aclSetUser("alice", "on", ">" + ALICE_PASSWORD, "~*", "+@all");
    }
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

  private String url(String userInfo) {
    return "redis://" + userInfo + "@127.0.0.1:" + redis.port();
  }

  @Test
  void connectsWithThePasswordOfTheDefaultUser() {
    fleet = startUp(settings(url(":" + PASSWORD)).build(), Clock.SYSTEM, log);
    FleetRateLimiter limiter = fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));

    assertThat(limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT)).isZero();
    assertThat(limiter.metrics().redisCalls()).isEqualTo(1);
    assertThat(limiter.metrics().fallbacks()).isZero();
  }

  @Test
  void connectsAsAnAclUserWithAPercentEncodedPassword() {
    fleet = startUp(settings(url("alice:w%40nd%25r%3Aland")).build(), Clock.SYSTEM, log);
    FleetRateLimiter limiter = fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));

    limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

    assertThat(limiter.metrics().fallbacks()).isZero();
    try (Jedis admin = redis.admin()) {
      assertThat(admin.clientList())
          .containsPattern("name=" + RedisGateway.CLIENT_NAME + " .*user=alice");
    }
  }

  @Test
  void theDatabaseOfTheUrlIsSelectedWithThePasswordAndTheClientName() {
    fleet = startUp(settings(url(":" + PASSWORD) + "/3").build(), Clock.SYSTEM, log);
    // One permit at 0.1/s keeps the route's key for ~10 s (its TTL is the TAT's lead): the check
    // below finds it on a loaded machine too, where 10/s gave it ~100 ms.
    FleetRateLimiter limiter = fleet.limiter("llm", limit(0.1, 5), Duration.ofSeconds(60));

    limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

    assertThat(limiter.metrics().fallbacks()).isZero();
    try (Jedis admin = redis.admin()) {
      assertThat(admin.clientList())
          .containsPattern("name=" + RedisGateway.CLIENT_NAME + " .*db=3 ");
      admin.select(3);
      assertThat(admin.exists(fleet.settings().keyPrefix() + ":llm:gcra")).isTrue();
    }
  }

  @Test
  void aKeyTheAclUserMayNotTouchUnderOneRouteLeavesTheOtherRoutesShared() {
    FleetSettings shared = settings(url("carol:" + ALICE_PASSWORD)).build();
    String prefix = shared.keyPrefix();
    try (Jedis admin = redis.admin()) {
      // The ACL grants the live count and one route's keys, not the other route's.
      admin.aclSetUser(
          "carol",
          "on",
          ">" + ALICE_PASSWORD,
          "~" + prefix + ":instances",
          "~" + prefix + ":good:*",
          "+@all");
    }
    fleet = startUp(shared, Clock.SYSTEM, log);
    FleetRateLimiter bad = fleet.limiter("bad", limit(10, 5), Duration.ofSeconds(60));
    FleetRateLimiter good = fleet.limiter("good", limit(10, 5), Duration.ofSeconds(60));

    bad.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);
    good.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

    assertThat(fleet.isUp()).as("%s", log).isTrue();
    assertThat(good.metrics().fallbacks()).as("%s", log).isZero();
    assertThat(bad.metrics().fallbacks()).isEqualTo(1);
    assertThat(log.lines).hasSize(1);
    assertThat(log.lines.get(0)).contains("route bad", prefix + ":bad:gcra", "NOPERM");
  }

  @Test
  void aCommandTheAclRefusesIsNotCalledAWrongPassword() {
    try (Jedis admin = redis.admin()) {
      admin.aclSetUser("dave", "on", ">" + ALICE_PASSWORD, "~*", "+@all", "-evalsha");
    }
    fleet =
        FleetConnection.start(settings(url("dave:" + ALICE_PASSWORD)).build(), Clock.SYSTEM, log);

    await().atMost(UP_TIMEOUT).until(() -> fleet.failedConnects() >= 2);

    assertThat(log.lines).hasSize(1);
    assertThat(log.lines.get(0))
        .contains("NOPERM", "evalsha", "refused a command", "PING, EVALSHA, EVAL")
        .doesNotContain("check the user and password")
        .doesNotContain(ALICE_PASSWORD);
  }

  @Test
  void aWrongPasswordIsOneClearLineWithoutSecretsAndTheLimitFallsBack() {
    String wrong = "not-the-password-42";
    fleet = FleetConnection.start(settings(url("alice:" + wrong)).build(), Clock.SYSTEM, log);
    FleetRateLimiter limiter = fleet.limiter("llm", limit(10, 5), Duration.ofSeconds(60));

    await().atMost(UP_TIMEOUT).until(() -> fleet.failedConnects() >= 3);
    long wait = limiter.reserve(System.nanoTime(), LONG_WAIT, LONG_WAIT);

    assertThat(wait).isZero();
    assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
    assertThat(fleet.state()).isEqualTo(FleetConnection.State.DOWN);
    assertThat(log.lines).hasSize(1);
    assertThat(log.lines.get(0))
        .contains("redis://127.0.0.1:" + redis.port(), "refused the credentials", "WRONGPASS")
        .contains("check the user and password in fleet.redis.url")
        .doesNotContain(wrong)
        .doesNotContain("alice");
  }

  @Test
  void noPasswordWhereOneIsRequiredIsACredentialsProblemToo() {
    fleet = FleetConnection.start(settings(redis.url()).build(), Clock.SYSTEM, log);

    await().atMost(UP_TIMEOUT).until(() -> fleet.failedConnects() >= 2);

    assertThat(log.lines).hasSize(1);
    assertThat(log.lines.get(0)).contains("refused the credentials", "NOAUTH");
  }

  @Test
  void aPasswordWhereNoneIsSetIsReportedWithoutIt() throws Exception {
    try (RedisServerProcess open = RedisServerProcess.start()) {
      String url = "redis://:" + PASSWORD + "@127.0.0.1:" + open.port();
      fleet = FleetConnection.start(settings(url).build(), Clock.SYSTEM, log);

      await().atMost(UP_TIMEOUT).until(() -> fleet.failedConnects() >= 2);

      assertThat(log.lines).hasSize(1);
      assertThat(log.lines.get(0)).contains("refused the credentials").doesNotContain(PASSWORD);
    }
  }
}
