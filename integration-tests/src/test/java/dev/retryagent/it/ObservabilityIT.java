package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.reset;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import com.sun.tools.attach.VirtualMachine;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.Ops;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an operator sees of a forked JVM that runs with the agent, on JDK 17 and 25: the log lines
 * on stderr, the exit summary, the MBeans (read over JMX from the test), the Prometheus endpoint
 * (scraped from the test) and the dead-letter file. The requests carry an {@code Authorization}
 * header, a cookie, an idempotency key and a {@code ?token=} query, none of which may show up
 * anywhere.
 *
 * <p>One JVM per JDK makes every call; each aspect is then checked as its own test.
 */
class ObservabilityIT {
  private static final String SECRET_HEADERS =
      "Authorization=Bearer secret-bearer-token;Cookie=session=secret-cookie-value";
  private static final String KEY = "Idempotency-Key=secret-idempotency-key";

  @TempDir Path dir;

  /** Everything one run produced, read by the checks. */
  private record Observed(
      ForkedJvm.Result result,
      Map<String, Object> payments,
      Map<String, Object> search,
      Map<String, Object> engine,
      String payHostBreaker,
      String prometheus,
      List<String> deadLetters,
      int payPort,
      int searchPort) {}

  @TestFactory
  Stream<DynamicNode> whatAnOperatorSees() throws Exception {
    List<DynamicNode> nodes = new ArrayList<>();
    for (Path jdk : Jdks.all()) {
      Observed o = observe(jdk, dir.resolve("jdk" + Jdks.featureOf(jdk)));
      nodes.add(dynamicContainer("JDK " + Jdks.featureOf(jdk), checks(o)));
    }
    return nodes.stream();
  }

  private static String config(int prometheusPort, Path deadLetters) {
    return "agent:\n"
        + "  log: { level: info }\n"
        + "  metrics: { jmx: true, prometheus: { enabled: true, host: 127.0.0.1, port: "
        + prometheusPort
        + " } }\n"
        + "  deadLetter: { path: \""
        + deadLetters
        + "\" }\n"
        + "routes:\n"
        + "  - name: payments\n"
        + "    match: { paths: [\"/pay/**\"] }\n"
        + "    retry: { maxAttempts: 3, unsafeMethods: if-idempotency-key,"
        + " backoff: { initial: 5ms, max: 5ms, jitter: none } }\n"
        + "  - name: search\n"
        + "    match: { paths: [\"/search/**\"] }\n"
        + "    retry: { maxAttempts: 2, backoff: { initial: 5ms, max: 5ms, jitter: none } }\n"
        + "    circuitBreaker:\n"
        + "      scope: route\n"
        + "      window: { type: count, size: 2 }\n"
        + "      minimumCalls: 2\n"
        + "      openFor: 1h\n";
  }

