package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.closeWithoutResponse;
import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.reset;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import dev.retryagent.it.apps.Apache4ScenarioApp;
import dev.retryagent.it.apps.Apache5ScenarioApp;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.RecordedRequest;
import dev.retryagent.it.harness.RefusedPort;
import dev.retryagent.it.harness.Reply;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * The retry scenarios of Apache HttpClient, on JDK 17 and 25 and on HttpClient 4.5.14, 5.1.3 (the
 * oldest 5.x supported) and 5.6.5, through {@code execute(request)} and {@code execute(request,
 * handler)}, by an application with no retry code whose pool holds one connection per route; each
 * subclass wires retries one way (the agent, or the library by hand) from the same {@code
 * apache-scenarios.yml}: the scenarios of {@link JdkRetryScenarios} and {@link OkRetryScenarios},
 * plus a refused connection, a spent budget and HttpClient's own resends.
 *
 * <p>Where HttpClient itself resends (5.x: a 429 or 503 once after its own wait, any method; 4.5
 * and 5.x: an idempotent request after an I/O failure), the counts say so. HttpClient asks the call
 * first: an outcome the policy retries is retried by us, never resent by HttpClient, a request the
 * policy would not repeat (a POST without key) is never resent, and any other is resent as without
 * the agent; a strategy of the application's own resends without asking, and its resends count as
 * attempts. Either way the server sees no more than {@code maxAttempts} requests where the policy
 * governs.
 *
 * <p>Every scenario has its own loopback server per API. All scenarios of one JDK and one version
 * run in one forked JVM, four at a time, and each is then checked as its own test.
 */
abstract class ApacheRetryScenarios {
  static final List<String> APIS = List.of("execute", "handler");

  /** Adds to {@code jvm} what makes retries happen, from {@code config} (and a mode override). */
  abstract ForkedJvm.Builder wire(ForkedJvm.Builder jvm, Path config, String mode);

