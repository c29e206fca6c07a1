package dev.retryagent.fleet;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Three real JVMs, each using the module directly, share one fleet limit through one Redis. A
 * loopback counting server, standing for the provider, counts their requests by its own clock:
 * together they never exceed the limit in any second, and each gets a fair share.
 */
@Timeout(120)
class FleetForkedJvmsTest {
  private static final long SECOND = 1_000_000_000L;
  private static final int JVMS = 3;
  private static final double PER_SECOND = 20;
  private static final int BURST = 4;
  private static final long DURATION_MILLIS = 4_000;

  private static RedisServerProcess redis;

  @BeforeAll
  static void startRedis() throws Exception {
    redis = RedisServerProcess.start();
  }

  @AfterAll
  static void stopRedis() throws Exception {
    redis.close();
  }

  @Test
  void threeJvmsTogetherNeverExceedTheFleetLimitAndEachGetsAFairShare() throws Exception {
    Map<String, List<Long>> arrivals = new ConcurrentHashMap<>();
    Map<String, String> summaries = new ConcurrentHashMap<>();
    List<Process> processes = new ArrayList<>();
    List<Path> logs = new ArrayList<>();
    try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      server.setSoTimeout(60_000);
      for (int i = 0; i < JVMS; i++) {
        Path log = Paths.get("target", "fleet-worker-" + i + ".log");
        logs.add(log);
        processes.add(fork("jvm" + i, server.getLocalPort(), log));
      }
      CountDownLatch ready = new CountDownLatch(JVMS);
      List<PrintStream> outs = new CopyOnWriteArrayList<>();
      List<Thread> readers = new ArrayList<>();
      for (int i = 0; i < JVMS; i++) {
        Socket s = server.accept();
        s.setSoTimeout(60_000);
        outs.add(new PrintStream(s.getOutputStream(), true, "US-ASCII"));
        Thread reader = new Thread(() -> count(s, arrivals, summaries, ready), "counter-" + i);
        reader.start();
        readers.add(reader);
      }
      assertThat(ready.await(60, TimeUnit.SECONDS)).as("every JVM up").isTrue();
      outs.forEach(o -> o.println("go"));
      for (Process p : processes) {
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("worker ended").isTrue();
        assertThat(p.exitValue()).isZero();
      }
      for (Thread reader : readers) {
        reader.join(10_000);
      }
    } finally {
      processes.forEach(Process::destroyForcibly);
    }

    List<Long> all = new ArrayList<>();
    arrivals.values().forEach(all::addAll);
    int limitPerSecond = (int) PER_SECOND + BURST;
    System.out.printf(
        "forked JVMs: %d requests, at most %d in any second (limit %d), per JVM %s%n",
        all.size(), PermitLoad.maxUsedInAnyWindow(all, SECOND), limitPerSecond, summaries);
    // Counted by the server: the limit, give or take a few permits of thread scheduling in the
    // JVMs (they send when their wait ends, a little late at times, never early).
    assertThat(PermitLoad.maxUsedInAnyWindow(all, SECOND)).isLessThanOrEqualTo(limitPerSecond + 3);
    long span =
        all.stream().mapToLong(Long::longValue).max().getAsLong()
            - all.stream().mapToLong(Long::longValue).min().getAsLong();
    assertThat(all.size()).isGreaterThanOrEqualTo((int) (PER_SECOND * span / SECOND) - 3);
    assertThat(all.size()).isLessThanOrEqualTo((int) (BURST + PER_SECOND * span / SECOND) + 3);
    for (String jvm : arrivals.keySet()) {
      assertThat((double) arrivals.get(jvm).size() / all.size()).as(jvm).isBetween(0.25, 0.42);
      assertThat(summaries.get(jvm)).contains("errors=0", "refused=0", "fallbacks=0");
    }
    for (Path log : logs) {
      // Jedis stays quiet (no SLF4J warning), and so does the fleet while Redis is up.
      assertThat(new String(Files.readAllBytes(log), StandardCharsets.UTF_8)).isEmpty();
    }
  }

  private static Process fork(String name, int port, Path log) throws IOException {
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd =
        new ArrayList<>(
            Arrays.asList(
                java,
                "-Xmx64m",
                "-XX:+UseSerialGC",
                "-cp",
                System.getProperty("java.class.path"),
                FleetWorker.class.getName(),
                redis.url(),
                "forked",
                Double.toString(PER_SECOND),
                Integer.toString(BURST),
                "2",
                Long.toString(DURATION_MILLIS),
                Integer.toString(port),
                name));
    return new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
        .start();
  }

  /** Reads one worker's lines: "ready name", then "p" per permit, then "done ...". */
  private static void count(
      Socket s,
      Map<String, List<Long>> arrivals,
      Map<String, String> summaries,
      CountDownLatch ready) {
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII))) {
      String first = in.readLine();
      String name = first.substring("ready ".length());
      List<Long> times = new CopyOnWriteArrayList<>();
      arrivals.put(name, times);
      ready.countDown();
      String line;
      while ((line = in.readLine()) != null) {
        if (line.equals("p")) {
          times.add(System.nanoTime());
        } else if (line.startsWith("done")) {
          summaries.put(name, line);
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
