package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.Apache4KeptConnectionApp;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.Ops;
import dev.retryagent.it.harness.RecordedRequest;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * How {@code retry.perAttemptTimeout} bounds Apache HttpClient 4.5 attempts on either side of
 * 4.5.4, with the agent jar in a forked JVM, side by side with the same application without the
 * agent ({@link Apache4KeptConnectionApp}: one pooled connection, the {@code SocketConfig}'s 7 s
 * socket timeout, none in its {@code RequestConfig}), the requests counted by the loopback server.
 *
 * <p>HttpClient 4.5.4 and later put a connection's socket timeout back when it returns to the pool;
 * 4.5.3 and earlier keep it, so a bound set on a kept-alive connection would reach the next call on
 * it. The agent therefore shortens the socket timeout only on 4.5.4 and later ({@code
 * BoundedContext.ResetsSocketTimeout}); on 4.5.3 it bounds the connection-request (pool) and
 * connect timeouts only, and the socket read of a bounded attempt runs under the application's own
 * timeout (docs/apache-httpclient.md, Limits). The connect timeout is bounded from the same
 * shortened {@code RequestConfig} as the pool's; a connect that hangs cannot be made on loopback,
 * so only the pool's is shown here (core's {@code AttemptTimeoutsTest} has both).
 *
 * <p>Timings leave seconds of margin on a loaded machine, and only outcomes are asserted: the bound
 * is 1 s, a stalled reply comes after 2.5 s, the application's socket timeout is 7 s, and the held
 * connection is given back after 3.5 s at the latest.
 */
class ApacheKeptSocketTimeoutIT {
  private static final Duration STALL = Duration.ofMillis(2_500);

  @TempDir Path dir;

  /** The releases on either side of the rule, each as the jars the build copied. */
  enum Release {
    V4_5_3("apache453", false),
    V4_5_14("apache45", true);

    private final String jarsDir;
    private final boolean boundsTheRead;

    Release(String jarsDir, boolean boundsTheRead) {
      this.jarsDir = jarsDir;
      this.boundsTheRead = boundsTheRead;
    }

    Path[] jars() {
      return ApacheVersions.jarsIn(jarsDir);
    }
  }

  /** What one run printed, and the server's connection number of each request, by path. */
  record Run(ForkedJvm.Result result, Map<String, List<Integer>> connections) {
    String value(String key) {
      return result.value(key);
    }

    int requests(String path) {
      return connections.getOrDefault(path, List.of()).size();
    }

    int connection(String path, int index) {
      List<Integer> on = connections.get(path);
      return on.get(index < 0 ? on.size() + index : index);
    }
  }

  /**
   * Answers by path: {@code /bounded/first} 503 once, then 200; {@code /free/next} 200 after the
   * stall; {@code /bounded/stalled} 200 after the stall once, then 200 at once; anything else 200.
   */
  private static final class Replies {
    private final Map<String, List<Integer>> connections = new HashMap<>();

    synchronized Reply answer(RecordedRequest request) {
      String path = request.target();
      List<Integer> on = connections.computeIfAbsent(path, p -> new ArrayList<>());
      on.add(request.connection());
      boolean firstTime = on.size() == 1;
      switch (path) {
        case "/bounded/first":
          return firstTime ? Reply.status(503) : Reply.ok("first");
        case "/free/next":
          return Reply.ok("next").after(STALL);
        case "/bounded/stalled":
          return firstTime ? Reply.ok("stalled").after(STALL) : Reply.ok("stalled");
        default:
          return Reply.ok("ok");
      }
    }

    synchronized Map<String, List<Integer>> connections() {
      Map<String, List<Integer>> copy = new HashMap<>();
      connections.forEach((path, on) -> copy.put(path, List.copyOf(on)));
      return copy;
    }
  }

  private Run run(Release release, boolean agent) throws Exception {
    return run(release, agent, false);
  }

