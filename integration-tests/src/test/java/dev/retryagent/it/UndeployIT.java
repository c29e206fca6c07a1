package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.UndeployApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A webapp's class loader that made retried {@code java.net.http} calls is collected once the
 * webapp is undeployed, as without the agent: nothing of ours (a thread's context class loader, a
 * thread-local, a static map, a task) holds it. {@link UndeployApp}.
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
