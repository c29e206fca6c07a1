package dev.retryagent.it.http2;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.ApacheAsyncApp;
import dev.retryagent.it.harness.AgentScenarios;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Ops;
import dev.retryagent.it.http2.RefusingJettyH2c.Refusal;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * HttpClient 5's HTTP/2-only async client ({@code HttpAsyncClients.createHttp2Default()}, built by
 * {@code H2AsyncClientBuilder}: clear text, prior knowledge) against Jetty's h2c server ({@link
 * RefusingJettyH2c}), 5.1 and 5.6, JDK 17 and 25, without and with the agent, each server counting
 * the requests its handler saw: a GET answered 503, 503, 200 ends 200 with the agent's three
 * attempts (without it HttpClient resends once and the application gets the 503); a POST without
 * idempotency key answered 503 is never resent with the agent (without it HttpClient resends it
 * once); a GET whose stream the server refuses unprocessed ends in the 200 with the agent, its
 * handler reached once. The callbacks on HttpClient's dispatcher thread, as without the agent.
 */
class ApacheH2OnlyIT {
  @TempDir Path dir;

  static Stream<Arguments> jdksAndVersions() {
    return AgentScenarios.jdksWith(List.of(ApacheVersions.V5_1, ApacheVersions.V5_6));
  }

  /** What one run's application printed, and how often each path reached its handler. */
  record Run(ForkedJvm.Result result, int busyHandled, int postHandled, int refusedHandled) {}

  private Run run(Path jdk, ApacheVersions version, boolean agent) throws Exception {
    try (RefusingJettyH2c busy =
            new RefusingJettyH2c("/busy", Refusal.NONE, 200).firstAnswers(503, 503);
        RefusingJettyH2c post =
            new RefusingJettyH2c("/busy/post", Refusal.NONE, 200).firstAnswers(503);
        RefusingJettyH2c refused = new RefusingJettyH2c("/refused", Refusal.RST_STREAM, 200)) {
      ForkedJvm.Builder b =
          ForkedJvm.builder(jdk)
              .classpath(version.jars())
              .jvmArgs(Ops.FAST_AGENT)
              .jvmArgs("-Dapp.h2only=true")
              .mainClass(ApacheAsyncApp.class)
              .args(busy.url("/busy"), post.url("/busy/post"), refused.url("/refused"));
      if (agent) {
        b.agentArgs(
            "config="
                + Ops.write(
                    dir.resolve("config.yml"), "version: 1\nagent:\n  log: { level: info }\n"));
      } else {
        b.withoutAgent();
      }
      ForkedJvm.Result r = b.timeout(Duration.ofSeconds(90)).run();
      assertThat(r.exitCode()).as(r.describe()).isZero();
      return new Run(r, busy.handled(), post.handled(), refused.handled());
    }
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndVersions")
  void theHttp2OnlyClientIsRetriedAsTheOtherAsyncClientIs(Path jdk, ApacheVersions version)
      throws Exception {
    Run plain = run(jdk, version, false);
    Run ours = run(jdk, version, true);
    ForkedJvm.Result p = plain.result();
    ForkedJvm.Result o = ours.result();
    String why =
        "without the agent:\n"
            + p.describe()
            + "\n"
            + plain
            + "\nwith:\n"
            + o.describe()
            + "\n"
            + ours;

    // The 503 GET: HttpClient alone resends it once and gives the second 503 back; the agent's
    // three attempts end in the 200, HttpClient resending nothing of its own.
    assertThat(p.value("1.status")).as(why).isEqualTo("503");
    assertThat(plain.busyHandled()).as(why).isEqualTo(2);
    assertThat(o.value("1.status")).as(why).isEqualTo("200");
    assertThat(o.value("1.version")).as(why).isEqualTo("HTTP/2.0");
    assertThat(ours.busyHandled()).as(why).isEqualTo(3);

    // The POST without key: never sent twice with the agent (HttpClient alone resends a 503 POST).
    assertThat(o.value("2.status")).as(why).isEqualTo("503");
    assertThat(ours.postHandled()).as(why).isEqualTo(1);
    assertThat(p.value("2.status")).as(why).isEqualTo("200");
    assertThat(plain.postHandled()).as(why).isEqualTo(2);

    // The refused GET: the 200 with the agent, its handler reached once.
    assertThat(o.value("3.status")).as(why).isEqualTo("200");
    assertThat(ours.refusedHandled()).as(why).isEqualTo(1);
    assertThat(plain.refusedHandled()).as(why).isEqualTo("200".equals(p.value("3.status")) ? 1 : 0);

    for (String key : List.of("1.thread", "2.thread")) {
      assertThat(o.value(key)).as(why).isEqualTo(p.value(key)).startsWith("httpclient-dispatch");
    }
    assertThat(o.value("3.thread")).as(why).startsWith("httpclient-dispatch");
    assertThat(o.stderr())
        .as(why)
        .contains("H2AsyncClientBuilder")
        .doesNotContain("NOT hooked")
        .doesNotContain("internal error");
  }
}
