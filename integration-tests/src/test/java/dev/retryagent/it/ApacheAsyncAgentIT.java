package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.ApacheAsyncApp;
import dev.retryagent.it.harness.AgentScenarios;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Ops;
import dev.retryagent.it.harness.RecordedRequest;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Apache HttpClient 5.x's async client ({@code HttpAsyncClients.createDefault()}) in a real JVM,
 * with {@code -javaagent} and without, on 5.1 and 5.6: a GET answered 503, 503, 200 ends 200 with
 * the agent (the policy's retries, HttpClient's own resend governed), where without it HttpClient
 * resends once and the application gets the 503; a call not retried sends the same request either
 * way; the callback runs on HttpClient's dispatcher thread either way.
 */
class ApacheAsyncAgentIT {
  @TempDir Path dir;

  static Stream<Arguments> jdksAndVersions() {
    return AgentScenarios.jdksWith(List.of(ApacheVersions.V5_1, ApacheVersions.V5_6));
  }

  /** What one run printed and what the server saw. */
  record Run(ForkedJvm.Result result, List<RecordedRequest> requests) {}

  private Run run(Path jdk, ApacheVersions version, boolean agent) throws Exception {
    Path config =
        Ops.write(dir.resolve("config.yml"), "version: 1\nagent:\n  log: { level: info }\n");
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(Reply.status(503), Reply.status(503), Reply.ok("done"));
      server.setDefaultReply(Reply.ok("plain"));
      ForkedJvm.Builder b =
          ForkedJvm.builder(jdk)
              .classpath(version.jars())
              .jvmArgs(Ops.FAST_AGENT)
              .mainClass(ApacheAsyncApp.class)
              .args(server.uri("/v1/items").toString(), server.uri("/v1/other?q=1").toString());
      if (agent) {
        b.agentArgs("config=" + config);
      } else {
        b.withoutAgent();
      }
      ForkedJvm.Result r = b.timeout(Duration.ofSeconds(90)).run();
      assertThat(r.exitCode()).as(r.describe()).isZero();
      return new Run(r, server.requests());
    }
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndVersions")
  void aRetried503EndsInSuccessWithTheAgentAndTheRestIsAsWithout(Path jdk, ApacheVersions version)
      throws Exception {
    Run plain = run(jdk, version, false);
    Run ours = run(jdk, version, true);
    ForkedJvm.Result p = plain.result();
    ForkedJvm.Result o = ours.result();
    String why = "without the agent:\n" + p.describe() + "\nwith:\n" + o.describe();

    // Without the agent: HttpClient's own resend of the 503, once (after its 1 s), then the 503.
    assertThat(p.value("1.status")).as(why).isEqualTo("503");
    // With it: the policy's three attempts, HttpClient resending nothing of its own.
    assertThat(o.value("1.status")).as(why).isEqualTo("200");
    assertThat(o.value("1.body")).as(why).isEqualTo("done");
    assertThat(plain.requests().stream().filter(q -> q.target().equals("/v1/items")).count())
        .as(why)
        .isEqualTo(2);
    assertThat(ours.requests().stream().filter(q -> q.target().equals("/v1/items")).count())
        .as(why)
        .isEqualTo(3);

    // The call not retried: the same request on the wire, the same outcome.
    assertThat(o.value("2.status")).as(why).isEqualTo(p.value("2.status")).isEqualTo("200");
    RecordedRequest plainOther = last(plain.requests(), "/v1/other?q=1");
    RecordedRequest ourOther = last(ours.requests(), "/v1/other?q=1");
    assertThat(ourOther.method()).as(why).isEqualTo(plainOther.method());
    assertThat(butHost(ourOther.headers())).as(why).isEqualTo(butHost(plainOther.headers()));

    // The callbacks on HttpClient's own dispatcher threads, with the agent as without.
    for (String key : List.of("1.thread", "2.thread")) {
      assertThat(o.value(key)).as(why).isEqualTo(p.value(key)).startsWith("httpclient-dispatch");
    }
    assertThat(o.stderr()).as(why).doesNotContain("NOT hooked").doesNotContain("internal error");
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndVersions")
  void perAttemptTimeoutCutsAStalledFirstResponseAndTheRetryAnswers(
      Path jdk, ApacheVersions version) throws Exception {
    // Without the agent the call waits the 15 s for "late": the default async client has no
    // response timeout. With it each attempt has 500 ms (HttpClient checks it about once a
    // second): HttpClient's SocketTimeoutException ends the first, a timeout the policy retries.
    Path config =
        Ops.write(
            dir.resolve("per-attempt.yml"),
            "version: 1\nagent:\n  log: { level: info }\n"
                + "defaults:\n  retry: { perAttemptTimeout: 500ms }\n");
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(Reply.ok("late").after(Duration.ofSeconds(15)), Reply.ok("fine"));
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .classpath(version.jars())
              .jvmArgs(Ops.FAST_AGENT)
              .mainClass(ApacheAsyncApp.class)
              .args(server.uri("/v1/stalls").toString())
              .agentArgs("config=" + config)
              .timeout(Duration.ofSeconds(90))
              .run();
      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("1.status")).as(r.describe()).isEqualTo("200");
      assertThat(r.value("1.body")).as(r.describe()).isEqualTo("fine");
      assertThat(r.value("1.thread")).as(r.describe()).startsWith("httpclient-dispatch");
      assertThat(server.requestCount()).as(r.describe()).isEqualTo(2);
    }
  }

  private static RecordedRequest last(List<RecordedRequest> requests, String target) {
    RecordedRequest found = null;
    for (RecordedRequest r : requests) {
      if (r.target().equals(target)) {
        found = r;
      }
    }
    assertThat(found).as(target + " in " + requests).isNotNull();
    return found;
  }

  /** The headers but {@code Host}, which names each run's own server port. */
  private static Map<String, List<String>> butHost(Map<String, List<String>> headers) {
    Map<String, List<String>> rest = new TreeMap<>(headers);
    assertThat(rest.remove("host")).isNotNull();
    return rest;
  }
}
