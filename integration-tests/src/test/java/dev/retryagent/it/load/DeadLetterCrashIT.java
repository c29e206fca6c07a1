package dev.retryagent.it.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.it.apps.DeadLetterApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.Json;
import dev.retryagent.it.harness.Reply;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 14, "Load and time": dead letters when the JVM or the disk fails, with the real agent jar
 * in a forked JVM ({@link DeadLetterApp}, 8 threads giving up on POSTs answered 503 as fast as they
 * can).
 *
 * <ul>
 *   <li>A JVM killed with SIGKILL in the middle of writing dead letters leaves a file every line of
 *       which but the last parses. Three JVMs in turn append to one file and are killed, each after
 *       at least {@link #LINES_PER_ROUND} new lines: only a line a kill tore may fail to parse, and
 *       the next JVM ends it before its own first line, so every other line stays whole.
 *   <li>A full disk ({@code /dev/full}) or an unwritable path (under a regular file) is one line on
 *       stderr, whatever the number of dead letters, and never holds a call up: every call gets its
 *       503, at once.
 * </ul>
 */
class DeadLetterCrashIT {
  static final int LINES_PER_ROUND = 2000;
  private static final int ROUNDS = 3;

  @TempDir Path dir;

  @Test
  void aJvmKilledWhileWritingDeadLettersLeavesEveryLineButTheLastWhole() throws Exception {
    Path file = dir.resolve("letters/dead-letters.jsonl");
    Path config = config(file);
    // The end offset of each round's file and whether it ended inside a line (a torn line).
    List<Long> ends = new ArrayList<>();
    Set<Long> tornEnds = new TreeSet<>();
    try (CountingServer server = CountingServer.start()) {
      server.answerWith(r -> Reply.status(503));
      for (int round = 0; round < ROUNDS; round++) {
        long before = lineBreaks(file);
        ForkedJvm.Running app = start(config, server, 8, 0);
        await("dead letters of round " + round)
            .atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(20))
            .until(() -> lineBreaks(file) >= before + LINES_PER_ROUND);
        Process kill = new ProcessBuilder("kill", "-KILL", String.valueOf(app.pid())).start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).isTrue();
        ForkedJvm.Result r = app.finish(Duration.ofSeconds(10));
        assertThat(r.exitCode()).as("killed by SIGKILL (128 + 9)\n%s", r.describe()).isEqualTo(137);
        byte[] bytes = Files.readAllBytes(file);
        ends.add((long) bytes.length);
        if (bytes.length > 0 && bytes[bytes.length - 1] != '\n') {
          tornEnds.add((long) bytes.length);
        }
      }
    }

    String text = Files.readString(file, StandardCharsets.UTF_8);
    long size = Files.size(file);
    List<String> bad = new ArrayList<>();
    int lines = 0;
    long offset = 0;
    for (String line : text.split("\n", -1)) {
      long end = offset + line.getBytes(StandardCharsets.UTF_8).length;
      boolean last = end == size;
      offset = end + 1;
      if (last) {
        break; // the last line: whole or torn, either is allowed
      }
      lines++;
      try {
        Map<String, Object> letter = Json.object(line);
        assertThat(letter.get("path")).asString().startsWith("/dl/");
      } catch (IllegalArgumentException e) {
        if (!tornEnds.contains(end)) {
          bad.add(end + ": " + line);
        }
      }
    }
    System.out.printf(
        "dead letters after %d SIGKILLs: %d lines, %d bytes, round ends %s, torn at %s%n",
        ROUNDS, lines, size, ends, tornEnds);
    assertThat(lines).isGreaterThanOrEqualTo(ROUNDS * LINES_PER_ROUND);
    assertThat(bad).as("lines that do not parse, besides lines torn by a kill").isEmpty();
  }

  /** {@code /dev/full}, or a path under a regular file (root may write anywhere else). */
  @ParameterizedTest
  @ValueSource(strings = {"/dev/full", "blocker/dead-letters.jsonl"})
  void aFullDiskOrAnUnwritablePathIsLoggedOnceAndNeverHoldsACall(String where) throws Exception {
    Files.writeString(dir.resolve("blocker"), "a file where a directory should be");
    Path file = where.startsWith("/") ? Path.of(where) : dir.resolve(where);
    try (CountingServer server = CountingServer.start()) {
      server.answerWith(r -> Reply.status(503));
      ForkedJvm.Result r = start(config(file), server, 4, 250).finish(Duration.ofSeconds(60));

      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("status.503")).as(r.describe()).isEqualTo("1000");
      assertThat(r.value("calls")).isEqualTo("1000");
      assertThat(server.requestCount()).isEqualTo(1000);
      List<String> complaints =
          r.stderr().lines().filter(l -> l.contains("dead-letter file")).toList();
      assertThat(complaints)
          .as(r.describe())
          .singleElement()
          .asString()
          .startsWith(
              where.startsWith("/")
                  ? "retry-agent: cannot write to the dead-letter file " + file
                  : "retry-agent: cannot open the dead-letter file " + file)
          .contains("dead letters are dropped");
      // A call never waits for the file: a generous bound, against a call stuck behind it.
      System.out.printf(
          "dead letters to %s: 1000 calls, slowest %s ms%n", where, r.value("slowestMillis"));
      assertThat(Long.parseLong(r.value("slowestMillis"))).isLessThan(5000);
    }
  }

  private Path config(Path deadLetters) throws IOException {
    Path config = dir.resolve("dead-letters.yml");
    Files.writeString(
        config,
        "agent:\n"
            + "  log: { level: error }\n"
            + "  deadLetter: { path: \""
            + deadLetters
            + "\" }\n"
            // Every call a give-up of its own: no breaker to refuse calls in bulk.
            + "defaults:\n"
            + "  circuitBreaker: { enabled: false }\n"
            + "routes:\n"
            + "  - name: dl\n"
            + "    match: { paths: [\"/dl/**\"] }\n");
    return config;
  }

  private static ForkedJvm.Running start(
      Path config, CountingServer server, int threads, int calls) {
    ForkedJvm.Running app =
        ForkedJvm.builder(Jdks.jdk17())
            .agentArgs("config=" + config)
            .mainClass(DeadLetterApp.class)
            .args("base=http://127.0.0.1:" + server.port(), "threads=" + threads, "calls=" + calls)
            .timeout(Duration.ofSeconds(120))
            .start();
    app.awaitValue("ready");
    return app;
  }

  private static long lineBreaks(Path file) throws IOException {
    if (!Files.exists(file)) {
      return 0;
    }
    long n = 0;
    for (byte b : Files.readAllBytes(file)) {
      if (b == '\n') {
        n++;
      }
    }
    return n;
  }
}
