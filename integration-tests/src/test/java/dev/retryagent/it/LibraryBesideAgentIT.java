package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.Apache4ScenarioApp;
import dev.retryagent.it.apps.Apache5ScenarioApp;
import dev.retryagent.it.apps.JdkScenarioApp;
import dev.retryagent.it.apps.OkScenarioApp;
import dev.retryagent.it.apps.UrlClientsApp;
import dev.retryagent.it.harness.AgentScenarios;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.OkHttpVersions;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
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
 *
 * <p>The same for the library's Apache HttpClient 4.5 and 5.x adapters and its {@code
 * RetryingUrlConnections}, there with an agent configured otherwise than the library (more
 * attempts, every method retried): the library's policy alone decides, so a GET to a server that
 * always answers 503 gets the library's 3 requests (not 3 times the agent's 5), and a POST whose
 * connection the server drops is sent once, as the library judges it unsafe to repeat (the agent
 * alone would send it 5 times).
 */
class LibraryBesideAgentIT {
  /** An agent that would retry more, and more methods, than the library's configuration. */
  private static final String GREEDY_AGENT =
      String.join(
          "\n",
          "version: 1",
          "defaults:",
          "  retry:",
          "    maxAttempts: 5",
          "    unsafeMethods: always",
          "    backoff: { initial: 10ms, max: 10ms, multiplier: 1.0, jitter: none }",
          "");

  @TempDir Path dir;

  @ParameterizedTest
  @MethodSource("jdksAndOtherClients")
  void theLibrarysOtherClientsAreRetriedByTheLibraryAloneWithTheAgentOn(Path jdk, String client)
      throws Exception {
    Path library = JdkRetryScenarios.config();
    Path agent = Files.writeString(dir.resolve("greedy.yml"), GREEDY_AGENT);
    int[] without = requestsOfTwoCalls(jdk, client, library, null);
    int[] with = requestsOfTwoCalls(jdk, client, library, agent);

    // The library's maxAttempts; a POST sent, not again (HttpURLConnection resends it once by
    // itself, as without the library: docs/url-connection.md).
    assertThat(without).containsExactly(3, client.equals("url") ? 2 : 1);
    assertThat(with).containsExactly(without);
  }

  /**
   * Runs a GET against a server that always answers 503 and a POST against one that drops the
   * connection, through the library's adapter for {@code client}, with the agent configured by
   * {@code agentConfig} or without it (null); the requests each server saw.
   */
  private static int[] requestsOfTwoCalls(Path jdk, String client, Path library, Path agentConfig)
      throws Exception {
    try (CountingServer always503 = CountingServer.start();
        CountingServer drops = CountingServer.start()) {
      always503.setDefaultReply(Reply.status(503));
      drops.setDefaultReply(Reply.closeWithoutResponse());
      ForkedJvm.Builder b = ForkedJvm.builder(jdk);
      b = agentConfig != null ? b.agentArgs("config=" + agentConfig) : b.withoutAgent();
      b = b.classpath(JdkRetryScenariosByHandIT.libraryJars());
      String api = "execute";
      switch (client) {
        case "apache4":
          b = b.classpath(ApacheVersions.V4_5.jars()).mainClass(Apache4ScenarioApp.class);
          break;
        case "apache5.1":
          b = b.classpath(ApacheVersions.V5_1.jars()).mainClass(Apache5ScenarioApp.class);
          break;
        case "apache5.6":
          b = b.classpath(ApacheVersions.V5_6.jars()).mainClass(Apache5ScenarioApp.class);
          break;
        default:
          b = b.mainClass(UrlClientsApp.class);
          api = "url";
      }
      ForkedJvm.Result r =
          b.args(
                  "--by-hand",
                  library.toString(),
                  "lib.a|" + api + "|GET|" + always503.uri("/a") + "||",
                  "lib.b|" + api + "|POST|" + drops.uri("/b") + "||payment")
              .run();

      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("lib.a.status")).as(r.describe()).isEqualTo("503");
      assertThat(r.value("lib.b.error")).as(r.describe()).isNotNull();
      // The library's listener tells the GET's give-up, by the library's policy (the agent's would
      // have given up after 5).
      assertThat(r.stderr())
          .as(r.describe())
          .containsPattern("GET 127\\.0\\.0\\.1:\\d+/a gave up after 3 attempts")
          .doesNotContain("after 5 attempts");
      if (agentConfig != null) {
        assertThat(r.stderr()).as(r.describe()).doesNotContain("not recognised");
      }
      return new int[] {always503.requestCount(), drops.requestCount()};
    }
  }

  static Stream<Arguments> jdksAndOtherClients() {
    return AgentScenarios.jdksWith(List.of("apache4", "apache5.1", "apache5.6", "url"));
  }

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
