package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.ConfigSources;
import dev.retryagent.engine.RetryCall;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLConnection;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** {@code agent.deadLetter.path} switched by reloads: what is counted, and what waits. */
class DeadLetterReloadTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @TempDir Path dir;

  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  private final ManualScheduler tasks = new ManualScheduler();
  private ConfigSources sources;

  @BeforeEach
  void noFile() throws Exception {
    sources = ConfigSources.resolve("", new Properties(), Map.of());
  }

  @Test
  void linesDroppedBeforeAndAfterASwitchAreCountedOnceAndTheCountOutlivesTheSwitch()
      throws Exception {
    // The dropped count was reported nowhere. It is the JVM's, not one file's: a switch neither
    // resets it nor counts a line twice.
    Path blocker = Files.writeString(dir.resolve("blocker"), "a file where a directory should be");
    int port = freePort();
    String prometheus =
        "metrics: { jmx: false, prometheus: { enabled: true, port: " + port + " } }";
    AgentRuntime runtime =
        new AgentRuntime(sources, config(prometheus, blocker.resolve("a.jsonl")), tasks);
    runtime.startBackground(null, null);
    runtime.engine();
    tasks.runNext(); // the exporters' start
    try {
      giveUps(runtime, 2);
      await().atMost(WAIT).until(() -> dropped(port) == 2);

      runtime.apply(config(prometheus, blocker.resolve("b.jsonl")));
      giveUps(runtime, 3);
      await().atMost(WAIT).until(() -> dropped(port) == 5);

      runtime.apply(config(prometheus, null));
      giveUps(runtime, 1); // no dead-letter file: nothing to drop
      assertThat(dropped(port)).isEqualTo(5);
    } finally {
      runtime.onExit();
    }
  }

  @Test
  void afterTheExitHookNeitherTheDelayedStartNorAFirstCallStartsTheExportersOrWritesALine()
      throws Exception {
    // The exit hook ran within the start's delay (the application's own shutdown hooks draining
    // for 30 s): the delayed start then bound the Prometheus endpoint, and a first call from such a
    // hook built an engine whose dead-letter writer nobody closed, and scheduled the start again.
    int port = freePort();
    Path file = dir.resolve("dead.jsonl");
    AgentRuntime runtime =
        new AgentRuntime(
            sources,
            config(
                "metrics: { jmx: false, prometheus: { enabled: true, port: " + port + " } }", file),
            tasks);
    runtime.startBackground(null, null);
    assertThat(tasks.pending()).as("the start at the delay").hasSize(1);

    runtime.onExit();
    assertThat(tasks.pending()).as("cancelled by the exit").isEmpty();
    giveUps(runtime, 1); // the first call: builds the engine now
    assertThat(tasks.pending()).as("no start after the first call").isEmpty();

    assertThat(file).doesNotExist();
    assertThat(stderr.text()).contains("a call gave up after the JVM's exit had begun");
    try (java.net.Socket s = new java.net.Socket()) {
      assertThatThrownBy(() -> s.connect(new java.net.InetSocketAddress("127.0.0.1", port), 2_000))
          .isInstanceOf(java.net.ConnectException.class);
    }
  }

  @Test
  void aReloadThatSetsOrRemovesTheSizeCapKeepsTheWriterAndAppliesToTheNextLine() throws Exception {
    // The cap of the same path must reach the writer in use (no new writer, no new file): a
    // reload is how an operator caps a file that is filling the disk now.
    Path file = dir.resolve("dead.jsonl");
    AgentRuntime runtime = new AgentRuntime(sources, config("", file), tasks);
    runtime.startBackground(null, null);
    try {
      giveUps(runtime, 1);
      await().atMost(WAIT).until(() -> Files.exists(file) && Files.size(file) > 0);
      long line = Files.size(file);

      runtime.apply(config("", file, "1KiB"));
      int fit = (int) (1024 / line); // lines of one call are all this long
      // The first line and fit - 1 more fill the file; the last is dropped, and said, once every
      // line before it is handled.
      giveUps(runtime, fit);
      await().atMost(WAIT).until(() -> stderr.text().contains("has reached"));
      assertThat(Files.size(file)).isEqualTo(fit * line);
      assertThat(stderr.text())
          .contains(
              "retry-agent: the dead-letter file "
                  + file
                  + " has reached agent.deadLetter.maxBytes (1KiB)");

      runtime.apply(config("", file));
      giveUps(runtime, 1);
      await().atMost(WAIT).until(() -> Files.size(file) == (fit + 1) * line);
      assertThat(stderr.text())
          .contains(
              "retry-agent: the dead-letter file "
                  + file
                  + " has no agent.deadLetter.maxBytes any more; dead letters are written to it"
                  + " again");
    } finally {
      runtime.onExit();
    }
  }

  @Test
  void aSwitchAwayFromAHungFileWaitsForItsLinesWithoutHoldingTheRuntime() throws Exception {
    // A reload that switched the path closed the old writer, waiting up to 2 s for a slow disk,
    // while it held the runtime's lock (and the dead letters'), which a first call building the
    // engine, the exporters' start and the next reload take too.
    Path fifo = dir.resolve("hung.jsonl");
    assumeTrue(HostileReloadTest.mkfifo(fifo), "mkfifo is available");
    AgentRuntime runtime = new AgentRuntime(sources, config("", fifo), tasks);
    giveUps(runtime, 1); // its writer thread opens the pipe for writing: it waits for a reader

    AtomicReference<Thread> reloading = new AtomicReference<>();
    CompletableFuture<String> reload =
        CompletableFuture.supplyAsync(
            () -> {
              reloading.set(Thread.currentThread());
              try {
                return runtime.apply(config("", dir.resolve("next.jsonl")));
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            });
    try {
      ThreadInfo closing =
          await().atMost(WAIT).until(() -> snapshot(reloading.get()), t -> t != null && inClose(t));

      assertThat(Arrays.stream(closing.getLockedMonitors()).map(MonitorInfo::getClassName))
          .as("monitors the reload holds while it waits for the old writer")
          .doesNotContain(AgentRuntime.class.getName(), DeadLetters.class.getName());
    } finally {
      // A reader at last: the old writer writes the line it had queued, then ends.
      assertThat(
              CompletableFuture.supplyAsync(() -> firstLine(fifo))
                  .get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
          .contains("\"host\":\"pay\"");
      assertThat(reload.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isEmpty();
      runtime.onExit();
    }
  }

  @Test
  void atExitWritersAReloadReplacedAreWaitedForWithinOneBoundAndWhatTheyCouldNotWriteIsReported()
      throws Exception {
    // The exit hook closed only the current writer: one a reload had replaced, whose close timed
    // out on a hung disk, lost its queued lines with the JVM, neither written nor counted nor
    // reported. Two such writers here: one wait of 2 s in all, not 2 s each.
    Path first = dir.resolve("hung-1.jsonl");
    Path second = dir.resolve("hung-2.jsonl");
    assumeTrue(
        HostileReloadTest.mkfifo(first) && HostileReloadTest.mkfifo(second), "mkfifo is available");
    AgentRuntime runtime = new AgentRuntime(sources, config("", first), tasks);
    try {
      hangOpening(runtime, 1);
      runtime.apply(config("", second)); // waits 2 s for the hung writer, then goes on
      hangOpening(runtime, 2);
      runtime.apply(config("", dir.resolve("next.jsonl")));
      giveUps(runtime, 1); // the current file takes it at once

      long start = System.nanoTime();
      CompletableFuture.runAsync(runtime::onExit).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      Duration exit = Duration.ofNanos(System.nanoTime() - start);

      // A wait of 2 s for each of the two hung writers takes 4 s at least: the bound leaves a
      // loaded machine ~1.9 s over the one shared wait.
      assertThat(exit).as("one wait for every writer").isLessThan(Duration.ofMillis(3900));
      assertThat(Files.readAllLines(dir.resolve("next.jsonl"))).hasSize(1);
      assertThat(stderr.text())
          .contains(
              "retry-agent: at exit, 2 dead letters for "
                  + first
                  + " were dropped, not written: the 2s the agent waits at exit ran out (1 more being written)")
          .contains(
              "retry-agent: at exit, 2 dead letters for "
                  + second
                  + " were dropped, not written: the 2s the agent waits at exit ran out (1 more being written)");
    } finally {
      // Readers at last: the hung writer threads write the line each had taken, and end.
      assertThat(
              CompletableFuture.supplyAsync(() -> firstLine(first))
                  .get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
          .contains("\"host\":\"pay\"");
      assertThat(
              CompletableFuture.supplyAsync(() -> firstLine(second))
                  .get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
          .contains("\"host\":\"pay\"");
    }
  }

  @Test
  void aCallThatGivesUpAfterTheExitHookLeavesTheFileWholeAndIsSaidOnce() throws Exception {
    // The application's own shutdown hooks run beside the agent's: a call of theirs that gives
    // up after the agent's hook closed the file was dropped without a word.
    Path file = dir.resolve("dead.jsonl");
    AgentRuntime runtime = new AgentRuntime(sources, config("", file), tasks);
    giveUps(runtime, 1);

    runtime.onExit();
    giveUps(runtime, 2);

    assertThat(Files.readString(file)).endsWith("\n");
    assertThat(Files.readAllLines(file)).hasSize(1);
    assertThat(stderr.text().lines().filter(l -> l.contains("after the JVM's exit had begun")))
        .containsExactly(
            "retry-agent: a call gave up after the JVM's exit had begun; its dead letter for "
                + file
                + " is dropped, not written (the JVM may end in the middle of a write), and so is"
                + " any later one");
  }

  /**
   * One give-up, which the current writer's thread takes and then hangs opening its pipe (no
   * reader: the {@code hung}th writer thread to do so), and two more, which stay queued.
   */
  private static void hangOpening(AgentRuntime runtime, int hung) throws Exception {
    giveUps(runtime, 1);
    await().atMost(WAIT).until(() -> threadsOpening() == hung);
    giveUps(runtime, 2);
  }

  private static int threadsOpening() {
    int n = 0;
    for (ThreadInfo t : ManagementFactory.getThreadMXBean().dumpAllThreads(false, false)) {
      if (t.getThreadName().equals("retry-agent-dead-letters")
          && Arrays.stream(t.getStackTrace())
              .anyMatch(e -> e.getMethodName().equals("openForAppend"))) {
        n++;
      }
    }
    return n;
  }

  private static ThreadInfo snapshot(Thread t) {
    if (t == null) {
      return null;
    }
    return ManagementFactory.getThreadMXBean()
        .getThreadInfo(new long[] {t.getId()}, true, false)[0];
  }

  private static boolean inClose(ThreadInfo t) {
    for (StackTraceElement e : t.getStackTrace()) {
      if (e.getClassName().endsWith(".DeadLetterWriter") && e.getMethodName().equals("close")) {
        return true;
      }
    }
    return false;
  }

  /** Opens the pipe for reading, which lets the writer's open go on, and reads a line. */
  private static String firstLine(Path fifo) {
    try (BufferedReader r = Files.newBufferedReader(fifo, StandardCharsets.UTF_8)) {
      return r.readLine();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** {@code n} calls to {@code http://pay/} that give up after one 503 (one attempt). */
  private static void giveUps(AgentRuntime runtime, int n) throws Exception {
    for (int i = 0; i < n; i++) {
      RetryCall call = runtime.engine().newCall(new GetRequest("pay"));
      call.acquireBreaker();
      call.startAttempt();
      call.onResponse(503, null);
    }
  }

  private AgentConfig config(String agentKeys, Path deadLetters) throws Exception {
    return config(agentKeys, deadLetters, null);
  }

  private AgentConfig config(String agentKeys, Path deadLetters, String maxBytes) throws Exception {
    String agent =
        "agent: { "
            + agentKeys
            + (agentKeys.isEmpty() ? "" : ", ")
            + "deadLetter: { path: "
            + (deadLetters == null ? "none" : "\"" + deadLetters + "\"")
            + (maxBytes == null ? "" : ", maxBytes: " + maxBytes)
            + " } }\n";
    return sources.apply(
        ConfigLoader.parse(
            agent + "defaults: { retry: { maxAttempts: 1 }, circuitBreaker: { enabled: false } }\n",
            "test",
            Map.of()));
  }

  private static long dropped(int port) throws IOException {
    URLConnection c = URI.create("http://127.0.0.1:" + port + "/metrics").toURL().openConnection();
    c.setConnectTimeout(5_000);
    c.setReadTimeout(5_000);
    String text;
    try (InputStream in = c.getInputStream()) {
      text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    return text.lines()
        .filter(l -> l.startsWith("retryagent_dead_letters_dropped_total "))
        .mapToLong(l -> Long.parseLong(l.substring(l.indexOf(' ') + 1)))
        .findFirst()
        .orElse(-1);
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }
}
