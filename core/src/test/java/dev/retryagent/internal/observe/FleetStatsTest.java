package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.FleetLimits;
import dev.retryagent.engine.FleetRouteCounters;
import dev.retryagent.engine.PermitLimiter;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.internal.engine.RateLimiter;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.testing.FakeRequest;
import dev.retryagent.testing.FakeTime;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;

/**
 * Fleet mode's counters as the exporters show them: Prometheus families per route and JMX
 * attributes on the route's MBean, read from {@link FleetLimits#counters()}; nothing without fleet
 * mode.
 */
class FleetStatsTest {
  /** A fleet of one JVM in memory: counts its permits the way the Redis fleet reports them. */
  static final class CountingFleet implements FleetLimits {
    final AtomicLong granted = new AtomicLong();
    volatile boolean shared = true;

    @Override
    public PermitLimiter limiter(String route, RateLimitPolicy limit, Duration retryAfterMax) {
      RateLimiter local = new RateLimiter(limit, 0);
      return new PermitLimiter() {
        @Override
        public long reserve(long now, long maxPermitWait, long maxTotalWait) {
          long wait = local.reserve(now, maxPermitWait, maxTotalWait);
          if (wait != REJECTED) {
            granted.incrementAndGet();
          }
          return wait;
        }

        @Override
        public void pause(long now, long pauseNanos) {
          local.pause(now, pauseNanos);
        }

        @Override
        public long pauseRemainingNanos(long now) {
          return local.pauseRemainingNanos(now);
        }
      };
    }

    @Override
    public List<FleetRouteCounters> counters() {
      return List.of(new FleetRouteCounters("llm", granted.get(), 1, 2, 3, 4, 5));
    }

    @Override
    public boolean shared() {
      return shared;
    }
  }

  private static RetryEngine engine(FakeTime time, RetryMetrics metrics) {
    Policy p = Rig.policy("llm");
    Policy fleet =
        new Policy(
            "llm",
            p.retry(),
            p.budget(),
            p.circuitBreaker(),
            RateLimitPolicy.builder().enabled(true).scope(RateLimitPolicy.Scope.FLEET).build());
    return RetryEngine.builder()
        .clock(time)
        .sleeper(time)
        .random(() -> 0.5)
        .policy(fleet)
        .listener(metrics)
        .build();
  }

  @Test
  void withoutFleetModeNoFleetFamilyAndNoFleetAttribute() throws Exception {
    FakeTime time = new FakeTime();
    RetryMetrics metrics = new RetryMetrics();
    RetryEngine engine = engine(time, metrics);
    JmxMetrics jmx = new JmxMetrics(metrics, engine, null, "dev.retryagent.nofleet");
    jmx.register();
    try {
      SyncRetryLoop.execute(
          engine.newCall(FakeRequest.get("api.example.com", "/v1/x")),
          time,
          (attempt, timeout) -> new Rig.Resp(200, null),
          Rig.ACCESS);
      assertThat(PrometheusText.render(metrics, engine)).doesNotContain("fleet");
      ObjectName route = JmxMetrics.routeName("dev.retryagent.nofleet", "llm");
      assertThat(ManagementFactory.getPlatformMBeanServer().getMBeanInfo(route).getAttributes())
          .noneMatch(a -> a.getName().startsWith("Fleet"));
    } finally {
      jmx.unregister();
    }
  }

  /**
   * docs/fleet.md lists the fleet attributes on each route MBean in fleet mode: a route whose MBean
   * was registered before a reload turned fleet mode on gets them then (and loses them when a
   * reload turns it off). Before, an MBean kept the attributes of the moment it was registered.
   */
  @Test
  void fleetModeTurnedOnAfterARoutesMBeanWasRegisteredGivesItTheFleetAttributes() throws Exception {
    FakeTime time = new FakeTime();
    RetryMetrics metrics = new RetryMetrics();
    RetryEngine engine = engine(time, metrics);
    String domain = "dev.retryagent.fleetlater";
    JmxMetrics jmx = new JmxMetrics(metrics, engine, null, domain);
    jmx.register();
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    ObjectName route = JmxMetrics.routeName(domain, "llm");
    try {
      SyncRetryLoop.execute(
          engine.newCall(FakeRequest.get("api.example.com", "/v1/x")),
          time,
          (attempt, timeout) -> new Rig.Resp(200, null),
          Rig.ACCESS);
      assertThat(server.getMBeanInfo(route).getAttributes())
          .noneMatch(a -> a.getName().startsWith("Fleet"));

      CountingFleet fleet = new CountingFleet();
      engine.useFleet(fleet);
      jmx.refresh();
      SyncRetryLoop.execute(
          engine.newCall(FakeRequest.get("api.example.com", "/v1/x")),
          time,
          (attempt, timeout) -> new Rig.Resp(200, null),
          Rig.ACCESS);

      assertThat(server.getMBeanInfo(route).getAttributes())
          .extracting(MBeanAttributeInfo::getName)
          .contains(FleetStats.ATTRIBUTES);
      assertThat(server.getAttribute(route, "FleetGranted")).isEqualTo(1L);
      assertThat(server.getAttribute(route, "Calls")).as("counters as before").isEqualTo(2L);

      engine.useFleet(null);
      jmx.refresh();
      assertThat(server.getMBeanInfo(route).getAttributes())
          .noneMatch(a -> a.getName().startsWith("Fleet"));
      assertThat(server.getAttribute(route, "Calls")).isEqualTo(2L);
    } finally {
      jmx.unregister();
    }
    assertThat(server.isRegistered(route)).isFalse();
  }