  private Observed observe(Path jdk, Path work) throws Exception {
    Files.createDirectories(work);
    int prometheusPort = Ops.freePort();
    Path deadLetters = work.resolve("dead-letters.jsonl");
    Path file = Ops.write(work.resolve("config.yml"), config(prometheusPort, deadLetters));
    try (CountingServer pay = CountingServer.start();
        CountingServer search = CountingServer.start();
        ForkedJvm.Running app = Ops.start(jdk, file)) {
      pay.enqueue(status(503), ok("charged"), status(503), reset(), ok("charged again"));
      search.setDefaultReply(status(503));
      String query = "?token=secret-query-token";
      // A keyed POST: 503, then 200 (one retry).
      Ops.call(
          app, "p1", "POST", pay.uri("/pay/charges" + query), SECRET_HEADERS + ";" + KEY, "{}");
      // A POST without the key: 503, given up (not idempotent).
      Ops.call(app, "p2", "POST", pay.uri("/pay/charges" + query), SECRET_HEADERS, "{}");
      // A keyed POST: reset, then 200 (one retry).
      Ops.call(
          app, "p3", "POST", pay.uri("/pay/charges" + query), SECRET_HEADERS + ";" + KEY, "{}");
      // search: 503 twice (gives up, no attempts left), which opens its route breaker ...
      Ops.call(app, "s1", "GET", search.uri("/search/q" + query), SECRET_HEADERS, "");
      // ... so this one fails fast without a request.
      Ops.call(app, "s2", "GET", search.uri("/search/q" + query), SECRET_HEADERS, "");

      Map<String, Object> payments;
      Map<String, Object> searchBean;
      Map<String, Object> engine;
      String payHostBreaker;
      VirtualMachine vm = VirtualMachine.attach(String.valueOf(app.pid()));
      try (JMXConnector jmx =
          JMXConnectorFactory.connect(new JMXServiceURL(vm.startLocalManagementAgent()))) {
        MBeanServerConnection mbeans = jmx.getMBeanServerConnection();
        ObjectName route = new ObjectName("dev.retryagent:type=Route,name=payments");
        await()
            .atMost(ForkedJvm.Running.WAIT)
            .until(
                () ->
                    mbeans.isRegistered(route)
                        && ((Long) mbeans.getAttribute(route, "Calls")) == 3);
        payments =
            attributes(
                mbeans,
                route,
                "Calls",
                "Succeeded",
                "Failed",
                "Retries",
                "GaveUp",
                "GaveUpNotIdempotent");
        searchBean =
            attributes(
                mbeans,
                new ObjectName("dev.retryagent:type=Route,name=search"),
                "Calls",
                "Retries",
                "GaveUpAttempts",
                "GaveUpCircuitOpen",
                "BreakerRejections",
                "BreakerOpens");
        engine =
            attributes(
                mbeans,
                new ObjectName("dev.retryagent:type=Engine"),
                "Mode",
                "OpenBreakers",
                "Calls",
                "Retries",
                "GaveUp");
        payHostBreaker =
            (String)
                mbeans.getAttribute(
                    new ObjectName(
                        "dev.retryagent:type=Host,name="
                            + ObjectName.quote("http://127.0.0.1:" + pay.port())),
                    "BreakerState");
      } finally {
        vm.detach();
      }
      await().atMost(ForkedJvm.Running.WAIT).until(() -> Ops.scrape(prometheusPort) != null);
      String prometheus = Ops.scrape(prometheusPort);

      app.send("exit");
      ForkedJvm.Result result = app.finish(Duration.ofSeconds(30));
      assertThat(result.exitCode()).as(result.describe()).isZero();
      List<String> letters =
          Files.exists(deadLetters) ? Files.readAllLines(deadLetters) : List.of();
      assertThat(pay.requestCount()).as(result.describe()).isEqualTo(5);
      assertThat(search.requestCount()).as(result.describe()).isEqualTo(2);
      return new Observed(
          result,
          payments,
          searchBean,
          engine,
          payHostBreaker,
          prometheus,
          letters,
          pay.port(),
          search.port());
    }
  }

  private static Map<String, Object> attributes(
      MBeanServerConnection mbeans, ObjectName name, String... attributes) throws Exception {
    Map<String, Object> values = new LinkedHashMap<>();
    for (String a : attributes) {
      values.put(a, mbeans.getAttribute(name, a));
    }
    return values;
  }

