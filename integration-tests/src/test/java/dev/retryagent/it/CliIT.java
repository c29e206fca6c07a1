package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.OpsApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.Ops;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** {@code java -jar agent/target/retry-agent.jar ...}: the real jar, in its own JVM. */
class CliIT {
  private static final String CONFIG =
      "agent: { mode: enforce }\n"
          + "routes:\n"
          + "  - name: llm\n"
          + "    match: { hosts: [api.llm.example.com] }\n"
          + "    retry: { maxAttempts: 4 }\n"
          + "  - name: payments\n"
          + "    match: { hosts: [pay.example.com], methods: [POST], paths: [\"/v1/charges/**\"] }\n"
          + "    retry: { maxAttempts: 5, unsafeMethods: if-idempotency-key }\n"
          + "  - name: auth\n"
          + "    match: { hosts: [auth.internal] }\n"
          + "    retry: { enabled: false }\n";

  @TempDir Path dir;

  @Test
  void versionPrintsTheBuiltVersion() {
    ForkedJvm.Result r = ForkedJvm.cli(Jdks.jdk17(), "--version");

    assertThat(r.exitCode()).as(r.describe()).isZero();
    assertThat(r.stdout()).isEqualTo("retry-agent " + ForkedJvm.agentVersion() + "\n");
  }

  @Test
  void helpNamesTheCommandsAndTheAttachLimits() {
    ForkedJvm.Result r = ForkedJvm.cli(Jdks.jdk17(), "--help");

    assertThat(r.exitCode()).as(r.describe()).isZero();
    assertThat(r.stdout())
        .contains("validate FILE", "explain FILE METHOD URL", "attach PID [FILE]")
        .contains("-XX:+EnableDynamicAgentLoading");
  }

  @Test
  void validateSaysValidInOneLine() {
    Path file = Ops.write(dir.resolve("config.yml"), CONFIG);

    ForkedJvm.Result r = ForkedJvm.cli(Jdks.jdk17(), "validate", file.toString());

    assertThat(r.exitCode()).as(r.describe()).isZero();
    assertThat(r.stdout())
        .isEqualTo(file + ": valid; mode=enforce; 3 routes (llm, payments, auth); reload=on\n");
    assertThat(r.stderr()).isEmpty();
  }

  @Test
  void validateListsEveryProblemWithItsLocationAndExitsWith1() {
    Path file =
        Ops.write(
            dir.resolve("bad.yml"),
            CONFIG.replace("maxAttempts: 4", "maxAttempts: 40").replace("mode:", "mod:"));

    ForkedJvm.Result r = ForkedJvm.cli(Jdks.jdk17(), "validate", file.toString());

    assertThat(r.exitCode()).as(r.describe()).isEqualTo(1);
    assertThat(r.stdout()).isEmpty();
    assertThat(r.stderr().lines())
        .containsExactly(
            file
                + ":1:10: agent.mod: unknown key mod; did you mean `mode`? (allowed here: mode,"
                + " strict, reload, clients, log, metrics, deadLetter, redact)",
            file + ":5:27: routes[0].retry.maxAttempts: found 40; allowed 1..10",
            file + ": invalid, 2 problems");
  }

  @Test
  void explainNamesTheRouteAndTheVerdictsWithoutEchoingSecrets() {
    Path file = Ops.write(dir.resolve("config.yml"), CONFIG);

    ForkedJvm.Result r =
        ForkedJvm.cli(
            Jdks.jdk17(),
            "explain",
            file.toString(),
            "POST",
            "https://pay.example.com/v1/charges/ch_1?token=secret-query",
            "Idempotency-Key:secret-key",
            "Authorization:Bearer secret-token");

    assertThat(r.exitCode()).as(r.describe()).isZero();
    assertThat(r.stdout().lines().findFirst())
        .hasValue(
            "POST https://pay.example.com/v1/charges/ch_1 with Authorization, Idempotency-Key ->"
                + " route payments; 503: retried (up to 5 attempts); reset: retried; connect"
                + " failure: retried");
    assertThat(r.stdout()).contains("  breaker    per host:").doesNotContain("secret");
    assertThat(r.stderr()).isEmpty();
  }

  @Test
  void anUnknownCommandIsAUsageError() {
    ForkedJvm.Result r = ForkedJvm.cli(Jdks.jdk17(), "frobnicate");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.stderr()).contains("unknown command frobnicate");
  }

  /**
   * A running service without the agent: a call before the attach is made once; after {@code attach
   * PID FILE}, the same client (created before the attach) retries. A second attach changes
   * nothing. JDK 21+ warns about the dynamically loaded agent, and the command says so.
   */
  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void attachLoadsTheAgentIntoARunningJvmAndItsExistingClientRetries(Path jdk) throws IOException {
    Path file = Ops.write(dir.resolve("config.yml"), "defaults: { retry: { maxAttempts: 3 } }\n");
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app =
            ForkedJvm.builder(jdk)
                .withoutAgent()
                .mainClass(OpsApp.class)
                .timeout(Duration.ofSeconds(120))
                .start()) {
      app.awaitValue("ready");
      server.enqueue(status(503), status(503), status(503), ok("after attach"));
      Ops.get(app, "before", server.uri("/items"));
      assertThat(app.value("before.status")).isEqualTo("503");
      assertThat(server.requestCount()).isEqualTo(1);

      ForkedJvm.Result attach =
          ForkedJvm.cli(jdk, "attach", String.valueOf(app.pid()), file.toString());

      assertThat(attach.exitCode()).as(attach.describe() + "\n" + app.describe()).isZero();
      assertThat(attach.stdout())
          .contains("attached to " + app.pid() + ": jdk-http hooked (send, sendAsync)")
          .contains("config=" + file);
      app.awaitStderr("the start-up line", s -> s.contains("jdk-http hooked"));
      assertThat(app.stderr())
          .contains("retry-agent " + ForkedJvm.agentVersion() + ": jdk-http hooked");
      if (Jdks.featureOf(jdk) >= 21) {
        assertThat(attach.stdout()).contains("-XX:+EnableDynamicAgentLoading");
        assertThat(app.stderr()).contains("WARNING: A Java agent has been loaded dynamically");
      } else {
        assertThat(attach.stdout()).doesNotContain("EnableDynamicAgentLoading");
      }

      Ops.get(app, "after", server.uri("/items"));
      assertThat(app.value("after.status")).as(app.describe()).isEqualTo("200");
      assertThat(server.requestCount()).isEqualTo(1 + 3);

      ForkedJvm.Result again =
          ForkedJvm.cli(jdk, "attach", String.valueOf(app.pid()), file.toString());
      assertThat(again.exitCode()).as(again.describe()).isZero();
      assertThat(again.stdout())
          .contains("retry-agent is already in " + app.pid())
          .contains("not attached again");
      assertThat(app.stderr()).doesNotContain("already installed");
    }
  }

  @Test
  void attachToAProcessThatIsNotAJvmFailsClearly() {
    // The test JVM's parent (Maven's launcher) is a JVM; pid 1 in a container may be anything.
    // A pid that cannot exist is certain.
    ForkedJvm.Result r = ForkedJvm.cli(Jdks.jdk17(), "attach", "999999999");

    assertThat(r.exitCode()).as(r.describe()).isEqualTo(1);
    assertThat(r.stderr()).contains("retry-agent: cannot attach to 999999999");
  }
}
