package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.ConfigSources;
import dev.retryagent.engine.FleetLimits;
import dev.retryagent.engine.FleetRouteCounters;
import dev.retryagent.engine.PermitLimiter;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.RateLimitPolicy;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A 429 pause this JVM holds only itself (Redis away, so not written there yet) outlives a reload
 * that leaves the fleet for another one, or switches fleet mode off and on again.
 */
class FleetReloadTest {
  private static final long SECOND = 1_000_000_000L;

  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  private int deadPort;
  private AgentRuntime runtime;

  @BeforeEach
  void findAPortNothingListensOn() throws Exception {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      deadPort = s.getLocalPort();
    }
  }

  @AfterEach
  void leaveTheFleet() {
    FleetLimits f = runtime == null ? null : runtime.engine().fleet();
    if (f != null) {
      f.close();
    }
  }

  private AgentConfig fleet(String commandTimeout) throws Exception {
    return ConfigLoader.parse(
        String.join(
            "\n",
            "fleet:",
            "  redis: { url: 'redis://127.0.0.1:"
                + deadPort
                + "', commandTimeout: "
                + commandTimeout
                + " }",
            "  keyPrefix: reload-test",
            "routes:",
            "  - name: llm",
            "    match: { hosts: [llm.example] }",
            "    retry: { maxAttempts: 1, retryAfter: { max: 25s } }",
            "    rateLimit: { enabled: true, scope: fleet, perSecond: 10, burst: 5, maxWait: 30s }"),
        "fleet.yml",
        Map.of());
  }

  private static AgentConfig noFleet() throws Exception {
    return ConfigLoader.parse(
        String.join(
            "\n",
            "routes:",
            "  - name: llm",
            "    match: { hosts: [llm.example] }",
            "    retry: { maxAttempts: 1, retryAfter: { max: 25s } }",
            "    rateLimit: { enabled: true, perSecond: 10, burst: 5, maxWait: 30s }"),
        "no-fleet.yml",
        Map.of());
  }

  private void start(AgentConfig config) throws Exception {
    runtime = new AgentRuntime(ConfigSources.resolve(null, new Properties(), Map.of()), config);
  }

  /** A call to the route answered 429 with Retry-After: 20 (Redis away: held in this JVM only). */
  private void a429() throws Exception {
    RetryCall call = runtime.engine().newCall(new GetRequest("llm.example"));
    assertThat(call.reservePermit()).isZero();
    call.acquireBreaker();
    call.startAttempt();
    call.onResponse(429, "20");
    assertThat(runtime.engine().fleet().shared()).isFalse();
    assertThat(nextWait()).isGreaterThan(15 * SECOND);
  }

  private long nextWait() throws Exception {
    return runtime.engine().newCall(new GetRequest("llm.example")).reservePermit();
  }

  @Test
  void aReloadThatChangesTheFleetSectionKeepsThe429PauseThisJvmHolds() throws Exception {
    start(fleet("50ms"));
    a429();

    runtime.apply(fleet("60ms"));

    assertThat(nextWait()).isGreaterThan(15 * SECOND);
  }

  @Test
  void fleetModeSwitchedOffAndOnAgainKeepsThe429PauseThisJvmHolds() throws Exception {
    start(fleet("50ms"));
    a429();

    runtime.apply(noFleet());
    runtime.apply(fleet("50ms"));

    assertThat(nextWait()).isGreaterThan(15 * SECOND);
  }

  @Test
  void aReloadThatChangesTheFleetSectionKeepsTheRoutesCounters() throws Exception {
    start(fleet("50ms"));
    a429();

    runtime.apply(fleet("60ms"));

    FleetRouteCounters counters = runtime.engine().fleet().counters().get(0);
    assertThat(counters.route()).isEqualTo("llm");
    assertThat(counters.fallbacks()).isEqualTo(2);
    assertThat(counters.pausesSet()).isEqualTo(1);
  }

  /**
   * Leaving a fleet waits for its Redis (its pauses written, its thread ended: up to connectTimeout
   * + 4 commandTimeouts); a reload made before the application's first call must not make that
   * call, which builds the engine under the runtime's lock, wait for it.
   */
  @Test
  void aReloadThatLeavesTheFleetNeverHoldsUpTheFirstCallWhileTheOldRedisIsSlowToClose()
      throws Exception {
    start(fleet("50ms"));
    CountDownLatch closing = new CountDownLatch(1);
    CountDownLatch redisDone = new CountDownLatch(1);
    Field field = AgentRuntime.class.getDeclaredField("fleet");
    field.setAccessible(true);
    FleetLimits real = (FleetLimits) field.get(runtime);
    field.set(runtime, slowToClose(real, closing, redisDone));
    AgentConfig next = noFleet();
    Thread reload = new Thread(() -> runtime.apply(next), "reload");
    ExecutorService application = Executors.newSingleThreadExecutor();
    try {
      reload.start();
      assertThat(closing.await(30, TimeUnit.SECONDS)).isTrue();

      Future<RetryEngine> firstCall = application.submit(() -> runtime.engine());

      assertThat(firstCall.get(30, TimeUnit.SECONDS).fleet()).isNull();
    } finally {
      redisDone.countDown();
      reload.join(30_000);
      application.shutdownNow();
    }
    assertThat(reload.isAlive()).isFalse();
  }

  /** {@code real}, whose close says it began, then waits for {@code redisDone}. */
  private static FleetLimits slowToClose(
      FleetLimits real, CountDownLatch closing, CountDownLatch redisDone) {
    return new FleetLimits() {
      @Override
      public PermitLimiter limiter(String route, RateLimitPolicy limit, Duration retryAfterMax) {
        return real.limiter(route, limit, retryAfterMax);
      }

      @Override
      public List<FleetRouteCounters> counters() {
        return real.counters();
      }

      @Override
      public boolean shared() {
        return real.shared();
      }

      @Override
      public void close() {
        closing.countDown();
        try {
          redisDone.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        real.close();
      }
    };
  }
}
