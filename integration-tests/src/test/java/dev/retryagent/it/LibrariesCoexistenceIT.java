package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.LibrariesApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import java.nio.file.Path;
import net.bytebuddy.ByteBuddy;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.yaml.snakeyaml.Yaml;

/**
 * An application with its own Byte Buddy 1.10 and SnakeYAML 1.33 runs unchanged with the agent,
 * which bundles newer versions of both.
 */
class LibrariesCoexistenceIT {

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void theApplicationUsesItsOwnByteBuddyAndSnakeYaml(Path jdk) throws Exception {
    Path byteBuddy = ForkedJvm.locationOf(ByteBuddy.class);
    Path snakeYaml = ForkedJvm.locationOf(Yaml.class);
    assertThat(byteBuddy.getFileName().toString()).startsWith("byte-buddy-1.10.");
    assertThat(snakeYaml.getFileName().toString()).isEqualTo("snakeyaml-1.33.jar");

    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .classpath(byteBuddy, snakeYaml)
              .mainClass(LibrariesApp.class)
              .args(server.uri("/ping").toString())
              .run();

      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("bytebuddy.from")).endsWith(byteBuddy.getFileName().toString());
      assertThat(r.value("bytebuddy.made")).isEqualTo("dev.retryagent.it.apps.Generated");
      // the agent never sets a property of the application's Byte Buddy (it bundles only its ASM)
      assertThat(r.value("bytebuddy.nexus.property")).isEqualTo("null");
      assertThat(r.value("snakeyaml.from")).endsWith("snakeyaml-1.33.jar");
      assertThat(r.value("snakeyaml.read")).isEqualTo("{retries=3, name=app}");
      assertThat(r.value("status")).isEqualTo("200");
      assertThat(r.value("intercepted")).isEqualTo("1");
      assertThat(server.requestCount()).isEqualTo(1);
    }
  }
}