  /**
   * r22 #6: refresh unregisters a route's MBean and registers it anew; when that registration
   * failed, the route was forgotten (removed from the routes refresh walks) and never registered
   * again: the route had no MBean for the JVM's life. Kept, the next refresh tries again.
   */
  @Test
  void aRouteWhoseRegistrationAnewFailsIsRegisteredByTheNextRefresh() throws Exception {
    FakeTime time = new FakeTime();
    RetryMetrics metrics = new RetryMetrics();
    RetryEngine engine = engine(time, metrics);
    MBeanServer real = javax.management.MBeanServerFactory.newMBeanServer();
    AtomicBoolean refuse = new AtomicBoolean();
    MBeanServer server =
        (MBeanServer)
            java.lang.reflect.Proxy.newProxyInstance(
                MBeanServer.class.getClassLoader(),
                new Class<?>[] {MBeanServer.class},
                (proxy, method, args) -> {
                  if (refuse.get() && method.getName().equals("registerMBean")) {
                    throw new javax.management.MBeanRegistrationException(
                        new Exception("refused"), "refused");
                  }
                  try {
                    return method.invoke(real, args);
                  } catch (java.lang.reflect.InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
    String domain = "dev.retryagent.refreshfails";
    JmxMetrics jmx = new JmxMetrics(metrics, engine, line -> {}, domain, null, server);
    jmx.register();
    ObjectName route = JmxMetrics.routeName(domain, "llm");
    try {
      SyncRetryLoop.execute(
          engine.newCall(FakeRequest.get("api.example.com", "/v1/x")),
          time,
          (attempt, timeout) -> new Rig.Resp(200, null),
          Rig.ACCESS);
      assertThat(real.isRegistered(route)).isTrue();

      engine.useFleet(new CountingFleet());
      refuse.set(true);
      jmx.refresh();
      assertThat(real.isRegistered(route)).isFalse();

      refuse.set(false);
      jmx.refresh();
      assertThat(real.isRegistered(route)).isTrue();
      assertThat(real.getMBeanInfo(route).getAttributes())
          .extracting(MBeanAttributeInfo::getName)
          .contains(FleetStats.ATTRIBUTES);
    } finally {
      jmx.unregister();
    }
    assertThat(real.isRegistered(route)).isFalse();
  }

  @Test
  void fleetCountersShowPerRouteInPrometheusAndJmx() throws Exception {
    FakeTime time = new FakeTime();
    RetryMetrics metrics = new RetryMetrics();
    RetryEngine engine = engine(time, metrics);
    CountingFleet fleet = new CountingFleet();
    engine.useFleet(fleet);
    JmxMetrics jmx = new JmxMetrics(metrics, engine, null, "dev.retryagent.fleet");
    jmx.register();
    try {
      for (int i = 0; i < 2; i++) {
        SyncRetryLoop.execute(
            engine.newCall(FakeRequest.get("api.example.com", "/v1/x")),
            time,
            (attempt, timeout) -> new Rig.Resp(200, null),
            Rig.ACCESS);
      }
      assertThat(PrometheusText.render(metrics, engine).lines())
          .contains(
              "retryagent_fleet_shared 1",
              "retryagent_fleet_permits_total{route=\"llm\",result=\"granted\"} 2",
              "retryagent_fleet_permits_total{route=\"llm\",result=\"waited\"} 1",
              "retryagent_fleet_permits_total{route=\"llm\",result=\"refused\"} 2",
              "retryagent_fleet_permits_total{route=\"llm\",result=\"fallback\"} 3",
              "retryagent_fleet_pauses_total{route=\"llm\",kind=\"set\"} 4",
              "retryagent_fleet_pauses_total{route=\"llm\",kind=\"honoured\"} 5");
      MBeanServer server = ManagementFactory.getPlatformMBeanServer();
      ObjectName route = JmxMetrics.routeName("dev.retryagent.fleet", "llm");
      assertThat(server.getAttribute(route, "FleetGranted")).isEqualTo(2L);
      assertThat(server.getAttribute(route, "FleetFallbacks")).isEqualTo(3L);
      assertThat(server.getAttribute(route, "FleetPausesHonoured")).isEqualTo(5L);
      fleet.shared = false;
      assertThat(PrometheusText.render(metrics, engine).lines())
          .contains("retryagent_fleet_shared 0");
    } finally {
      jmx.unregister();
    }
  }
}
