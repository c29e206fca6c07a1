package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigException;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.MetricsSettings;
import dev.retryagent.engine.FleetLimits;
import dev.retryagent.engine.FleetRouteCounters;
import dev.retryagent.engine.PermitLimiter;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.internal.observe.JmxMetrics;
import dev.retryagent.internal.observe.RetryMetrics;
import dev.retryagent.policy.RateLimitPolicy;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@code agent.metrics} applied again and again, as reloads do. */
class ExportersTest {
  private final List<String> errors = new ArrayList<>();
  private final RetryMetrics metrics = new RetryMetrics(10);
  private final Exporters exporters = new Exporters(metrics, null, errors::add);
  private final MBeanServer server = ManagementFactory.getPlatformMBeanServer();
  private final ObjectName engineBean = JmxMetrics.engineName(JmxMetrics.DEFAULT_DOMAIN);

  @AfterEach
  void switchOff() throws Exception {
    exporters.apply(settings("agent: {metrics: {jmx: false}}"));
    exporters.stop();
  }

  @Test
  void jmxIsRegisteredUnregisteredAndRegisteredAgainByReloads() throws Exception {
    exporters.apply(settings("agent: {metrics: {jmx: true}}"));
    assertThat(exporters.jmxRegistered()).isTrue();
    assertThat(server.isRegistered(engineBean)).isTrue();

    exporters.apply(settings("agent: {metrics: {jmx: false}}"));
    assertThat(exporters.jmxRegistered()).isFalse();
    assertThat(server.isRegistered(engineBean)).isFalse();

    exporters.apply(settings("agent: {metrics: {jmx: true}}"));
    assertThat(server.isRegistered(engineBean)).isTrue();
    // Applying the same settings again registers nothing twice (which JMX would refuse).
    exporters.apply(settings("agent: {metrics: {jmx: true}}"));
    assertThat(errors).isEmpty();
  }

  /** Fleet mode with no limit asked for yet: enough for the MBeans to show its attributes. */
  private static final class IdleFleet implements FleetLimits {
    @Override
    public PermitLimiter limiter(String route, RateLimitPolicy limit, Duration retryAfterMax) {
      throw new UnsupportedOperationException("no call in this test");
    }

    @Override
    public List<FleetRouteCounters> counters() {
      return List.of();
    }

    @Override
    public boolean shared() {
      return false;
    }
  }

  /**
   * docs/fleet.md: in fleet mode each route MBean has the fleet attributes. A reload that turns
   * fleet mode on (AgentRuntime.apply hands the engine its fleet, then the metrics settings to the
   * exporters) gives them to the MBeans of routes seen before; before, those kept the attributes of
   * the moment they were registered.
   */
  @Test
  void aReloadThatTurnsFleetModeOnGivesTheRoutesMBeansTheFleetAttributes() throws Exception {
    RetryEngine engine = RetryEngine.builder().listener(metrics).build();
    Exporters withEngine = new Exporters(metrics, engine, errors::add);
    ObjectName route = JmxMetrics.routeName(JmxMetrics.DEFAULT_DOMAIN, "llm");
    try {
      withEngine.apply(settings("agent: {metrics: {jmx: true}}"));
      metrics.counterFor("llm", "https", "llm.example", 443); // the route's first call
      assertThat(server.getMBeanInfo(route).getAttributes())
          .noneMatch(a -> a.getName().startsWith("Fleet"));

      engine.useFleet(new IdleFleet());
      withEngine.apply(settings("agent: {metrics: {jmx: true}}"));

      assertThat(server.getMBeanInfo(route).getAttributes())
          .extracting(MBeanAttributeInfo::getName)
          .contains("FleetGranted", "FleetPausesHonoured", "Calls");
      assertThat(server.getAttribute(route, "FleetGranted")).isEqualTo(0L);

      engine.useFleet(null);
      withEngine.apply(settings("agent: {metrics: {jmx: true}}"));

      assertThat(server.getMBeanInfo(route).getAttributes())
          .noneMatch(a -> a.getName().startsWith("Fleet"));
      assertThat(errors).isEmpty();
    } finally {
      withEngine.apply(settings("agent: {metrics: {jmx: false}}"));
      withEngine.stop();
    }
    assertThat(server.isRegistered(route)).isFalse();
  }

  @Test
  void prometheusStartsMovesToItsNewPortAndStops() throws Exception {
    int first = freePort();
    exporters.apply(settings(prometheusOn(first)));
    assertThat(exporters.prometheusPort()).isEqualTo(first);
    assertThat(scrape(first)).contains("retryagent_");

    int second = freePort();
    exporters.apply(settings(prometheusOn(second)));
    assertThat(exporters.prometheusPort()).isEqualTo(second);
    assertThat(scrape(second)).contains("retryagent_");
    assertThat(refused(first)).as("the old port is released").isTrue();

    exporters.apply(settings("agent: {metrics: {jmx: false, prometheus: {enabled: false}}}"));
    assertThat(exporters.prometheusPort()).isEqualTo(-1);
    assertThat(refused(second)).isTrue();
    assertThat(errors).isEmpty();
  }

