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
 * HTTP/2 through HttpClient 5's async client ({@code HttpAsyncClients.custom()} with {@code
 * FORCE_HTTP_2}: clear text, prior knowledge) against Jetty's h2c server ({@link
 * RefusingJettyH2c}), 5.1 and 5.6, without and with the agent: a plain GET is answered over HTTP/2
 * either way, on HttpClient's dispatcher thread; a GET whose stream the server refuses unprocessed
 * ({@code RST_STREAM REFUSED_STREAM}, then 200) ends in the 200 with the agent and reaches the
 * handler once (where HttpClient alone gave the refusal back, the agent's retry stands in); a POST
 * without key refused the same way ends as without the agent and reaches the handler as often, at
 * most once.
 */
class ApacheAsyncH2cIT {
  @TempDir Path dir;

  static Stream<Arguments> jdksAndVersions() {
    return AgentScenarios.jdksWith(List.of(ApacheVersions.V5_1, ApacheVersions.V5_6));
  }

  /** What one run's application printed, and how often each refusing path reached its handler. */
  record Run(ForkedJvm.Result result, int getHandled, int postHandled) {}

  private Run run(Path jdk, ApacheVersions version, boolean agent) throws Exception {
    try (RefusingJettyH2c get = new RefusingJettyH2c("/refused", Refusal.RST_STREAM, 200);
        RefusingJettyH2c post = new RefusingJettyH2c("/refused/post", Refusal.RST_STREAM, 200)) {
      ForkedJvm.Builder b =
          ForkedJvm.builder(jdk)
              .classpath(version.jars())
              .jvmArgs(Ops.FAST_AGENT)
              .jvmArgs("-Dapp.h2=true")
              .mainClass(ApacheAsyncApp.class)
              .args(get.url("/plain"), get.url("/refused"), post.url("/refused/post"));
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
      return new Run(r, get.handled(), post.handled());
    }
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndVersions")
  void http2WorksWithTheAgentAsWithout(Path jdk, ApacheVersions version) throws Exception {
    Run plain = run(jdk, version, false);
    Run ours = run(jdk, version, true);
    ForkedJvm.Result p = plain.result();
    ForkedJvm.Result o = ours.result();
    String why =
        "without the agent:\n"
            + p.describe()
            + "\nhandled "
            + plain
            + "\nwith:\n"
            + o.describe()
            + "\nhandled "
            + ours;

    // A plain GET: HTTP/2 either way, the callback on HttpClient's dispatcher thread.
    assertThat(o.value("1.status")).as(why).isEqualTo(p.value("1.status")).isEqualTo("200");
    assertThat(o.value("1.version")).as(why).isEqualTo(p.value("1.version")).isEqualTo("HTTP/2.0");
    assertThat(o.value("1.thread")).as(why).isEqualTo(p.value("1.thread"));
    assertThat(o.value("1.thread")).as(why).startsWith("httpclient-dispatch");

    // The refused GET: the 200 with the agent, its handler reached once.
    assertThat(o.value("2.status")).as(why).isEqualTo("200");
    assertThat(o.value("2.version")).as(why).isEqualTo("HTTP/2.0");
    assertThat(ours.getHandled()).as(why).isEqualTo(1);
    assertThat(plain.getHandled()).as(why).isEqualTo("200".equals(p.value("2.status")) ? 1 : 0);
    assertThat(o.value("2.thread")).as(why).startsWith("httpclient-dispatch");

    // The refused POST: as without the agent, never twice.
    assertThat(o.value("3.status")).as(why).isEqualTo(p.value("3.status"));
    assertThat(o.value("3.error")).as(why).isEqualTo(p.value("3.error"));
    assertThat(ours.postHandled()).as(why).isEqualTo(plain.postHandled()).isLessThanOrEqualTo(1);
    assertThat(o.stderr()).as(why).doesNotContain("NOT hooked").doesNotContain("internal error");
  }
}
