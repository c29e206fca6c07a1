package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.SpringRestTemplateApp;
import dev.retryagent.it.harness.AgentScenarios;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Spring's {@code RestTemplate} on {@code HttpComponentsClientHttpRequestFactory} (spring-web 7,
 * Apache HttpClient 5.6), with the agent and {@code apache-scenarios.yml}, as an application uses
 * it: a {@code new HttpComponentsClientHttpRequestFactory()} makes its own client, whose builder
 * the agent hooked. Retries of GET and of a keyed POST (Spring's body is written again), none of a
 * POST without key, no connection left leased.
 */
class SpringRestTemplateIT {
  static Stream<org.junit.jupiter.api.Named<Path>> jdks() {
    return AgentScenarios.jdks();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("jdks")
  void restTemplateOnHttpComponentsRetriesAsTheClientBelowIt(Path jdk) throws Exception {
    try (CountingServer get = CountingServer.start();
        CountingServer keyed = CountingServer.start();
        CountingServer unkeyed = CountingServer.start()) {
      get.enqueue(status(503), status(502), ok("done"));
      keyed.enqueue(status(502), ok("charged"));
      unkeyed.enqueue(status(502), ok("charged twice?"));
      List<String> calls = new ArrayList<>();
      calls.add("s1.a|exchange|GET|" + get.uri("/v1/items") + "||");
      calls.add(
          "s2.a|exchange|POST|"
              + keyed.uri("/keyed/charges")
              + "|Idempotency-Key=order-9;Content-Type=text/plain|{\"amount\":42}");
      calls.add(
          "s3.a|exchange|POST|"
              + unkeyed.uri("/v1/charges")
              + "|Content-Type=text/plain|{\"amount\":1}");
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .agentArgs("config=" + ApacheRetryScenarios.config("apache-scenarios.yml"))
              .classpath(ApacheVersions.jarsIn("spring7"))
              .classpath(ApacheVersions.V5_6.jars())
              .mainClass(SpringRestTemplateApp.class)
              .args(calls.toArray(new String[0]))
              .timeout(Duration.ofSeconds(60))
              .run();
      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("factory.client")).as(r.describe()).contains("InternalHttpClient");

      // 503, 502, then 200: 3 requests, both retries ours (HttpClient's own retry, governed,
      // leaves a 503 the policy retries to the policy)
      assertThat(r.value("s1.a.status")).as(r.describe()).isEqualTo("200");
      assertThat(r.value("s1.a.body")).isEqualTo("done");
      assertThat(get.requestCount()).as(r.describe()).isEqualTo(3);
      assertThat(get.connectionCount()).isEqualTo(1);

      assertThat(r.value("s2.a.status")).as(r.describe()).isEqualTo("200");
      assertThat(keyed.requests())
          .hasSize(2)
          .allSatisfy(
              q -> {
                assertThat(q.header("Idempotency-Key")).isEqualTo("order-9");
                assertThat(q.bodyText()).isEqualTo("{\"amount\":42}");
              });

      assertThat(r.value("s3.a.status")).as(r.describe()).isEqualTo("502");
      assertThat(unkeyed.requestCount()).isEqualTo(1);
      assertThat(r.stderr()).contains("apache-httpclient armed");
    }
  }
}
