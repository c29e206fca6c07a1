package dev.retryagent.fleet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.engine.FleetRouteCounters;
import dev.retryagent.engine.RateLimitedException;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.Mode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The whole seam on a real Redis: a configuration file's {@code fleet} section started as {@link
 * FleetMode}, given to two engines (two JVMs), which then share the route's limit and its 429
 * pause; another route stays per host.
 */
@Timeout(60)
class FleetModeTest {
  private static final AtomicInteger PREFIXES = new AtomicInteger();
  private static RedisServerProcess redis;
  private final List<FleetMode> fleets = new ArrayList<>();
  private final TestFleet.Lines log = new TestFleet.Lines();

  @BeforeAll
  static void startRedis() throws Exception {
    redis = RedisServerProcess.start("s3cret-pw");
  }

  @AfterAll
  static void stopRedis() throws Exception {
    redis.close();
  }

  @AfterEach
  void close() {
    fleets.forEach(FleetMode::close);
  }

  private AgentConfig config(String prefix) throws Exception {
    return ConfigLoader.parse(
        String.join(
            "\n",
            "fleet:",
            "  redis: { url: '" + redis.url().replace("redis://", "redis://:${PW}@") + "',",
            "           commandTimeout: 1s }",
            "  keyPrefix: " + prefix,
            "routes:",
            "  - name: llm",
            "    match: { hosts: [llm.example] }",
            "    retry: { maxAttempts: 1, retryAfter: { max: 3s } }",
            "    rateLimit: { enabled: true, scope: fleet, perSecond: 1, burst: 3 }",
            "  - name: other",
            "    match: { hosts: [other.example] }",
            "    rateLimit: { enabled: true, perSecond: 1, burst: 3 }"),
        "fleet-mode.yml",
        Map.of("PW", "s3cret-pw"));
  }

  private RetryEngine engine(AgentConfig c) {
    FleetMode fleet = FleetMode.start(c.fleet(), log);
    fleets.add(fleet);
    await("fleet up").atMost(TestFleet.UP_TIMEOUT).until(fleet::shared);
    RetryEngine e =
        RetryEngine.builder().policies((m, h, p, path) -> c.resolve(m, h, p, path)).build();
    e.useFleet(fleet);
    return e;
  }

  @Test
  void twoEnginesShareTheRoutesLimitAndPauseButNotAHostScopedOne() throws Exception {
    AgentConfig c = config("mode-" + PREFIXES.incrementAndGet());
    RetryEngine a = engine(c);
    RetryEngine b = engine(c);

    // burst 3 fleet-wide: two permits in A, one in B, then none anywhere (maxWait 0s).
    assertThat(a.newCall(get("llm.example")).reservePermit()).isZero();
    assertThat(a.newCall(get("llm.example")).reservePermit()).isZero();
    assertThat(b.newCall(get("llm.example")).reservePermit()).isZero();
    assertThatThrownBy(() -> b.newCall(get("llm.example")).reservePermit())
        .isInstanceOf(RateLimitedException.class);
    // The host-scoped route has its own three per engine.
    for (RetryEngine e : List.of(a, b)) {
      for (int i = 0; i < 3; i++) {
        assertThat(e.newCall(get("other.example")).reservePermit()).isZero();
      }
    }

    FleetRouteCounters counters = ((FleetMode) a.fleet()).counters().get(0);
    assertThat(counters.route()).isEqualTo("llm");
    assertThat(counters.granted()).isEqualTo(2);
    assertThat(((FleetMode) b.fleet()).counters().get(0).refused()).isEqualTo(1);
    assertThat(log.lines).allSatisfy(l -> assertThat(l).doesNotContain("s3cret"));
  }

  @Test
  void a429InOneEnginePausesTheRouteInTheOtherUpToRetryAfterMax() throws Exception {
    AgentConfig c = config("mode-" + PREFIXES.incrementAndGet());
    RetryEngine a = engine(c);
    RetryEngine b = engine(c);
    RetryCall call = a.newCall(get("llm.example"));
    assertThat(call.reservePermit()).isZero();
    call.acquireBreaker();
    call.startAttempt();
    call.onResponse(429, "120");
    // Written to Redis by A's fleet thread.
    FleetRateLimiter route = ((FleetMode) a.fleet()).connection().limiters().iterator().next();
    await().atMost(TestFleet.UP_TIMEOUT).until(() -> route.pauseWrites() == 1);

    // B's call waits for the pause, which retryAfter.max cut to 3s (it would be refused with
    // maxWait 0 only for want of a permit, not for the pause within its deadline).
    long wait = b.newCall(get("llm.example")).reservePermit();
    assertThat(wait).isBetween(2_000_000_000L, 3_000_000_000L);
    assertThat(((FleetMode) a.fleet()).counters().get(0).pausesSet()).isEqualTo(1);
    assertThat(((FleetMode) b.fleet()).counters().get(0).pausesHonoured()).isEqualTo(1);
  }

  @Test
  void anObservingEngineNeitherDrainsTheFleetsLimitNorPausesIt() throws Exception {
    AgentConfig c = config("mode-" + PREFIXES.incrementAndGet());
    RetryEngine enforcing = engine(c);
    FleetMode observeFleet = FleetMode.start(c.fleet(), log);
    fleets.add(observeFleet);
    await("fleet up").atMost(TestFleet.UP_TIMEOUT).until(observeFleet::shared);
    RetryEngine observing =
        RetryEngine.builder()
            .mode(Mode.OBSERVE)
            .policies((m, h, p, path) -> c.resolve(m, h, p, path))
            .build();
    observing.useFleet(observeFleet);

    // Observe mode never waits: its permits are its own (a local bucket, as a host-scoped route's
    // are in observe mode), so it asks Redis nothing and reserves nothing of the fleet's burst.
    for (int i = 0; i < 10; i++) {
      assertThat(observing.newCall(get("llm.example")).reservePermit()).isZero();
    }
    // The enforcing JVM still has the route's whole burst of 3.
    for (int i = 0; i < 3; i++) {
      assertThat(enforcing.newCall(get("llm.example")).reservePermit()).isZero();
    }
    assertThatThrownBy(() -> enforcing.newCall(get("llm.example")).reservePermit())
        .isInstanceOf(RateLimitedException.class);

    // A 429 observe mode saw is not the enforcing fleet's pause: observe mode has no fleet limiter,
    // so nothing is written to Redis.
    RetryCall seen = observing.newCall(get("llm.example"));
    assertThat(seen.reservePermit()).isZero();
    seen.acquireBreaker();
    seen.startAttempt();
    seen.onResponse(429, "120");
    assertThat(observeFleet.connection().limiters()).isEmpty();
  }

  private static RequestInfo get(String host) {
    return new RequestInfo() {
      @Override
      public String method() {
        return "GET";
      }

      @Override
      public String scheme() {
        return "http";
      }

      @Override
      public String host() {
        return host;
      }

      @Override
      public int port() {
        return 80;
      }

      @Override
      public String path() {
        return "/";
      }

      @Override
      public String header(String name) {
        return null;
      }

      @Override
      public boolean bodyReplayable() {
        return true;
      }
    };
  }
}
