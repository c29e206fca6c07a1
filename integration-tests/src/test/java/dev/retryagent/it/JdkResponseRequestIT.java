package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.ResponseRequestApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.RecordedRequest;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code java.net.http}'s {@code response.request()} under a policy with an {@code attemptHeader}:
 * the application sees its own request (its headers, not the attempt header the agent sends), as
 * with the plain JDK, through {@code send} and {@code sendAsync}, for a call answered at once, one
 * retried, one redirected (and {@code previousResponse().request()}), and one redirected then
 * retried. The same application in a JVM without the agent and one with it, against loopback
 * servers with the same behaviour; the servers check that the attempt header did go out.
 */
class JdkResponseRequestIT {
  private static final String[] PATHS = {"/once", "/retried", "/moved", "/moved-retried"};
  private static final String ATTEMPT = "X-Retry-Attempt";

  @TempDir Path dir;

  /**
   * The behaviour of every run's server: {@code /retried} and {@code /moved-retried-to} answer 503
   * to their first request of each way, then 200; {@code /moved*} answer 307 to {@code ...-to}.
   */
  private static Reply reply(RecordedRequest r, Set<String> seen) {
    String path = r.target().substring(0, r.target().indexOf('?'));
    String query = r.target().substring(path.length());
    if (path.equals("/moved") || path.equals("/moved-retried")) {
      return Reply.status(307).withHeader("Location", path + "-to" + query);
    }
    if ((path.equals("/retried") || path.equals("/moved-retried-to")) && seen.add(r.target())) {
      return Reply.status(503);
    }
    return Reply.ok("done");
  }

  private ForkedJvm.Result run(Path jdk, boolean agent, List<RecordedRequest> requests)
      throws Exception {
    try (CountingServer server = CountingServer.start()) {
      Set<String> seen = ConcurrentHashMap.newKeySet();
      server.answerWith(
          r -> {
            requests.add(r);
            return reply(r, seen);
          });
      ForkedJvm.Builder jvm = ForkedJvm.builder(jdk);
      if (agent) {
        Path config = dir.resolve("attempt-header.yml");
        Files.writeString(
            config,
            String.join(
                "\n",
                "version: 1",
                "routes:",
                "  - name: all",
                "    match: { paths: [\"/**\"] }",
                "    retry:",
                "      unsafeMethods: if-idempotency-key",
                "      attemptHeader: " + ATTEMPT,
                "      backoff: { initial: 10ms, max: 10ms, multiplier: 1.0, jitter: none }",
                ""));
        jvm.agentArgs("config=" + config);
      } else {
        jvm.withoutAgent();
      }
      ForkedJvm.Result r =
          jvm.mainClass(ResponseRequestApp.class).args(prepend(server.uri("").toString())).run();
      assertThat(r.exitCode()).as(r.describe()).isZero();
      return r;
    }
  }

  private static String[] prepend(String base) {
    String[] args = new String[PATHS.length + 1];
    args[0] = base;
    System.arraycopy(PATHS, 0, args, 1, PATHS.length);
    return args;
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void responseRequestShowsTheApplicationsRequestNotTheAttemptHeader(Path jdk) throws Exception {
    List<RecordedRequest> plainRequests = new CopyOnWriteArrayList<>();
    List<RecordedRequest> agentRequests = new CopyOnWriteArrayList<>();
    ForkedJvm.Result plain = run(jdk, false, plainRequests);
    ForkedJvm.Result agent = run(jdk, true, agentRequests);

    for (String way : new String[] {"send", "async"}) {
      for (String path : PATHS) {
        String key = way + "." + path;
        String all = "without the agent:\n" + plain.describe() + "\nwith it:\n" + agent.describe();
        assertThat(agent.value(key + ".request")).as(key + "\n" + all).isNotNull();
        assertThat(agent.value(key + ".request"))
            .as(key + "\n" + all)
            .isEqualTo(plain.value(key + ".request"))
            .doesNotContainIgnoringCase(ATTEMPT);
        assertThat(agent.value(key + ".previous"))
            .as(key + "\n" + all)
            .isEqualTo(plain.value(key + ".previous"));
        // The agent's retry makes the plain JDK's 503 a success.
        assertThat(agent.value(key + ".status")).as(key + "\n" + all).isEqualTo("200");
      }
    }
    assertThat(plain.value("send./retried.status")).isEqualTo("503");
    assertThat(plain.value("send./moved.previous")).contains("POST BASE/moved?way=send");
    // The attempt header did go out with the agent, on every request (a redirect's too), and
    // never without it.
    assertThat(plainRequests).allSatisfy(r -> assertThat(r.header(ATTEMPT)).isNull());
    assertThat(agentRequests)
        .hasSize(plainRequests.size() + 6)
        .allSatisfy(r -> assertThat(r.header(ATTEMPT)).as(r.toString()).isNotNull());
    assertThat(agentRequests)
        .filteredOn(r -> r.target().startsWith("/retried?way=send"))
        .extracting(r -> r.header(ATTEMPT))
        .containsExactly("1", "2");
  }
}
