package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.FutureClassApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import java.nio.file.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A class file the agent cannot rewrite (issue 14, "The agent failing"), as a JVM newer than the
 * agent's class-file reader would bring: a class named like one the agent hooks, of class file
 * version 200. It is left exactly as it came (the JVM refuses it the same way with and without the
 * agent), one line says why that client is not hooked, and the application runs on, the agent's
 * other hooks with it.
 */
class FutureClassFileIT {
  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void aClassFileTheAgentCannotRewriteIsLeftAloneAndSaidOnce(Path jdk) throws Exception {
    ForkedJvm.Result without;
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(status(503), ok("later"));
      without =
          ForkedJvm.builder(jdk)
              .withoutAgent()
              .mainClass(FutureClassApp.class)
              .args(server.uri("/x").toString())
              .run();
      assertThat(server.requestCount()).isEqualTo(1);
    }
    ForkedJvm.Result with;
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(status(503), ok("later"));
      with =
          ForkedJvm.builder(jdk)
              .mainClass(FutureClassApp.class)
              .args(server.uri("/x").toString())
              .run();
      assertThat(server.requestCount()).as("java.net.http is still retried").isEqualTo(2);
    }

    assertThat(without.value("done")).as(without.describe()).isEqualTo("true");
    assertThat(with.value("done")).as(with.describe()).isEqualTo("true");
    assertThat(without.value("defined")).startsWith("java.lang.UnsupportedClassVersionError");
    assertThat(with.value("defined")).isEqualTo(without.value("defined"));
    assertThat(without.value("status")).isEqualTo("503");
    assertThat(with.value("status")).isEqualTo("200");
    assertThat(with.stderrLines("retry-agent: okhttp NOT hooked"))
        .as(with.describe())
        .singleElement()
        .satisfies(
            line ->
                assertThat(line)
                    .contains("could not instrument okhttp3.OkHttpClient$Builder")
                    .contains("Unsupported class file")
                    .contains("200"));
  }
}