  @Test
  void aPortInUseIsReportedAndTakenOnALaterReloadOnceFree() throws Exception {
    int port;
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = taken.getLocalPort();
      exporters.apply(settings(prometheusOn(port)));
      assertThat(exporters.prometheusPort()).isEqualTo(-1);
      assertThat(errors).singleElement().asString().contains(String.valueOf(port));
    }
    exporters.apply(settings(prometheusOn(port)));
    assertThat(exporters.prometheusPort()).isEqualTo(port);
  }

  @Test
  void aPortInUseNamesTheKeysAndTheFileTheyCameFrom() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      AgentConfig config =
          ConfigLoader.parse(prometheusOn(taken.getLocalPort()), "/etc/app/retry.yml", Map.of());

      exporters.apply(config.metrics(), config.source());
      exporters.apply(config.metrics(), AgentConfig.BUILT_IN);

      assertThat(errors)
          .containsExactly(
              "retry-agent: cannot serve Prometheus metrics on 127.0.0.1:"
                  + taken.getLocalPort()
                  + " (java.net.BindException: Address already in use); check"
                  + " agent.metrics.prometheus.host and agent.metrics.prometheus.port in"
                  + " /etc/app/retry.yml; the application goes on without it (JMX and the exit"
                  + " summary still work)",
              "retry-agent: cannot serve Prometheus metrics on 127.0.0.1:"
                  + taken.getLocalPort()
                  + " (java.net.BindException: Address already in use); check"
                  + " agent.metrics.prometheus.host and agent.metrics.prometheus.port; the"
                  + " application goes on without it (JMX and the exit summary still work)");
    }
  }

  /**
   * What an exporter throws at apply is written through the Sanitizer, as every line the exporters
   * write themselves: here an error sink that fails with an Error quoting a URL and a header (a
   * logging bridge's class that cannot load), which escapes JMX's and the endpoint's own reports
   * (they catch RuntimeException only) and reaches apply's catch-alls.
   */
  @Test
  void aFailureOfAnExporterIsWrittenWithoutTheSecretsItsMessageQuotes() throws Exception {
    List<String> lines = new ArrayList<>();
    Exporters failing =
        new Exporters(
            metrics,
            null,
            line -> {
              if (line.startsWith("retry-agent: cannot")) {
                throw new NoClassDefFoundError(
                    "sink http://u:canary-pass@log.example/in?token=canary-query failed\n"
                        + "Authorization: Bearer canary-bearer");
              }
              lines.add(line);
            });
    // The engine's name taken (by another engine's MBeans) and the port taken: both report.
    JmxMetrics other = new JmxMetrics(new RetryMetrics(10), null, line -> {});
    other.register();
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      failing.apply(
          settings(
              "agent: {metrics: {jmx: true, prometheus: {enabled: true, port: "
                  + taken.getLocalPort()
                  + "}}}"));
    } finally {
      failing.apply(settings("agent: {metrics: {jmx: false}}"));
      failing.stop();
      other.unregister();
    }

    assertThat(lines).hasSize(2);
    assertThat(lines.get(0))
        .startsWith(
            "retry-agent: JMX metrics not registered: java.lang.NoClassDefFoundError: sink"
                + " http://log.example/in failed Authorization: <redacted>");
    assertThat(lines.get(1))
        .isEqualTo(
            "retry-agent: Prometheus metrics not served: java.lang.NoClassDefFoundError: sink"
                + " http://log.example/in failed Authorization: <redacted>");
    assertThat(lines).allSatisfy(l -> assertThat(l).doesNotContain("canary").doesNotContain("\n"));
  }

  @Test
  void aBindOtherHostsCanReachIsSaidOnceHoweverOftenItIsReloaded() throws Exception {
    int port = freePort();
    String everyInterface =
        "agent: {metrics: {jmx: false, prometheus: {enabled: true, host: 0.0.0.0, port: "
            + port
            + "}}}";
    exporters.apply(settings(everyInterface));
    exporters.apply(settings(everyInterface));
    exporters.apply(settings(everyInterface.replace("jmx: false", "jmx: true")));

    assertThat(exporters.prometheusPort()).isEqualTo(port);
    assertThat(scrape(port)).contains("retryagent_");
    assertThat(errors)
        .singleElement()
        .asString()
        .startsWith("retry-agent: the Prometheus endpoint listens on 0.0.0.0:" + port + " ")
        .contains("not on loopback");
  }

  private static String prometheusOn(int port) {
    return "agent: {metrics: {jmx: false, prometheus: {enabled: true, port: " + port + "}}}";
  }

  private static MetricsSettings settings(String yaml) throws ConfigException {
    return ConfigLoader.parse(yaml, "test.yml", Map.of()).metrics();
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private static String scrape(int port) throws IOException {
    URL url = URI.create("http://127.0.0.1:" + port + "/metrics").toURL();
    try (InputStream in = url.openStream()) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static boolean refused(int port) {
    try {
      scrape(port);
      return false;
    } catch (IOException e) {
      return true;
    }
  }
}
