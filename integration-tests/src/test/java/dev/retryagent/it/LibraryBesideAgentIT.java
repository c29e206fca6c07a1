package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.JdkScenarioApp;
import dev.retryagent.it.apps.OkScenarioApp;
import dev.retryagent.it.harness.AgentScenarios;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.OkHttpVersions;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An application that wires the library by hand (its own copy of retry-agent-core: {@code
 * RetryingHttpClient} around a {@code java.net.http} client, or the {@code RetryInterceptor} on an
 * OkHttp client) and runs with the agent as well: each call is retried once, by the library, as
 * without the agent, never by both. Each of the library's attempts used to go through the agent's
 * hook (java.net.http) or interceptor (OkHttp), which retried it in turn: 3 attempts of the library
 * became 9 requests. Counted on the server, against a server that always answers 503.
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

  @ParameterizedTest
  @MethodSource("jdksAndOkHttpWays")
  void theLibrarysOkHttpCallsAreRetriedByTheLibraryAloneWithTheAgentOn(Path jdk, String way)
      throws Exception {
    Path config = JdkRetryScenarios.config();
    int without = requestsOfOneOkHttpCall(jdk, way, config, false);
    int with = requestsOfOneOkHttpCall(jdk, way, config, true);

    assertThat(without).isEqualTo(3);
    assertThat(with).isEqualTo(without);
  }

  /** Runs one GET through the library's OkHttp interceptor; the requests the server saw. */
  private static int requestsOfOneOkHttpCall(Path jdk, String way, Path config, boolean agent)
      throws Exception {
    try (CountingServer server = CountingServer.start()) {
      server.setDefaultReply(Reply.status(503));
      ForkedJvm.Builder b = ForkedJvm.builder(jdk);
      b = agent ? b.agentArgs("config=" + config) : b.withoutAgent();
      ForkedJvm.Result r =
          b.classpath(JdkRetryScenariosByHandIT.libraryJars())
              .classpath(OkHttpVersions.V4.jars())
              .mainClass(OkScenarioApp.class)
              .args("--by-hand", config.toString(), "a|" + way + "|GET|" + server.uri("/a") + "||")
              .run();

      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("a.status")).as(r.describe()).isEqualTo("503");
      // the library's interceptor alone, the agent's left out
      assertThat(r.value("interceptors"))
          .as(r.describe())
          .contains("RetryInterceptor")
          .doesNotContain("AgentInterceptor");
      return server.requestCount();
    }
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

  static Stream<Arguments> jdksAndOkHttpWays() {
    return AgentScenarios.jdksWith(List.of("execute", "enqueue"));
  }

  static Stream<Arguments> jdksAndWays() {
    return AgentScenarios.jdksWith(List.of("send", "async"));
  }
}
