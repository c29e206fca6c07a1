package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.JdkHttpApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * How the agent's configuration reaches it and what a bad one does: built-in defaults without an
 * argument, a file named by system property, {@code clients.jdk-http: false}, and an invalid file
 * with {@code strict} false (one error, the application runs without retries) and true (the JVM
 * stops before {@code main}).
 */
class AgentConfigurationIT {
  private CountingServer server;
  @TempDir Path dir;

  @BeforeEach
  void start() throws Exception {
    server = CountingServer.start();
  }

  @AfterEach
  void stop() throws Exception {
    server.close();
  }

  private String base() {
    return server.uri("").toString();
  }

  private Path file(String name, String yaml) throws Exception {
    Path f = dir.resolve(name);
    Files.writeString(f, yaml);
    return f;
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void withoutArgumentTheBuiltInDefaultsRetry(Path jdk) {
    server.enqueue(Reply.status(503), Reply.ok("done"));

    ForkedJvm.Result r = ForkedJvm.run(jdk, null, JdkHttpApp.class, "send", base(), "GET:/x");

    assertThat(r.value("1.status")).as(r.describe()).isEqualTo("200");
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(r.stderr()).contains("config=built-in defaults, mode=enforce");
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void aFileNamedBySystemPropertyIsRead(Path jdk) throws Exception {
    Path config = file("single.yml", "defaults:\n  retry: { maxAttempts: 1 }\n");
    server.enqueue(Reply.status(503), Reply.ok("never"));

    ForkedJvm.Result r =
        ForkedJvm.builder(jdk)
            .jvmArgs("-Dretryagent.config=" + config)
            .mainClass(JdkHttpApp.class)
            .args("send", base(), "GET:/x")
            .run();

    assertThat(r.value("1.status")).as(r.describe()).isEqualTo("503");
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(r.stderr()).contains("config=" + config + " (system property retryagent.config)");
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void clientsJdkHttpFalseLeavesTheClientAlone(Path jdk) throws Exception {
    Path config = file("off.yml", "agent:\n  clients: { jdk-http: false }\n");
    server.enqueue(Reply.status(503), Reply.ok("never"));

    ForkedJvm.Result r =
        ForkedJvm.run(jdk, config.toString(), JdkHttpApp.class, "send", base(), "GET:/x");

    assertThat(r.value("1.status")).as(r.describe()).isEqualTo("503");
    assertThat(r.value("intercepted")).isEqualTo("0");
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(r.stderr()).contains("jdk-http off (agent.clients.jdk-http: false)");
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void anInvalidFileIsOneClearErrorAndTheApplicationRunsWithoutRetries(Path jdk) throws Exception {
    Path config = file("bad.yml", "defaults:\n  retry:\n    maxAttempts: 0\n    backof: {}\n");
    server.enqueue(Reply.status(503), Reply.ok("never"));

    ForkedJvm.Result r =
        ForkedJvm.run(jdk, config.toString(), JdkHttpApp.class, "send", base(), "GET:/x");

    assertThat(r.exitCode()).as(r.describe()).isZero();
    assertThat(r.value("1.status")).isEqualTo("503");
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(r.stderr())
        .contains("not installed, the application runs without retries: invalid configuration")
        .contains("bad.yml:3:18: defaults.retry.maxAttempts")
        .contains("bad.yml:4:5: defaults.retry.backof")
        .contains("backoff");
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void anInvalidFileWithStrictStopsTheJvmBeforeMain(Path jdk) throws Exception {
    Path config =
        file("strict.yml", "agent:\n  strict: true\ndefaults:\n  retry: { maxAttempts: 99 }\n");

    ForkedJvm.Result r =
        ForkedJvm.run(jdk, config.toString(), JdkHttpApp.class, "send", base(), "GET:/x");

    assertThat(r.exitCode()).as(r.describe()).isEqualTo(1);
    assertThat(r.stdout()).isEmpty();
    assertThat(server.requestCount()).isZero();
    assertThat(r.stderr())
        .contains("invalid configuration and strict: true, stopping the JVM")
        .contains("strict.yml:4:25: defaults.retry.maxAttempts");
  }

  /**
   * The file's own {@code agent.strict: true} stops the JVM also when the file is not YAML after it
   * (a tab in the indentation), and when an override is invalid ({@code mode=observ}): the file it
   * names decides.
   */
  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void aStrictFileStopsTheJvmBeforeMainAlsoWhenItIsNotYamlFurtherOnOrAnOverrideIsInvalid(Path jdk)
      throws Exception {
    Path tab = file("tab.yml", "agent:\n  strict: true\ndefaults:\n\tretry: {}\n");
    Path valid = file("valid.yml", "agent: { strict: true }\n");

    for (String args : new String[] {tab.toString(), "config=" + valid + ",mode=observ"}) {
      ForkedJvm.Result r = ForkedJvm.run(jdk, args, JdkHttpApp.class, "send", base(), "GET:/x");

      assertThat(r.exitCode()).as(r.describe()).isEqualTo(1);
      assertThat(r.stdout()).as(r.describe()).isEmpty();
      assertThat(r.stderr())
          .as(r.describe())
          .contains("invalid configuration and strict: true, stopping the JVM");
    }
    assertThat(server.requestCount()).isZero();
  }
}
