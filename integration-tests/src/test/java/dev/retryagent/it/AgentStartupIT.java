package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.JdkHttpApp;
import dev.retryagent.it.apps.JdkScenarioApp;
import dev.retryagent.it.apps.LateAttachApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** How the agent starts: its one line, idempotence, and JVM options it must live with. */
class AgentStartupIT {

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void oneStartUpLineSaysWhatWasInstalled(Path jdk) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result r =
          ForkedJvm.run(jdk, null, JdkHttpApp.class, "send", server.uri("").toString(), "GET:/");

      assertThat(r.stderrLines("retry-agent " + ForkedJvm.agentVersion()))
          .as(r.describe())
          .containsExactly(
              "retry-agent "
                  + ForkedJvm.agentVersion()
                  + ": jdk-http armed (send, sendAsync); okhttp armed"
                  + " (OkHttpClient.Builder, RealCall.enqueue/cancel, Dispatcher.cancelAll, CallServerInterceptor);"
                  + " apache-httpclient armed (4.5 doExecute and HttpClientBuilder, 5.x HttpClientBuilder, HttpAsyncClientBuilder and H2AsyncClientBuilder);"
                  + " url-connection armed (openConnection http/https, JDK resend);"
                  + " config=built-in defaults,"
                  + " mode=enforce");
      // no other line: nothing on the bootstrap class path, so no note from the JVM either
      assertThat(r.stderr().lines().filter(l -> !l.startsWith("retry-agent")))
          .as(r.describe())
          .isEmpty();
    }
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void anArgumentTheAgentCannotAcceptLeavesTheApplicationRunningUninstrumented(Path jdk)
      throws Exception {
    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result r =
          ForkedJvm.run(
              jdk, "mode=sometimes", JdkHttpApp.class, "send", server.uri("").toString(), "GET:/");

      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("1.status")).isEqualTo("200");
      assertThat(r.value("intercepted")).isEqualTo("0");
      assertThat(r.stderrLines("retry-agent " + ForkedJvm.agentVersion()))
          .singleElement()
          .asString()
          .contains("not installed, the application runs without retries")
          .contains("sometimes");
    }
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void theAgentTwiceInstallsOnceAndInterceptsEachCallOnce(Path jdk) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .jvmArgs("-javaagent:" + ForkedJvm.agentJar())
              .mainClass(JdkHttpApp.class)
              .args("send", server.uri("").toString(), "GET:/a", "GET:/b")
              .run();

      assertThat(r.value("2.status")).as(r.describe()).isEqualTo("200");
      assertThat(r.value("intercepted")).isEqualTo("2");
      assertThat(server.requestCount()).isEqualTo(2);
      assertThat(r.stderrLines("retry-agent " + ForkedJvm.agentVersion())).hasSize(2);
      assertThat(r.stderrLines("retry-agent " + ForkedJvm.agentVersion()).get(1))
          .contains("already installed");
    }
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void theAgentTwiceRetriesAFailingCallOnlyOnce(Path jdk) throws Exception {
    // A server that always answers 503: maxAttempts (3) requests for each call, not 3 x 3.
    try (CountingServer server = CountingServer.start()) {
      server.setDefaultReply(Reply.status(503));
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .jvmArgs("-javaagent:" + ForkedJvm.agentJar())
              .mainClass(JdkScenarioApp.class)
              .args("send", "a|GET|" + server.uri("/a") + "||", "b|GET|" + server.uri("/b") + "||")
              .run();

      assertThat(r.value("a.status")).as(r.describe()).isEqualTo("503");
      assertThat(r.value("b.status")).as(r.describe()).isEqualTo("503");
      assertThat(server.requestCount()).as(r.describe()).isEqualTo(6);
    }
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void theInstrumentedJdkClassPassesFullBytecodeVerification(Path jdk) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .jvmArgs(
                  "-XX:+UnlockDiagnosticVMOptions",
                  "-XX:+BytecodeVerificationLocal",
                  "-XX:+BytecodeVerificationRemote")
              .mainClass(JdkHttpApp.class)
              .args("async", server.uri("").toString(), "GET:/a")
              .run();

      assertThat(r.value("1.status")).as(r.describe()).isEqualTo("200");
      assertThat(r.value("intercepted")).isEqualTo("1");
      assertThat(r.stderr()).doesNotContain("VerifyError").doesNotContain("NOT hooked");
    }
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void aLateAttachRetransformsTheAlreadyLoadedClientAndInstallsOnce(Path jdk) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .withoutAgent()
              .jvmArgs("-Djdk.attach.allowAttachSelf=true")
              .mainClass(LateAttachApp.class)
              .args(ForkedJvm.agentJar().toString(), server.uri("/late").toString(), "2")
              .run();

      assertThat(r.value("status")).as(r.describe()).isEqualTo("200");
      assertThat(r.value("intercepted")).isEqualTo("1");
      assertThat(server.requestCount()).isEqualTo(1);
      assertThat(r.stderrLines("retry-agent " + ForkedJvm.agentVersion()))
          .containsExactly(
              "retry-agent "
                  + ForkedJvm.agentVersion()
                  + ": jdk-http hooked (send, sendAsync); okhttp armed"
                  + " (OkHttpClient.Builder, RealCall.enqueue/cancel, Dispatcher.cancelAll, CallServerInterceptor);"
                  + " apache-httpclient armed (4.5 doExecute and HttpClientBuilder, 5.x HttpClientBuilder, HttpAsyncClientBuilder and H2AsyncClientBuilder);"
                  + " url-connection hooked (openConnection http/https, JDK resend);"
                  + " config=built-in defaults,"
                  + " mode=enforce",
              "retry-agent "
                  + ForkedJvm.agentVersion()
                  + ": already installed, ignoring another start");
    }
  }

  @Test
  void onJdk25WithUnsafeMemoryAccessDeniedTheAgentWorksWithoutWarnings() throws Exception {
    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result r =
          ForkedJvm.builder(Jdks.jdk25())
              .jvmArgs("--sun-misc-unsafe-memory-access=deny")
              .mainClass(JdkHttpApp.class)
              .args("send", server.uri("").toString(), "GET:/a")
              .run();

      assertThat(r.value("1.status")).as(r.describe()).isEqualTo("200");
      assertThat(r.value("intercepted")).isEqualTo("1");
      assertThat(r.stderr()).doesNotContain("WARNING");
    }
  }

  @Test
  void theJarRunsAsACommandThatPrintsItsVersion() {
    ProcessBuilder pb =
        new ProcessBuilder(
            Jdks.jdk17().resolve("bin/java").toString(),
            "-jar",
            ForkedJvm.agentJar().toString(),
            "--version");
    String out;
    try {
      Process p = pb.redirectErrorStream(true).start();
      out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      assertThat(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).isZero();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    assertThat(out.trim()).isEqualTo("retry-agent " + ForkedJvm.agentVersion());
  }
}