  private static Stream<DynamicNode> checks(Observed o) {
    String stderr = o.result().stderr();
    String pay = "127.0.0.1:" + o.payPort() + "/pay/charges";
    String search = "127.0.0.1:" + o.searchPort() + "/search/q";
    List<DynamicNode> tests = new ArrayList<>();
    tests.add(
        dynamicTest(
            "one log line per retry, give-up and breaker transition, in the documented format",
            () -> {
              List<String> agentLines = agentLines(stderr);
              assertInOrder(
                  agentLines,
                  "retry-agent: POST "
                      + pay
                      + " attempt 1 failed (503), retrying in 5ms"
                      + " [route=payments]",
                  "retry-agent: POST " + pay + " succeeded (200) on attempt 2 after",
                  "retry-agent: POST "
                      + pay
                      + " gave up after 1 attempt (503): not"
                      + " idempotent (POST without Idempotency-Key) [route=payments]",
                  "retry-agent: POST " + pay + " attempt 1 failed (reset",
                  "retry-agent: GET "
                      + search
                      + " attempt 1 failed (503), retrying in 5ms"
                      + " [route=search]",
                  "retry-agent: circuit breaker route:search opened (failure rate 100% over 2"
                      + " calls); next trial in 1h",
                  "retry-agent: GET "
                      + search
                      + " gave up after 2 attempts (503): no attempts"
                      + " left (maxAttempts 2) [route=search]",
                  "retry-agent: GET "
                      + search
                      + " failed fast: circuit breaker route:search"
                      + " is open; next trial in");
              assertThat(count(agentLines, "retrying in")).isEqualTo(3);
              assertThat(count(agentLines, "gave up after")).isEqualTo(2);
              assertThat(count(agentLines, "circuit breaker route:search opened")).isEqualTo(1);
              assertThat(count(agentLines, "failed fast")).isEqualTo(1);
            }));
    tests.add(
        dynamicTest(
            "no secret reaches stderr: no header value, idempotency key or query",
            () -> assertNoSecrets(stderr)));
    tests.add(
        dynamicTest(
            "the exit summary has one line per route",
            () ->
                assertThat(lines(stderr, "retry-agent: summary"))
                    .containsExactly(
                        "retry-agent: summary [route=payments] calls=3 succeeded=2 failed=1"
                            + " retries=2 gave-up=1 (not-idempotent=1) breaker-opens=0",
                        "retry-agent: summary [route=search] calls=2 succeeded=0 failed=2"
                            + " retries=1 gave-up=2 (attempts=1, circuit-open=1)"
                            + " breaker-opens=1")));
    tests.add(
        dynamicTest(
            "the MBeans count per route and show the engine",
            () -> {
              assertThat(o.payments())
                  .containsEntry("Calls", 3L)
                  .containsEntry("Succeeded", 2L)
                  .containsEntry("Failed", 1L)
                  .containsEntry("Retries", 2L)
                  .containsEntry("GaveUp", 1L)
                  .containsEntry("GaveUpNotIdempotent", 1L);
              assertThat(o.search())
                  .containsEntry("Calls", 2L)
                  .containsEntry("Retries", 1L)
                  .containsEntry("GaveUpAttempts", 1L)
                  .containsEntry("GaveUpCircuitOpen", 1L)
                  .containsEntry("BreakerRejections", 1L)
                  .containsEntry("BreakerOpens", 1L);
              assertThat(o.engine())
                  .containsEntry("Mode", "enforce")
                  .containsEntry("OpenBreakers", 1)
                  .containsEntry("Calls", 5L)
                  .containsEntry("Retries", 3L)
                  .containsEntry("GaveUp", 3L);
              assertThat(o.payHostBreaker()).isEqualTo("closed");
            }));
    tests.add(
        dynamicTest(
            "Prometheus serves the same counters, and no secret",
            () -> {
              String payHost = "host=\"http://127.0.0.1:" + o.payPort() + "\"";
              String searchHost = "host=\"http://127.0.0.1:" + o.searchPort() + "\"";
              assertThat(o.prometheus())
                  .contains("# TYPE retryagent_calls_total counter")
                  .contains("retryagent_calls_total{route=\"payments\"," + payHost + "} 3\n")
                  .contains("retryagent_retries_total{route=\"payments\"," + payHost + "} 2\n")
                  .contains(
                      "retryagent_give_ups_total{route=\"payments\","
                          + payHost
                          + ",reason=\"not-idempotent\"} 1\n")
                  .contains("retryagent_calls_total{route=\"search\"," + searchHost + "} 2\n")
                  .contains("retryagent_breaker_state{host=\"route:search\",state=\"open\"} 1\n")
                  .contains("retryagent_breakers{state=\"open\"} 1\n");
              assertNoSecrets(o.prometheus());
            }));
    tests.add(
        dynamicTest(
            "dead letters: one JSON line per call that gave up",
            () -> {
              assertThat(o.deadLetters()).hasSize(3);
              assertThat(o.deadLetters())
                  .allSatisfy(l -> assertThat(l).startsWith("{\"time\":\"").endsWith("}"));
              assertThat(o.deadLetters().get(0))
                  .contains(
                      "\"route\":\"payments\",\"method\":\"POST\",\"scheme\":\"http\","
                          + "\"host\":\"127.0.0.1\",\"port\":"
                          + o.payPort()
                          + ",\"path\":\"/pay/charges\",\"attempts\":1,\"status\":503,"
                          + "\"outcome\":\"response\",\"error\":null,"
                          + "\"reason\":\"not-idempotent\",\"observe\":false}");
              assertThat(o.deadLetters().get(1))
                  .contains("\"route\":\"search\"")
                  .contains("\"attempts\":2,\"status\":503")
                  .contains("\"reason\":\"attempts\"");
              assertThat(o.deadLetters().get(2))
                  .contains("\"attempts\":0,\"status\":null,\"outcome\":null")
                  .contains("\"error\":\"dev.retryagent.engine.CircuitBreakerOpenException:")
                  .contains("\"reason\":\"circuit-open\"");
              assertNoSecrets(String.join("\n", o.deadLetters()));
            }));
    return tests.stream();
  }

  private static void assertNoSecrets(String text) {
    assertThat(text)
        .doesNotContain("secret")
        .doesNotContain("token=")
        .doesNotContain("Bearer")
        .doesNotContain("session=");
  }

  private static List<String> agentLines(String stderr) {
    return lines(stderr, "retry-agent: ");
  }

  private static List<String> lines(String text, String prefix) {
    return text.lines().filter(l -> l.startsWith(prefix)).collect(Collectors.toList());
  }

  private static long count(List<String> lines, String fragment) {
    return lines.stream().filter(l -> l.contains(fragment)).count();
  }

  /** Each fragment is in a line after the line of the one before. */
  private static void assertInOrder(List<String> lines, String... fragments) {
    int at = 0;
    for (String f : fragments) {
      while (at < lines.size() && !lines.get(at).contains(f)) {
        at++;
      }
      assertThat(at)
          .as("a line with \"%s\" after the previous ones in\n%s", f, String.join("\n", lines))
          .isLessThan(lines.size());
      at++;
    }
  }
}
