package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.reset;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import dev.retryagent.it.apps.OkScenarioApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.OkHttpVersions;
import dev.retryagent.it.harness.RecordedRequest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * The retry scenarios of OkHttp, on JDK 17 and 25 and on OkHttp 3.14, 4.12 and 5.5, through {@code
 * execute()} and {@code enqueue()}, by an application with no retry code; each subclass wires
 * retries one way (the agent, or the library by hand) from the same {@code scenarios.yml}: the
 * scenarios of {@link JdkRetryScenarios}, plus a one-shot body, and checks that every retried
 * response was closed (its connection reused, the pool all idle at the end, no leak warning).
 *
 * <p>Every scenario has its own loopback server per API. All scenarios of one JDK and one OkHttp
 * version run in one forked JVM, and each is then checked as its own test.
 */
abstract class OkRetryScenarios {
  static final List<String> APIS = List.of("execute", "enqueue");

  /** Adds to {@code jvm} what makes retries happen, from {@code config} (and a mode override). */
  abstract ForkedJvm.Builder wire(ForkedJvm.Builder jvm, Path config, String mode);

  /** One scenario: how its server answers, what the application calls, what must hold. */
  record Scenario(
      String name,
      Consumer<CountingServer> script,
      List<Call> calls,
      BiConsumer<Outcome, CountingServer> check) {}

  /** What one forked run printed, read per call of one scenario (its calls carry a prefix). */
  record Outcome(ForkedJvm.Result result, String prefix) {
    String get(String call, String field) {
      return result.value(prefix + call + "." + field);
    }

    int status(String call) {
      String s = get(call, "status");
      assertThat(s).as("status of %s in\n%s", call, result.describe()).isNotNull();
      return Integer.parseInt(s);
    }

    long millis(String call) {
      return Long.parseLong(get(call, "millis"));
    }
  }

  /** A call: name, method, path on the scenario's server, headers ({@code A=1;B=2}), body. */
  record Call(String name, String method, String path, String headers, String body) {}

  private static Call call(String name, String method, String path, String headers, String body) {
    return new Call(name, method, path, headers, body);
  }

