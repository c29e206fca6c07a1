package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.it.apps.ApachePoolTimeoutApp;
import dev.retryagent.it.harness.AgentScenarios;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Ops;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An Apache HttpClient (4.5, 5.1, 5.6) whose pool of one connection another call holds: a call that
 * finds no connection within the pool's {@code connectionRequestTimeout} fails with what the
 * application gets without the agent (4.5: {@code ConnectionPoolTimeoutException}, 5.x: {@code
 * ConnectionRequestTimeoutException}), nothing is sent for it, and the agent tells it as a give-up
 * of reason {@code pool-timeout} (Prometheus' {@code give_ups_total}) with outcome {@code
 * pool-timeout} (the dead letter), not as the caller's cancel nor the host's failure.
 */
class ApachePoolTimeoutIT {
  @TempDir Path dir;

  static Stream<Arguments> jdksAndVersions() {
    return AgentScenarios.jdksWith(ApacheVersions.all());
  }

  /** What one run printed, the Prometheus text (with the agent) and the dead letters. */
  record Run(ForkedJvm.Result result, String prometheus, List<String> deadLetters, int requests) {}

  private Run run(Path jdk, ApacheVersions version, boolean agent) throws Exception {
    int port = Ops.freePort();
    Path deadLetters = dir.resolve((agent ? "with" : "without") + "-dead-letters.jsonl");
    Path config =
        Ops.write(
            dir.resolve("config.yml"),
            "agent:\n"
                + "  log: { level: info }\n"
                + "  metrics: { prometheus: { enabled: true, host: 127.0.0.1, port: "
                + port
                + " } }\n"
                + "  deadLetter: { path: \""
                + deadLetters
                + "\" }\n");
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(Reply.ok("held"), Reply.ok("waited"));
      ForkedJvm.Builder b =
          ForkedJvm.builder(jdk)
              .classpath(version.jars())
              .jvmArgs(Ops.FAST_AGENT)
              .mainClass(ApachePoolTimeoutApp.class)
              .args(
                  String.valueOf(version.major()),
                  server.uri("/held").toString(),
                  server.uri("/waiting").toString());
      if (agent) {
        b.agentArgs("config=" + config);
      } else {
        b.withoutAgent();
      }
      try (ForkedJvm.Running app = b.start()) {
        app.awaitValue("calls.done");
        String prometheus = null;
        if (agent) {
          await()
              .atMost(ForkedJvm.Running.WAIT)
              .until(() -> Ops.scrape(port) != null && Ops.scrape(port).contains("give_ups"));
          prometheus = Ops.scrape(port);
        }
        ForkedJvm.Result r = app.finish(Duration.ofSeconds(30));
        assertThat(r.exitCode()).as(r.describe()).isZero();
        if (agent) {
          await().atMost(ForkedJvm.Running.WAIT).until(() -> Files.exists(deadLetters));
        }
        List<String> letters =
            Files.exists(deadLetters) ? Files.readAllLines(deadLetters) : List.of();
        return new Run(r, prometheus, letters, server.requestCount());
      }
    }
  }

  /** A message without its numbers: 5.x's names the time it waited. */
  private static String shape(String message) {
    return message == null ? null : message.replaceAll("[0-9]+", "#");
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndVersions")
  void aCallThatFindsNoPooledConnectionInTimeFailsAsWithoutTheAgentAndIsToldAsPoolTimeout(
      Path jdk, ApacheVersions version) throws Exception {
    Run plain = run(jdk, version, false);
    Run ours = run(jdk, version, true);
    ForkedJvm.Result p = plain.result();
    ForkedJvm.Result o = ours.result();
    String why = "without the agent:\n" + p.describe() + "\nwith:\n" + o.describe();

    assertThat(p.value("held.status")).as(why).isEqualTo("200");
    assertThat(p.value("waiting.error"))
        .as(why)
        .isEqualTo(
            version.major() == 4
                ? "org.apache.http.conn.ConnectionPoolTimeoutException"
                : "org.apache.hc.core5.http.ConnectionRequestTimeoutException");
    assertThat(o.value("held.status")).as(why).isEqualTo("200");
    assertThat(o.value("waiting.error")).as(why).isEqualTo(p.value("waiting.error"));
    assertThat(shape(o.value("waiting.message")))
        .as(why)
        .isEqualTo(shape(p.value("waiting.message")));
    // Nothing went out for the waiting call, with the agent as without.
    assertThat(plain.requests()).as(why).isEqualTo(1);
    assertThat(ours.requests()).as(why).isEqualTo(1);

    String host = "host=\"http://127.0.0.1:";
    assertThat(ours.prometheus().lines())
        .as(why + "\n" + ours.prometheus())
        .anyMatch(
            l ->
                l.startsWith("retryagent_give_ups_total{")
                    && l.contains(host)
                    && l.contains("reason=\"pool-timeout\"")
                    && l.endsWith("} 1"))
        .noneMatch(
            l ->
                l.startsWith("retryagent_give_ups_total{")
                    && !l.contains("reason=\"pool-timeout\"")
                    && !l.endsWith("} 0"));
    assertThat(ours.deadLetters())
        .as(why)
        .singleElement()
        .asString()
        .contains(
            "\"path\":\"/waiting\"", "\"outcome\":\"pool-timeout\"", "\"reason\":\"pool-timeout\"");
  }
}