  private Run run(Release release, boolean agent, boolean basic) throws Exception {
    // Only /bounded/** is bounded; /free/** runs under the defaults (retried, no bound of its own).
    Path config =
        Ops.write(
            dir.resolve("config.yml"),
            "routes:\n"
                + "  - name: bounded\n"
                + "    match: { paths: [\"/bounded/**\"] }\n"
                + "    retry: { maxAttempts: 2, perAttemptTimeout: 1s }\n");
    Replies replies = new Replies();
    try (CountingServer server = CountingServer.start()) {
      server.answerWith(replies::answer);
      ForkedJvm.Builder b =
          ForkedJvm.builder(Jdks.jdk17())
              .classpath(release.jars())
              .mainClass(Apache4KeptConnectionApp.class)
              .args("http://127.0.0.1:" + server.port(), basic ? "basic" : "pool");
      if (agent) {
        b.agentArgs("config=" + config);
      } else {
        b.withoutAgent();
      }
      ForkedJvm.Result r = b.run();
      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("calls.done")).as(r.describe()).isEqualTo("1");
      return new Run(r, replies.connections());
    }
  }

  @ParameterizedTest(name = "HttpClient {0}")
  @EnumSource(Release.class)
  void aBoundedAttemptLeavesTheKeptConnectionToTheApplicationsOwnSocketTimeout(Release release)
      throws Exception {
    Run plain = run(release, false);
    Run ours = run(release, true);
    String why = why(plain, ours);

    firstNextStalled(release, plain, ours, why);

    // pooled: a bounded call that waits for the one connection, which another response holds for
    // 3.5 s. Without the agent it waits (20 s allowed) and gets it; with the agent the 1 s bound
    // ends the wait on either release: HttpClient's ConnectionPoolTimeoutException, not retried,
    // nothing sent.
    assertThat(plain.value("pooled.status")).as(why).isEqualTo("200");
    assertThat(plain.requests("/bounded/pooled")).as(why).isEqualTo(1);
    assertThat(ours.value("pooled.error"))
        .as(why)
        .isEqualTo("org.apache.http.conn.ConnectionPoolTimeoutException");
    assertThat(ours.requests("/bounded/pooled")).as(why).isZero();
  }

  @ParameterizedTest(name = "HttpClient {0}")
  @EnumSource(Release.class)
  void aBoundedAttemptOnBasicHttpClientConnectionManagerIsBoundedAsOnThePool(Release release)
      throws Exception {
    // The same calls on a BasicHttpClientConnectionManager (its SocketConfig's 7 s). Its
    // connection is HttpClient's plain one, which alone does not say the manager puts its socket
    // timeout back: the agent's attempt names its client, whose manager does (4.5.4 and later), so
    // the socket timeout is bounded as on the pool's connections, and left as it is on 4.5.3.
    Run plain = run(release, false, true);
    Run ours = run(release, true, true);
    firstNextStalled(release, plain, ours, why(plain, ours));
  }

  /**
   * The calls before {@code pooled}, with the agent ({@code ours}) and without ({@code plain}):
   * {@code first} retried, {@code next} under the connection's own socket timeout, {@code stalled}
   * bounded where the release puts the socket timeout back.
   */
  private static void firstNextStalled(Release release, Run plain, Run ours, String why) {
    // first: its 503 is the application's answer without the agent; with it, the 503 is retried
    // under the 1 s bound (on 4.5.14 on the connection's socket timeout too) and ends 200.
    assertThat(plain.value("first.status")).as(why).isEqualTo("503");
    assertThat(plain.requests("/bounded/first")).as(why).isEqualTo(1);
    assertThat(ours.value("first.status")).as(why).isEqualTo("200");
    assertThat(ours.requests("/bounded/first")).as(why).isEqualTo(2);

    // next: on the connection first's last attempt left in the pool, no bound of its own, stalled
    // 2.5 s: the application's 7 s governs as without the agent (one request, 200), not first's
    // 1 s (which on 4.5.3, had the agent set it on the socket, would have stayed on it: a
    // SocketTimeoutException and a retry).
    for (Run run : List.of(plain, ours)) {
      assertThat(run.connection("/free/next", 0))
          .as("next on the kept-alive connection\n" + why)
          .isEqualTo(run.connection("/bounded/first", -1));
    }
    assertThat(plain.value("next.status")).as(why).isEqualTo("200");
    assertThat(plain.requests("/free/next")).as(why).isEqualTo(1);
    assertThat(ours.value("next.status")).as(why).isEqualTo("200");
    assertThat(ours.value("next.error")).as(why).isNull();
    assertThat(ours.requests("/free/next")).as(why).isEqualTo(1);

    // stalled: a bounded call whose first attempt stalls 2.5 s. 4.5.14: the bound shortens the
    // socket timeout of the attempt, which ends at 1 s and is retried (200 on the second request).
    // 4.5.3: the socket read is not bounded (its socket timeout is left as the application has
    // it), so the attempt waits for its reply, as without the agent.
    assertThat(plain.value("stalled.status")).as(why).isEqualTo("200");
    assertThat(plain.requests("/bounded/stalled")).as(why).isEqualTo(1);
    assertThat(ours.value("stalled.status")).as(why).isEqualTo("200");
    assertThat(ours.requests("/bounded/stalled")).as(why).isEqualTo(release.boundsTheRead ? 2 : 1);
  }

  /** Both runs, for an assertion's message. */
  private static String why(Run plain, Run ours) {
    return "without the agent:\n"
        + plain.result().describe()
        + "\n"
        + plain.connections()
        + "\nwith:\n"
        + ours.result().describe()
        + "\n"
        + ours.connections();
  }
}