  static Path config(String name) {
    try {
      return Path.of(ApacheRetryScenarios.class.getResource("/" + name).toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  /** What must hold after a scenario, given the HttpClient major version (4 or 5). */
  @FunctionalInterface
  interface Check {
    void check(Outcome outcome, CountingServer server, int major);
  }

  /** One scenario: how its server answers, what the application calls, what must hold. */
  record Scenario(
      String name,
      Consumer<CountingServer> script,
      List<Call> calls,
      Check check,
      Predicate<ApacheVersions> runsOn) {
    Scenario(String name, Consumer<CountingServer> script, List<Call> calls, Check check) {
      this(name, script, calls, check, v -> true);
    }
  }

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

  /**
   * A call: name, method, path on the scenario's server (or {@code refused:} for a port where
   * nothing listens), headers ({@code A=1;B=2}), body.
   */
  record Call(String name, String method, String path, String headers, String body) {}

  private static Call call(String name, String method, String path, String headers, String body) {
    return new Call(name, method, path, headers, body);
  }

  private static Call get(String path) {
    return call("a", "GET", path, "", "");
  }

  static List<Scenario> scenarios() {
    List<Scenario> list = new ArrayList<>();
    list.add(
        new Scenario(
            "503, 503, 200 gives the 200 after exactly 3 requests on one connection",
            s -> s.enqueue(status(503), status(503), ok("done")),
            List.of(get("/v1/items")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(o.get("a", "body")).isEqualTo("done");
              // both retries are ours: 5.x's own retry leaves a 503 the policy retries to us
              assertThat(s.requestCount()).isEqualTo(3);
              assertThat(s.connectionCount()).isEqualTo(1);
            }));
    list.add(
        new Scenario(
            "a gzipped 503, then 200: the retry on the 503's connection",
            // The retried body is read as it came, not through HttpClient's decoder, which stops
            // at the gzip trailer, before the end that gives the connection back.
            s -> s.enqueue(status(503).withBody("busy, come back").gzipped(), ok("done")),
            List.of(get("/v1/items")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(o.get("a", "body")).isEqualTo("done");
              assertThat(s.requestCount()).isEqualTo(2);
              assertThat(s.connectionCount()).isEqualTo(1);
            }));
    list.add(
        new Scenario(
            "a POST answered 502 without idempotency key is sent once",
            s -> s.enqueue(status(502), ok("charged twice?")),
            List.of(call("a", "POST", "/v1/charges", "", "{\"amount\":1}")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(502);
              assertThat(s.requestCount()).isEqualTo(1);
            }));
    list.add(
        new Scenario(
            "a POST answered 503 without idempotency key is sent once, HttpClient 5 resending"
                + " nothing",
            s -> s.enqueue(status(503), status(503), ok("charged twice?")),
            List.of(call("a", "POST", "/v1/charges", "", "{\"amount\":1}")),
            (o, s, major) -> {
              // without us 5.x resends a 503 of any method once by itself; governed, its
              // strategy asks the policy first, which never repeats a POST without key
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(1);
            }));
    list.add(
        new Scenario(
            "a POST without key answered 303, its GET answered 503: HttpClient 5.6 resends the"
                + " GET as without the agent",
            s ->
                s.enqueue(
                    status(303).withHeader("Location", "/v1/receipt"), status(503), ok("receipt")),
            List.of(call("a", "POST", "/v1/charges", "", "{\"amount\":1}")),
            (o, s, major) -> {
              // 5.2+ follows a redirect in a scope of the hop's own request, and resends that GET
              // (safe to send again); judged as the POST, the agent refused it and the application
              // got the 503 where HttpClient alone had the receipt.
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(s.requests())
                  .extracting(r -> r.method() + " " + r.target())
                  .containsExactly("POST /v1/charges", "GET /v1/receipt", "GET /v1/receipt");
            },
            v -> v == ApacheVersions.V5_6));
    list.add(
        new Scenario(
            "a POST without key answered 303, its GET answered 503: the POST is not sent again",
            s ->
                s.enqueue(
                    status(303).withHeader("Location", "/v1/receipt"), status(503), ok("receipt")),
            List.of(call("a", "POST", "/v1/charges", "", "{\"amount\":1}")),
            (o, s, major) -> {
              // 4.5 resends no 503; 5.1 would resend a copy of the POST itself (the hop keeps the
              // application's request as the original), which the agent refuses
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requests())
                  .extracting(r -> r.method() + " " + r.target())
                  .containsExactly("POST /v1/charges", "GET /v1/receipt");
            },
            v -> v != ApacheVersions.V5_6));
    list.add(
        new Scenario(
            "a POST with Idempotency-Key is retried with the same key and body",
            s -> s.enqueue(status(503), ok("charged")),
            List.of(
                call("a", "POST", "/keyed/charges", "Idempotency-Key=order-7", "{\"amount\":42}")),
            (o, s, major) -> {
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
            "a non-repeatable entity is sent once, even with an idempotency key",
            s -> s.enqueue(status(503), ok("stored twice?")),
            List.of(
                call("a", "POST", "/keyed/upload", "Idempotency-Key=up-1", "oneshot:{\"n\":1}")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(1);
              assertThat(s.requests().get(0).bodyText()).isEqualTo("{\"n\":1}");
            }));
    list.add(
        new Scenario(
            "a non-repeatable entity that fails while written fails as without the agent",
            s -> s.enqueue(ok("never read")),
            List.of(call("a", "PUT", "/upload", "", "oneshot-reset:{\"n\":1}")),
            (o, s, major) -> {
              // 4.5's RetryExec finds the entity written: NonRepeatableRequestException, wrapped;
              // 5.x's HttpRequestRetryExec rethrows the failure itself. Never the bare reset on
              // 4.5, nor a second write on either.
              if (major == 4) {
                assertThat(o.get("a", "error"))
                    .isEqualTo("org.apache.http.client.ClientProtocolException");
                assertThat(o.get("a", "cause"))
                    .isEqualTo("org.apache.http.client.NonRepeatableRequestException");
              } else {
                assertThat(o.get("a", "error")).isEqualTo("java.net.SocketException");
              }
              // At most one write: 5.x's HttpCore ends the chunked body it began when the entity
              // fails, so the server may take the truncated body for a request, agent or not.
              assertThat(s.requestCount()).isLessThanOrEqualTo(1);
            }));
    list.add(
        new Scenario(
            "a 404 is not retried",
            s -> s.enqueue(status(404), ok("never")),
            List.of(get("/missing")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(404);
              assertThat(s.requestCount()).isEqualTo(1);
            }));
    list.add(
        new Scenario(
            "a 429 with Retry-After: 1 is retried after at least a second",
            s -> s.enqueue(status(429).withHeader("Retry-After", "1"), ok("done")),
            List.of(get("/v1/summarise")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(s.requestCount()).isEqualTo(2);
              assertThat(o.millis("a")).isGreaterThanOrEqualTo(1000);
            }));
    list.add(
        new Scenario(
            "a 429 with Retry-After: 120 comes back at once",
            s -> s.enqueue(status(429).withHeader("Retry-After", "120").withBody("slow down")),
            List.of(get("/v1/summarise")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(429);
              assertThat(o.get("a", "body")).isEqualTo("slow down");
              assertThat(s.requestCount()).isEqualTo(1);
              // 5.2+ would wait the 120 s itself and resend: not an outcome the policy retries
              assertThat(o.millis("a")).isLessThan(10_000);
            }));
    list.add(
        new Scenario(
            // A keyed POST: HttpClient resends neither a sent POST after a reset, nor (5.x) a
            // 503's.
            "a connection reset is retried",
            s -> s.enqueue(reset(), ok("after reset")),
            List.of(call("a", "POST", "/keyed/orders", "Idempotency-Key=k-1", "{}")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(o.get("a", "body")).isEqualTo("after reset");
              assertThat(s.requestCount()).isEqualTo(2);
            }));
    list.add(
        new Scenario(
            "a refused connection is retried, then fails as HttpClient fails it",
            s -> {},
            List.of(get("refused:/v1/items")),
            (o, s, major) -> {
              assertThat(o.get("a", "error")).endsWith("HttpHostConnectException");
              assertThat(o.result().stderr())
                  .containsPattern("GET 127\\.0\\.0\\.1:\\d+/v1/items gave up after 3 attempts");
            }));
    list.add(
        new Scenario(
            "a server that always answers 503 gets exactly maxAttempts requests (4)",
            s -> s.setDefaultReply(status(503)),
            List.of(get("/max/items")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(4);
            }));
    list.add(
        new Scenario(
            "a server that always answers 503 gets exactly maxAttempts requests (3, the default)",
            s -> s.setDefaultReply(status(503)),
            List.of(get("/v1/always")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(3);
              assertThat(o.result().stderr())
                  .containsPattern("GET 127\\.0\\.0\\.1:\\d+/v1/always gave up after 3 attempts");
            }));
    list.add(
        new Scenario(
            // 4.5 resends a GET 3 times after an I/O failure by itself: one attempt of ours;
            // 5.x leaves it to us: 4 attempts of ours.
            "a GET dropped without an answer gets maxAttempts requests, HttpClient's resends"
                + " included",
            s -> s.setDefaultReply(closeWithoutResponse()),
            List.of(get("/max/dropped")),
            (o, s, major) -> {
              assertThat(o.get("a", "error")).endsWith("NoHttpResponseException");
              assertThat(s.requestCount()).isEqualTo(4);
            }));
    list.add(
        new Scenario(
            "the breaker opens and then fails fast without a request",
            s -> s.setDefaultReply(status(500)),
            List.of(
                call("b1", "GET", "/breaker/x", "", ""),
                call("b2", "GET", "/breaker/x", "", ""),
                call("b3", "GET", "/breaker/x", "", ""),
                call("b4", "GET", "/breaker/x", "", ""),
                call("b5", "GET", "/breaker/x", "", "")),
            (o, s, major) -> {
              for (String c : List.of("b1", "b2", "b3", "b4")) {
                assertThat(o.status(c)).isEqualTo(500);
              }
              assertThat(o.get("b5", "error")).endsWith("CircuitBreakerOpenException");
              assertThat(o.get("b5", "message")).contains("127.0.0.1:" + s.port());
              assertThat(s.requestCount()).isEqualTo(4);
            }));
    list.add(
        new Scenario(
            "a spent budget stops retries",
            s -> s.setDefaultReply(status(502)),
            List.of(get("/budget/items")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(502);
              assertThat(s.requestCount()).isEqualTo(1);
              assertThat(o.result().stderr()).contains("budget");
            }));
    list.add(
        new Scenario(
            "the deadline cuts retries short of maxAttempts",
            s -> s.setDefaultReply(status(502)),
            List.of(get("/deadline/items")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(502);
              // 1 s between attempts and a 3 s deadline: 3 attempts, never the 10 allowed.
              assertThat(s.requestCount()).isBetween(2, 3);
              assertThat(o.result().stderr()).contains("deadline");
              assertThat(o.millis("a")).isLessThan(3_500);
            }));
    list.add(
        new Scenario(
            "an attempt that hangs ends at perAttemptTimeout, not the client's 20 s, and is retried",
            s -> s.enqueue(Reply.hang(), ok("in time")),
            List.of(get("/bounded/items")),
            (o, s, major) -> {
              // perAttemptTimeout (1 s) shortens the application's 20 s socket timeout; its own
              // RequestConfig is kept (a shorter timeout of its own would be left as it is).
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(o.get("a", "body")).isEqualTo("in time");
              assertThat(s.requestCount()).isEqualTo(2);
              assertThat(o.millis("a")).isLessThan(15_000);
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
            s -> s.enqueue(status(502), ok("never")),
            List.of(get("/v1/items")),
            (o, s, major) -> {
              assertThat(o.status("a")).isEqualTo(502);
              assertThat(s.requestCount()).isEqualTo(1);
              assertThat(o.result().stderr()).contains("would retry");
            });
    Scenario dropped =
        new Scenario(
            "observe mode leaves HttpClient's own resends of a dropped GET as they are",
            s -> s.setDefaultReply(closeWithoutResponse()),
            List.of(get("/v1/dropped")),
            (o, s, major) -> {
              assertThat(o.get("a", "error")).endsWith("NoHttpResponseException");
              // without the agent: 4.5 resends 3 times, 5.x once (5.2+ asking for a wait first)
              assertThat(s.requestCount()).isEqualTo(major == 4 ? 4 : 2);
            });
    return matrix("observe", List.of(observed, dropped));
  }

  private Stream<DynamicNode> matrix(String mode, List<Scenario> scenarios) {
    List<DynamicNode> nodes = new ArrayList<>();
    for (Path jdk : Jdks.all()) {
      for (ApacheVersions version : ApacheVersions.all()) {
        String label = "JDK " + Jdks.featureOf(jdk) + ", " + version;
        ForkedJvm.Builder jvm = wire(ForkedJvm.builder(jdk), config("apache-scenarios.yml"), mode);
        nodes.add(dynamicContainer(label, run(jvm, version, scenarios)));
      }
    }
    return nodes.stream();
  }

  /** The scenario application of {@code version}'s major. */
  static Class<?> app(ApacheVersions version) {
    return version.major() == 4 ? Apache4ScenarioApp.class : Apache5ScenarioApp.class;
  }

  /**
   * Starts one server per scenario and API, runs every call in one JVM, then checks each scenario
   * and what holds for the whole run.
   */
  static Stream<DynamicNode> run(
      ForkedJvm.Builder jvm, ApacheVersions version, List<Scenario> scenarios) {
    List<CountingServer> servers = new ArrayList<>();
    try {
      List<String> args = new ArrayList<>();
      scenarios = scenarios.stream().filter(sc -> sc.runsOn().test(version)).toList();
      for (String api : APIS) {
        for (Scenario sc : scenarios) {
          CountingServer server = CountingServer.start();
          servers.add(server);
          sc.script().accept(server);
          String prefix = "s" + servers.size() + ".";
          for (Call c : sc.calls()) {
            String url =
                c.path().startsWith("refused:")
                    ? "http://127.0.0.1:" + deadPort() + c.path().substring("refused:".length())
                    : server.uri(c.path()).toString();
            args.add(
                String.join("|", prefix + c.name(), api, c.method(), url, c.headers(), c.body()));
          }
        }
      }
      ForkedJvm.Result result =
          jvm.classpath(version.jars())
              .mainClass(app(version))
              .args(args.toArray(new String[0]))
              .timeout(Duration.ofSeconds(120))
              .run();
      assertThat(result.exitCode()).as(result.describe()).isZero();
      List<DynamicNode> perApi = new ArrayList<>();
      int server = 0;
      for (String api : APIS) {
        List<DynamicNode> tests = new ArrayList<>();
        for (Scenario sc : scenarios) {
          CountingServer s = servers.get(server);
          Outcome outcome = new Outcome(result, "s" + (++server) + ".");
          tests.add(dynamicTest(sc.name(), () -> check(sc, outcome, s, version.major())));
        }
        perApi.add(dynamicContainer(api, tests.stream()));
      }
      perApi.add(
          dynamicTest(
              "the run used " + version + " and left no connection leased",
              () -> {
                assertThat(result.value("apache.version"))
                    .as(result.describe())
                    .isEqualTo(version.version());
                assertThat(result.value("pool.leased")).as(result.describe()).isEqualTo("0");
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

  /** A loopback port where nothing listens now. */
  private static int deadPort() {
    return RefusedPort.port();
  }

  private static void check(Scenario sc, Outcome outcome, CountingServer server, int major) {
    try {
      sc.check().check(outcome, server, major);
    } catch (AssertionError e) {
      StringBuilder b = new StringBuilder("server saw:");
      for (RecordedRequest r : server.requests()) {
        b.append("\n  ").append(r);
      }
      throw new AssertionError(e.getMessage() + "\n" + b + "\n" + outcome.result().describe(), e);
    }
  }
}
