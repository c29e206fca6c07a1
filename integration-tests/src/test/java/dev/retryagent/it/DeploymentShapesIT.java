package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.DeploymentShapeApp;
import dev.retryagent.it.apps.OkScenarioApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.OkHttpVersions;
import dev.retryagent.it.harness.Ops;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Unusual but real deployments of the agent jar, each through the real {@code -javaagent} against a
 * loopback server: the application runs as without the agent (a retried 503 GET aside), nothing of
 * the agent's reaches the application's uncaught-exception handler, and what the agent cannot do
 * there it says in one clear line naming the key that asks for it.
 *
 * <ul>
 *   <li>A runtime without {@code java.management} and {@code jdk.httpserver} (a {@code jlink} image
 *       of {@code java.base,java.net.http,java.instrument}, here {@code --limit-modules} of the
 *       same modules, which makes the same boot layer), with a file that asks for JMX and
 *       Prometheus.
 *   <li>A runtime without {@code java.net.http} (the boot layer of {@code java -m app} for a module
 *       that does not require it, or of a {@code jlink} image without it), OkHttp on the class
 *       path.
 *   <li>JDK 17 with a {@code SecurityManager} the application installs, under a policy that grants
 *       the application's code and says nothing of the agent's, as a legacy application's does.
 * </ul>
 */
class DeploymentShapesIT {
  @TempDir Path dir;

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void aRuntimeWithoutJmxOrTheHttpServerRunsTheApplicationAndSaysWhatItCannotDo(Path jdk)
      throws Exception {
    int prometheusPort = Ops.freePort();
    Path config =
        Ops.write(
            dir.resolve("retry.yml"),
            "agent:\n"
                + "  metrics:\n"
                + "    jmx: true\n"
                + "    prometheus: { enabled: true, host: 127.0.0.1, port: "
                + prometheusPort
                + " }\n");
    try (CountingServer server = CountingServer.start()) {
      server.setDefaultReply(Reply.status(503));
      ForkedJvm.Running app =
          ForkedJvm.builder(jdk)
              .agentArgs("config=" + config)
              .jvmArgs(Ops.FAST_AGENT)
              .jvmArgs("--limit-modules", "java.base,java.net.http,java.instrument")
              .mainClass(DeploymentShapeApp.class)
              .args(server.uri("/items").toString())
              .timeout(Duration.ofSeconds(60))
              .start();
      app.awaitValue("called");
      app.awaitStderr(
          "the lines on JMX and Prometheus",
          s -> s.contains("JMX metrics not registered") && s.contains("Prometheus metrics"));
      ForkedJvm.Result result = app.finish(Duration.ofSeconds(30));

      assertThat(result.value("status")).as(result.describe()).isEqualTo("503");
      assertThat(result.value("async.status")).as(result.describe()).isEqualTo("503");
      assertThat(server.requestCount()).as(result.describe()).isEqualTo(6);
      assertThat(result.value("uncaught")).as(result.describe()).isNull();
      assertThat(result.stderr()).as(result.describe()).doesNotContain("Exception in thread");
      List<String> jmx = result.stderrLines("retry-agent: JMX metrics not registered");
      assertThat(jmx)
          .as(result.describe())
          .singleElement()
          .asString()
          .contains("no java.management module", "agent.metrics.jmx: false", config.toString())
          .doesNotContain("NoClassDefFoundError");
      List<String> prometheus = result.stderrLines("retry-agent: cannot serve Prometheus metrics");
      assertThat(prometheus)
          .as(result.describe())
          .singleElement()
          .asString()
          .contains(
              "no jdk.httpserver module",
              "agent.metrics.prometheus.enabled: false",
              config.toString(),
              "the application goes on without it")
          .doesNotContain("NoClassDefFoundError");
      assertThat(result.stderr()).as(result.describe()).doesNotContain("not served");
    }
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void withoutJavaNetHttpInTheRuntimeOkHttpCallsAreRetried(Path jdk) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(Reply.status(503), Reply.ok("sync"), Reply.status(503), Reply.ok("async"));

      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .jvmArgs("--limit-modules", "java.base,java.instrument,java.logging")
              .classpath(OkHttpVersions.V4.jars())
              .mainClass(OkScenarioApp.class)
              .args(
                  "a|execute|GET|" + server.uri("/a") + "||",
                  "b|enqueue|GET|" + server.uri("/b") + "||")
              .run();

      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("a.status")).as(r.describe()).isEqualTo("200");
      assertThat(r.value("b.status")).as(r.describe()).isEqualTo("200");
      assertThat(server.requestCount()).as(r.describe()).isEqualTo(4);
      assertThat(r.stderr()).as(r.describe()).doesNotContain("NoClassDefFoundError", "internal");
      // The start-up line does not claim a hook that can never see a client.
      assertThat(r.stderr())
          .as(r.describe())
          .contains("jdk-http absent (no java.net.http module in this runtime)")
          .doesNotContain("jdk-http armed");
    }
  }

  @Test
  void underASecurityManagerThatGrantsOnlyTheApplicationItsCallsAreRetried() throws Exception {
    int prometheusPort = Ops.freePort();
    Path config =
        Ops.write(
            dir.resolve("retry.yml"),
            "agent:\n"
                + "  metrics:\n"
                + "    jmx: true\n"
                + "    prometheus: { enabled: true, host: 127.0.0.1, port: "
                + prometheusPort
                + " }\n");
    Path appCode = ForkedJvm.locationOf(DeploymentShapeApp.class);
    Path policy =
        Files.writeString(
            dir.resolve("app.policy"),
            "grant codeBase \""
                + appCode.toUri()
                + "-\" {\n  permission java.security.AllPermission;\n};\n");
    try (CountingServer server = CountingServer.start()) {
      server.setDefaultReply(Reply.status(503));
      ForkedJvm.Running app =
          ForkedJvm.builder(Jdks.jdk17())
              .agentArgs("config=" + config)
              .jvmArgs(Ops.FAST_AGENT)
              .jvmArgs("-Djava.security.manager=allow", "-Djava.security.policy=" + policy)
              .mainClass(DeploymentShapeApp.class)
              .args(server.uri("/items").toString(), "security-manager")
              .timeout(Duration.ofSeconds(60))
              .start();
      app.awaitValue("called");
      assertThat(app.value("error")).as(app.describe()).isNull();
      assertThat(app.value("async.error")).as(app.describe()).isNull();
      assertThat(app.value("status")).as(app.describe()).isEqualTo("503");
      assertThat(app.value("async.status")).as(app.describe()).isEqualTo("503");
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(6);
      // the agent's own threads work under the application's security manager too
      org.awaitility.Awaitility.await("the Prometheus endpoint\n" + app.describe())
          .atMost(ForkedJvm.Running.WAIT)
          .until(() -> Ops.scrape(prometheusPort) != null || !app.isAlive());
      assertThat(Ops.scrape(prometheusPort)).as(app.describe()).contains("retryagent_calls_total");
      ForkedJvm.Result result = app.finish(Duration.ofSeconds(30));

      assertThat(result.value("uncaught")).as(result.describe()).isNull();
      assertThat(result.stderr())
          .as(result.describe())
          .doesNotContain(
              "AccessControlException", "task failed", "not registered", "not served", "cannot");
    }
  }
}
