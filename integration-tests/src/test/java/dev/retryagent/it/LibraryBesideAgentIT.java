package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.JdkScenarioApp;
import dev.retryagent.it.harness.AgentScenarios;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An application that wires the library by hand ({@code RetryingHttpClient} of its own copy of
 * retry-agent-core) and runs with the agent as well: each call is retried once, by the library, as
 * without the agent, never by both. Each of the library's attempts used to go through the agent's
 * {@code java.net.http} hook, which retried it in turn: 3 attempts of the library became 9
 * requests. Counted on the server, against a server that always answers 503.
 */
class LibraryBesideAgentIT {
  @ParameterizedTest
  @MethodSource("jdksAndWays")
  void theLibrarysCallsAreRetriedByTheLibraryAloneWithTheAgentOn(Path jdk, String way)
      throws Exception {
    Path config = JdkRetryScenarios.config();
    int without = requestsOfOneCall(jdk, way, config, false);
    int with = requestsOfOneCall(jdk, way, config, true);

    assertThat(without).isEqualTo(3); // maxAttempts of the library's default policy
    assertThat(with).isEqualTo(without);
  }

  /** Runs one GET through the library's client; the requests the server saw. */
  private static int requestsOfOneCall(Path jdk, String way, Path config, boolean agent)
      throws Exception {
    try (CountingServer server = CountingServer.start()) {
      server.setDefaultReply(Reply.status(503));
      ForkedJvm.Builder b = ForkedJvm.builder(jdk);
      b = agent ? b.agentArgs("config=" + config) : b.withoutAgent();
      ForkedJvm.Result r =
          b.classpath(JdkRetryScenariosByHandIT.libraryJars())
              .mainClass(JdkScenarioApp.class)
              .args("--by-hand", config.toString(), way, "a|GET|" + server.uri("/a") + "||")
              .run();

      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("a.status")).as(r.describe()).isEqualTo("503");
      if (agent) {
        assertThat(r.stderr()).as(r.describe()).doesNotContain("not recognised");
      }
      return server.requestCount();
    }
  }

  static Stream<Arguments> jdksAndWays() {
    return AgentScenarios.jdksWith(List.of("send", "async"));
  }
}
