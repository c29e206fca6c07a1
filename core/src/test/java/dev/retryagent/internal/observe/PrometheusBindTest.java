package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.MetricsSettings;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Where the Prometheus endpoint listens (issue 14, Security): on loopback unless the configuration
 * says otherwise, and a bind other hosts can reach is said once.
 */
class PrometheusBindTest {
  private final List<String> errors = new CopyOnWriteArrayList<>();
  private PrometheusServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop();
    }
  }

  @Test
  void aConfigurationThatOnlyTurnsItOnBindsLoopbackAndSaysNothing() throws Exception {
    AgentConfig c =
        ConfigLoader.parse("agent: {metrics: {prometheus: {enabled: true}}}", "t.yml", Map.of());
    assertThat(c.metrics().prometheusHost()).isEqualTo(MetricsSettings.DEFAULT_PROMETHEUS_HOST);

    server =
        new PrometheusServer(
            new RetryMetrics(), null, c.metrics().prometheusHost(), 0, errors::add);
    assertThat(server.start()).isTrue();

    assertThat(server.address().getAddress().isLoopbackAddress()).isTrue();
    assertThat(errors).isEmpty();
  }

  @Test
  void aBindOnEveryInterfaceIsSaidOnceAndServes() throws Exception {
    server = new PrometheusServer(new RetryMetrics(), null, "0.0.0.0", 0, errors::add);
    assertThat(server.start()).isTrue();
    int port = server.port();
    server.stop();
    assertThat(server.start()).isTrue(); // started again: not said again

    assertThat(server.address().getAddress().isAnyLocalAddress()).isTrue();
    assertThat(errors)
        .containsExactly(
            "retry-agent: the Prometheus endpoint listens on 0.0.0.0:"
                + port
                + " (every interface), not on loopback: other hosts can read the agent's counters"
                + " (route and host names); agent.metrics.prometheus.host: 127.0.0.1 keeps them"
                + " on this machine");
    // Still served (the test reads it over loopback only).
    HttpResponse<String> r =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/metrics"))
                    .timeout(Duration.ofSeconds(5))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
  }

  /**
   * The line about where the endpoint listens (or why it cannot) wrote an IPv6 literal without
   * brackets, ":::9464", where no one can tell the port from the address. On every interface of
   * IPv6 ("::"): the exposure line where IPv6 is up, the bind failure where it is not.
   */
  @Test
  void anIpv6AddressIsWrittenInBracketsBeforeItsPort() throws Exception {
    server = new PrometheusServer(new RetryMetrics(), null, "::", 0, errors::add);
    server.start();
    assertThat(errors).hasSize(1);
    assertThat(errors.get(0)).containsPattern(" on \\[::]:\\d+ ");
    AgentConfig c =
        ConfigLoader.parse(
            "agent: {metrics: {prometheus: {enabled: true, host: '::1'}}}", "t.yml", Map.of());
    assertThat(c.metrics().toString()).endsWith("prometheus=[::1]:9464}");
  }
}
