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
 * most once. The HTTP/2-only client ({@code H2AsyncClientBuilder}) likewise, requests counted
 * ({@link #theHttp2OnlyClientIsRetriedAsTheOtherAsyncClientIs}).
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
      ForkedJvm.Result r =
          app(
              jdk,
              version,
              agent,
              "-Dapp.h2=true",
              get.url("/plain"),
              get.url("/refused"),
              post.url("/refused/post"));
      return new Run(r, get.handled(), post.handled());
    }
  }

  /** {@link ApacheAsyncApp} with {@code property} (which client) calling {@code urls}. */
  private ForkedJvm.Result app(
      Path jdk, ApacheVersions version, boolean agent, String property, String... urls)
      throws Exception {
    ForkedJvm.Builder b =
        ForkedJvm.builder(jdk)
            .classpath(version.jars())
            .jvmArgs(Ops.FAST_AGENT)
            .jvmArgs(property)
            .mainClass(ApacheAsyncApp.class)
            .args(urls);
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
    return r;
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

  /**
   * What one run of the HTTP/2-only client printed, and how often each path reached its handler.
   */
  record H2OnlyRun(ForkedJvm.Result result, int busyHandled, int postHandled, int refusedHandled) {}

  private H2OnlyRun h2Only(Path jdk, ApacheVersions version, boolean agent) throws Exception {
    try (RefusingJettyH2c busy =
            new RefusingJettyH2c("/busy", Refusal.NONE, 200).firstAnswers(503, 503);
        RefusingJettyH2c post =
            new RefusingJettyH2c("/busy/post", Refusal.NONE, 200).firstAnswers(503);
        RefusingJettyH2c refused = new RefusingJettyH2c("/refused", Refusal.RST_STREAM, 200)) {
      ForkedJvm.Result r =
          app(
              jdk,
              version,
              agent,
              "-Dapp.h2only=true",
              busy.url("/busy"),
              post.url("/busy/post"),
              refused.url("/refused"));
      return new H2OnlyRun(r, busy.handled(), post.handled(), refused.handled());
    }
  }

  /**
   * HttpClient 5's HTTP/2-only async client ({@code HttpAsyncClients.createHttp2Default()}, built
   * by {@code H2AsyncClientBuilder}: clear text, prior knowledge) against Jetty's h2c server
   * ({@link RefusingJettyH2c}), 5.1 and 5.6, JDK 17 and 25, without and with the agent, each server
   * counting the requests its handler saw: a GET answered 503, 503, 200 ends 200 with the agent's
   * three attempts (without it HttpClient resends once and the application gets the 503); a POST
   * without idempotency key answered 503 is never resent with the agent (without it HttpClient
   * resends it once); a GET whose stream the server refuses unprocessed ends in the 200 with the
   * agent, its handler reached once. The callbacks on HttpClient's dispatcher thread, as without
   * the agent.
   */
  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndVersions")
  void theHttp2OnlyClientIsRetriedAsTheOtherAsyncClientIs(Path jdk, ApacheVersions version)
      throws Exception {
    H2OnlyRun plain = h2Only(jdk, version, false);
    H2OnlyRun ours = h2Only(jdk, version, true);
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