  static List<Scenario> scenarios() {
    List<Scenario> list = new ArrayList<>();
    list.add(
        new Scenario(
            "503, 503, 200 gives the 200 after exactly 3 requests on one connection",
            s -> s.enqueue(status(503), status(503), ok("done")),
            List.of(call("a", "GET", "/v1/items", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(o.get("a", "body")).isEqualTo("done");
              assertThat(s.requestCount()).isEqualTo(3);
              // each retried response was read and closed, so its connection was reused
              assertThat(s.connectionCount()).isEqualTo(1);
            }));
    list.add(
        new Scenario(
            "a POST answered 503 without idempotency key is sent once",
            s -> s.enqueue(status(503), ok("charged twice?")),
            List.of(call("a", "POST", "/v1/charges", "", "{\"amount\":1}")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(1);
            }));
    list.add(
        new Scenario(
            "a POST with Idempotency-Key is retried with the same key and body",
            s -> s.enqueue(status(503), ok("charged")),
            List.of(
                call("a", "POST", "/keyed/charges", "Idempotency-Key=order-7", "{\"amount\":42}")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(s.requests())
                  .hasSize(2)
                  .allSatisfy(
                      r -> {
                        assertThat(r.header("Idempotency-Key")).isEqualTo("order-7");
                        assertThat(r.bodyText()).isEqualTo("{\"amount\":42}");
                      });
            }));
    list.add(
        new Scenario(
            "a one-shot body is sent once, even with an idempotency key",
            s -> s.enqueue(status(503), ok("stored twice?")),
            List.of(
                call("a", "POST", "/keyed/upload", "Idempotency-Key=up-1", "oneshot:{\"n\":1}")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(1);
              assertThat(s.requests().get(0).bodyText()).isEqualTo("{\"n\":1}");
            }));
    list.add(
        new Scenario(
            "a 404 is not retried",
            s -> s.enqueue(status(404), ok("never")),
            List.of(call("a", "GET", "/missing", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(404);
              assertThat(s.requestCount()).isEqualTo(1);
            }));
    list.add(
        new Scenario(
            "a 429 with Retry-After: 1 is retried after at least a second",
            s -> s.enqueue(status(429).withHeader("Retry-After", "1"), ok("done")),
            List.of(call("a", "GET", "/v1/summarise", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(s.requestCount()).isEqualTo(2);
              assertThat(o.millis("a")).isGreaterThanOrEqualTo(1000);
            }));
    list.add(
        new Scenario(
            "a 429 with Retry-After: 120 comes back at once",
            s -> s.enqueue(status(429).withHeader("Retry-After", "120").withBody("slow down")),
            List.of(call("a", "GET", "/v1/summarise", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(429);
              assertThat(o.get("a", "body")).isEqualTo("slow down");
              assertThat(s.requestCount()).isEqualTo(1);
              assertThat(o.millis("a")).isLessThan(10_000);
            }));
    list.add(
        new Scenario(
            "a connection reset is retried",
            s -> s.enqueue(reset(), ok("after reset")),
            List.of(call("a", "POST", "/keyed/orders", "Idempotency-Key=k-1", "{}")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(o.get("a", "body")).isEqualTo("after reset");
              assertThat(s.requestCount()).isEqualTo(2);
            }));
    list.add(
        new Scenario(
            "a server that always answers 503 gets exactly maxAttempts requests",
            s -> s.setDefaultReply(status(503)),
            List.of(call("a", "GET", "/max/items", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(4);
            }));
    list.add(
        new Scenario(
            // OkHttp itself repeats a 503 with Retry-After: 0 once inside each of our attempts;
            // those repeats count toward maxAttempts (docs/okhttp.md), so nothing multiplies.
            "a 503 with Retry-After: 0 gets maxAttempts requests, OkHttp's own repeats included",
            s -> s.setDefaultReply(status(503).withHeader("Retry-After", "0")),
            List.of(call("a", "GET", "/max/now", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(4);
            }));
    list.add(
        new Scenario(
            "the breaker opens and then fails fast without a request",
            s -> s.setDefaultReply(status(503)),
            List.of(
                call("b1", "GET", "/breaker/x", "", ""),
                call("b2", "GET", "/breaker/x", "", ""),
                call("b3", "GET", "/breaker/x", "", ""),
                call("b4", "GET", "/breaker/x", "", ""),
                call("b5", "GET", "/breaker/x", "", "")),
            (o, s) -> {
              for (String c : List.of("b1", "b2", "b3", "b4")) {
                assertThat(o.status(c)).isEqualTo(503);
              }
              assertThat(o.get("b5", "error")).endsWith("CircuitBreakerOpenException");
              assertThat(o.get("b5", "message")).contains("127.0.0.1:" + s.port());
              assertThat(s.requestCount()).isEqualTo(4);
            }));
    list.add(
        new Scenario(
            "the deadline cuts retries short of maxAttempts",
            s -> s.setDefaultReply(status(503)),
            List.of(call("a", "GET", "/deadline/items", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              // 1 s between attempts and a 3 s deadline: 3 attempts, never the 10 allowed.
              assertThat(s.requestCount()).isBetween(2, 3);
              assertThat(o.result().stderr()).contains("deadline");
              assertThat(o.millis("a")).isLessThan(3_500);
            }));
    return list;
  }

  @TestFactory
  Stream<DynamicNode> retryScenarios() {
    return matrix(null, scenarios());
  }

  @TestFactory
  Stream<DynamicNode> observeMode() {
    Scenario observed =
        new Scenario(
            "observe mode makes one request and logs what it would do",
            s -> s.enqueue(status(503), ok("never")),
            List.of(call("a", "GET", "/v1/items", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(1);
              assertThat(o.result().stderr()).contains("would retry");
            });
    return matrix("observe", List.of(observed));
  }

  private Stream<DynamicNode> matrix(String mode, List<Scenario> scenarios) {
    List<DynamicNode> nodes = new ArrayList<>();
    for (Path jdk : Jdks.all()) {
      for (OkHttpVersions version : OkHttpVersions.all()) {
        String label = "JDK " + Jdks.featureOf(jdk) + ", " + version;
        nodes.add(dynamicContainer(label, run(jdk, version, mode, scenarios)));
      }
    }
    return nodes.stream();
  }

  /**
   * Starts one server per scenario and API, runs every call in one JVM, then checks each scenario
   * and what holds for the whole run.
   */
  private Stream<DynamicNode> run(
      Path jdk, OkHttpVersions version, String mode, List<Scenario> scenarios) {
    List<CountingServer> servers = new ArrayList<>();
    try {
      List<String> args = new ArrayList<>();
      for (String api : APIS) {
        for (Scenario sc : scenarios) {
          CountingServer server = CountingServer.start();
          servers.add(server);
          sc.script().accept(server);
          String prefix = "s" + servers.size() + ".";
          for (Call c : sc.calls()) {
            args.add(
                String.join(
                    "|",
                    prefix + c.name(),
                    api,
                    c.method(),
                    server.uri(c.path()).toString(),
                    c.headers(),
                    c.body()));
          }
        }
      }
      ForkedJvm.Result result =
          wire(ForkedJvm.builder(jdk), JdkRetryScenarios.config(), mode)
              .classpath(version.jars())
              .mainClass(OkScenarioApp.class)
              .args(args.toArray(new String[0]))
              .timeout(java.time.Duration.ofSeconds(120))
              .run();
      assertThat(result.exitCode()).as(result.describe()).isZero();
      List<DynamicNode> perApi = new ArrayList<>();
      int server = 0;
      for (String api : APIS) {
        List<DynamicNode> tests = new ArrayList<>();
        for (Scenario sc : scenarios) {
          CountingServer s = servers.get(server);
          Outcome outcome = new Outcome(result, "s" + (++server) + ".");
          tests.add(dynamicTest(sc.name(), () -> check(sc, outcome, s)));
        }
        perApi.add(dynamicContainer(api, tests.stream()));
      }
      perApi.add(
          dynamicTest(
              "the run used " + version + ", left no response open and logged no leak",
              () -> {
                assertThat(result.value("okhttp.version"))
                    .as(result.describe())
                    .isEqualTo(version.version());
                assertThat(result.value("pool.idle"))
                    .as(result.describe())
                    .isEqualTo(result.value("pool.connections"));
                assertThat(result.stderr())
                    .doesNotContainIgnoringCase("leaked")
                    .doesNotContainIgnoringCase("still open");
              }));
      return perApi.stream();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      for (CountingServer s : servers) {
        try {
          s.close();
        } catch (IOException ignored) {
          // closing anyway
        }
      }
    }
  }

  private static void check(Scenario sc, Outcome outcome, CountingServer server) {
    try {
      sc.check().accept(outcome, server);
    } catch (AssertionError e) {
      throw new AssertionError(
          e.getMessage() + "\n" + requests(server) + "\n" + outcome.result().describe(), e);
    }
  }

  private static String requests(CountingServer server) {
    StringBuilder b = new StringBuilder("server saw:");
    for (RecordedRequest r : server.requests()) {
      b.append("\n  ").append(r);
    }
    return b.toString();
  }
}
