package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.it.apps.ExitApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.OkHttpVersions;
import dev.retryagent.it.harness.Ops;
import dev.retryagent.it.harness.Reply;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An application that ends (its {@code main} returns, or it calls {@code System.exit}) while calls
 * wait for retries due 10 minutes later ({@code sendAsync}, {@code send} on a daemon thread,
 * OkHttp's {@code enqueue}) ends as it does without the agent: at once, with its own exit code.
 * Every exporter is on (dead letters, Prometheus, the reload watcher), so every thread and shutdown
 * hook of ours is there: each thread is a daemon named {@code retry-agent-*} with the system class
 * loader, a handler of ours for what would end it and a thread group outside the application's, and
 * the dead letter of the call that gave up before the end is in its file whole.
 */
class ExitIT {
  @TempDir Path dir;

  static Stream<Arguments> ends() {
    // OkHttp's dispatcher threads are not daemons (idle for 60 s): with them, only an exit ends
    // the JVM at once, with the agent or without.
    return Stream.of(
        Arguments.of("return", false, 0),
        Arguments.of("exit:7", false, 7),
        Arguments.of("exit:3", true, 3));
  }

  @ParameterizedTest
  @MethodSource("ends")
  void theJvmEndsAsWithoutTheAgentWhileCallsWaitForRetries(String end, boolean okhttp, int code)
      throws Exception {
    Path deadLetters = dir.resolve("dead.jsonl");
    int prometheus = Ops.freePort();
    Path config =
        Ops.write(
            dir.resolve("retry.yml"),
            "agent:\n"
                + "  reload: true\n"
                + "  deadLetter: { path: "
                + deadLetters
                + " }\n"
                + "  metrics:\n"
                + "    jmx: true\n"
                + "    prometheus: { enabled: true, host: 127.0.0.1, port: "
                + prometheus
                + " }\n"
                + "routes:\n"
                + "  - name: waiting\n"
                + "    match: { paths: [\"/wait\"] }\n"
                + "    retry: { deadline: 1h, retryAfter: { max: 1h } }\n");

    ForkedJvm.Result without = run(null, 0, end, okhttp);
    assertThat(without.timedOut()).as(without.describe()).isFalse();
    assertThat(without.exitCode()).as(without.describe()).isEqualTo(code);

    ForkedJvm.Result with = run(config, prometheus, end, okhttp);
    assertThat(with.timedOut()).as(with.describe()).isFalse();
    assertThat(with.exitCode()).as(with.describe()).isEqualTo(code);
    assertThat(with.value("failing.status")).isEqualTo("503");
    List<String> threads =
        with.stdout().lines().filter(l -> l.startsWith("thread.retry-agent-")).toList();
    assertThat(threads)
        .as(with.describe())
        .isNotEmpty()
        .anyMatch(l -> l.startsWith("thread.retry-agent-async-"))
        .anyMatch(l -> l.startsWith("thread.retry-agent-dead-letters"))
        .anyMatch(l -> l.startsWith("thread.retry-agent-prometheus"))
        .allMatch(l -> l.endsWith("=true|true|true|true"));
    assertThat(with.stderr()).as(with.describe()).doesNotContain("Exception in thread", "dropped");
    // written whole by the exit hook's flush, whatever the end
    assertThat(Files.readString(deadLetters))
        .endsWith("\n")
        .hasLineCount(1)
        .contains("\"attempts\":3");
  }

  private ForkedJvm.Result run(Path config, int prometheus, String end, boolean okhttp)
      throws Exception {
    try (CountingServer server = CountingServer.start()) {
      server.answerWith(
          r ->
              r.target().startsWith("/wait")
                  ? Reply.status(503).withHeader("Retry-After", "600")
                  : Reply.status(503));
      ForkedJvm.Builder b = ForkedJvm.builder(dev.retryagent.it.harness.Jdks.jdk17());
      b =
          config == null
              ? b.withoutAgent()
              : b.agentArgs("config=" + config).jvmArgs(Ops.FAST_AGENT);
      if (okhttp) {
        b.classpath(OkHttpVersions.V4.jars());
      }
      ForkedJvm.Running app =
          b.mainClass(ExitApp.class)
              .args(
                  end,
                  server.uri("/wait").toString(),
                  server.uri("/fail").toString(),
                  okhttp ? "okhttp" : "")
              .timeout(Duration.ofSeconds(50))
              .start();
      app.awaitValue("started");
      int failing = config == null ? 1 : 3;
      int waiting = okhttp ? 3 : 2;
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> server.requestCount() == failing + waiting);
      if (config != null) {
        // the exporters have started: their threads are there
        await().atMost(Duration.ofSeconds(30)).until(() -> listens(prometheus));
      }
      app.send("go");
      app.awaitValue("ending");
      // the retries are due 10 minutes from now: an end that waited for them would be killed here
      return app.finish(Duration.ofSeconds(20));
    }
  }

  private static boolean listens(int port) {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }
}
