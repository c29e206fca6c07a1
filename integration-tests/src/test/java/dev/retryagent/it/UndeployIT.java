package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.LibraryUndeployApp;
import dev.retryagent.it.apps.UndeployApp;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.OkHttpVersions;
import dev.retryagent.it.harness.Reply;
import java.io.File;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A webapp's class loader that made retried calls is collected once the webapp is undeployed, as
 * without the agent: nothing of ours (a thread's context class loader or inherited thread-locals, a
 * thread-local, a static map, a task, the glue loader made next to the webapp's own OkHttp or
 * HttpClient) holds it. {@link UndeployApp} ({@code java.net.http}), {@link LibraryUndeployApp}
 * (OkHttp, Apache HttpClient 4.5 and 5.x in the webapp's own loader).
 */
class UndeployIT {
  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void anUndeployedWebappsLoaderIsCollectedAfterRetriedCalls(Path jdk) throws Exception {
    ForkedJvm.Result without = run(jdk, false);
    ForkedJvm.Result with = run(jdk, true);

    assertThat(without.value("child.result")).as(without.describe()).isEqualTo("503,503");
    assertThat(without.value("unload.collected")).as(without.describe()).isEqualTo("true");
    assertThat(with.value("child.result")).as(with.describe()).isEqualTo("200,200");
    assertThat(with.value("unload.collected")).as(with.describe()).isEqualTo("true");
  }

  @Test
  void anUndeployedWebappsOwnOkHttpAndHttpClientAreCollectedAfterRetriedCalls() throws Exception {
    ForkedJvm.Result without = runLibraries(false);
    ForkedJvm.Result with = runLibraries(true);

    // okhttp: execute, enqueue; apache4: execute; apache5: classic execute, async execute. Each
    // target answers 503 once: HttpClient 5 retries a 503 itself (its default strategy), the
    // others only with the agent.
    String[][] calls = {{"okhttp", "2", "503"}, {"apache4", "1", "503"}, {"apache5", "2", "200"}};
    for (String[] c : calls) {
      String library = c[0];
      int n = Integer.parseInt(c[1]);
      assertThat(without.value(library + ".result"))
          .as(without.describe())
          .isEqualTo(String.join(",", java.util.Collections.nCopies(n, c[2])));
      assertThat(without.value(library + ".collected")).as(without.describe()).isEqualTo("true");
      assertThat(with.value(library + ".result"))
          .as(with.describe())
          .isEqualTo(String.join(",", java.util.Collections.nCopies(n, "200")));
      assertThat(with.value(library + ".collected")).as(with.describe()).isEqualTo("true");
    }
  }

  private static ForkedJvm.Result runLibraries(boolean agent) throws Exception {
    // each target's first request 503, the rest 200: retried once with the agent
    try (CountingServer server =
        CountingServer.start().answerWith(Reply.firstOfEachTarget(Reply.status(503)))) {
      ForkedJvm.Builder b = ForkedJvm.builder(Jdks.jdk17());
      if (!agent) {
        b.withoutAgent();
      }
      return b.mainClass(LibraryUndeployApp.class)
          .args(
              server.uri("").toString(),
              "okhttp=" + jars(OkHttpVersions.V4.jars()),
              "apache4=" + jars(ApacheVersions.V4_5.jars()),
              "apache5=" + jars(ApacheVersions.V5_6.jars()))
          .timeout(Duration.ofSeconds(180))
          .run();
    }
  }

  private static String jars(Path[] jars) {
    return Arrays.stream(jars).map(Path::toString).collect(Collectors.joining(File.pathSeparator));
  }

  private static ForkedJvm.Result run(Path jdk, boolean agent) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      if (agent) {
        server.enqueue(Reply.status(503), Reply.ok("a"), Reply.status(503), Reply.ok("b"));
      } else {
        server.setDefaultReply(Reply.status(503));
      }
      ForkedJvm.Builder b = ForkedJvm.builder(jdk);
      if (!agent) {
        b.withoutAgent();
      }
      return b.mainClass(UndeployApp.class).args(server.uri("/items").toString()).run();
    }
  }
}
