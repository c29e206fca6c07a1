package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.ClientPerCallApp;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.OkHttpVersions;
import dev.retryagent.it.harness.Ops;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A service that makes a new client for every call and never closes it (a common anti-pattern, over
 * months): through the agent, each call retried once (a 503 then a 200), every client is collected
 * once the application drops it, as without the agent. Whatever the agent keeps per client (its
 * interceptor on an OkHttp builder, a java.net.http client's calls, an Apache builder's chain, the
 * waits of a retry) holds none of them; nor does what it keeps for an {@code HttpURLConnection}.
 */
class ClientPerCallIT {
  private static final int CALLS = 40;
  private static final String[] WAYS = {
    "jdkSend", "jdkSendAsync", "okExecute", "okEnqueue", "apache4", "apache5", "urlConnection"
  };

  @TempDir Path dir;

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void clientsMadeForOneCallAreCollectedAfterItsRetry(Path jdk) throws Exception {
    Path config =
        Ops.write(
            dir.resolve("config.yml"),
            "defaults:\n"
                + "  retry: { maxAttempts: 2, backoff: { initial: 1ms, max: 1ms, jitter: none } }\n"
                + "  budget: { enabled: false }\n"
                + "  circuitBreaker: { enabled: false }\n");
    try (CountingServer server =
        CountingServer.start().answerWith(Reply.firstOfEachTarget(Reply.status(503)))) {
      ForkedJvm.Result result =
          ForkedJvm.builder(jdk)
              .agentArgs(config.toString())
              .classpath(OkHttpVersions.V4.jars())
              .classpath(ApacheVersions.V4_5.jars())
              .classpath(ApacheVersions.V5_6.jars())
              .mainClass(ClientPerCallApp.class)
              .args(server.uri("").toString(), Integer.toString(CALLS))
              .timeout(Duration.ofSeconds(120))
              .run();
      assertThat(result.value("terminated")).as(result.describe()).isEqualTo("1");
      for (String way : WAYS) {
        assertThat(result.value("status." + way)).as(way + result.describe()).isEqualTo("200");
        assertThat(result.value("alive." + way)).as(way + result.describe()).isEqualTo("0");
      }
      assertThat(server.requestCount()).isEqualTo(2 * CALLS * WAYS.length);
    }
  }
}
