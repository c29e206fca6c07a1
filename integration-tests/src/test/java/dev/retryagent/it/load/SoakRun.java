package dev.retryagent.it.load;

import static org.awaitility.Awaitility.await;

import dev.retryagent.it.apps.SoakApp;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Json;
import dev.retryagent.it.harness.OkHttpVersions;
import dev.retryagent.it.harness.Ops;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * One soak: {@link SoakServer} in this JVM, {@link SoakApp} in a JVM started with the agent jar,
 * {@link SoakConfig} rewritten every {@link #RELOAD_EVERY} while the load runs. Returns everything
 * the checks need: the app's output, the server's counts, a Prometheus scrape taken after the load,
 * the dead letters (parsed), and how many times the file was rewritten.
 */
final class SoakRun {
  static final Duration RELOAD_EVERY = Duration.ofSeconds(3);

  /** What one soak produced. */
  record Outcome(
      String name,
      Duration load,
      ForkedJvm.Result result,
      Map<String, Long> server,
      String prometheus,
      Map<String, Long> deadLetters,
      int reloadsWritten) {

    /** The app's {@code key=value} value as a long; 0 when absent. */
    long app(String key) {
      String v = result.value(key);
      return v == null ? 0 : Long.parseLong(v);
    }

    long server(String route, String what) {
      return server.getOrDefault(route + "." + what, 0L);
    }

    /**
     * Dead letters of {@code route}: {@code total}, {@code no-attempt}, {@code rate-limited-first},
     * {@code refused-later}.
     */
    long deadLetters(String route, String what) {
      return deadLetters.getOrDefault(route + "." + what, 0L);
    }
  }

  private SoakRun() {}

  /**
   * Runs a soak of {@code load} on {@code jdk}; {@code threads} is {@code platform} or {@code
   * virtual} (then JFR records pinned virtual threads); {@code jvmArgs} are added to the forked
   * JVM's.
   */
  static Outcome run(
      String name, Path jdk, String threads, Duration load, Path dir, String... jvmArgs)
      throws Exception {
    Files.createDirectories(dir);
    int prometheusPort = Ops.freePort();
    Path deadLetters = dir.resolve("dead-letters.jsonl");
    Path config = dir.resolve("soak.yml");
    Ops.write(config, SoakConfig.yaml(0, prometheusPort, deadLetters));
    // About 30 samples whatever the length, at least 2 s apart.
    long sampleSeconds = Math.max(2, load.toSeconds() / 30);
    List<String> options = new ArrayList<>(List.of(jvmArgs));
    options.addAll(
        List.of(
            "-Xmx512m",
            // HttpURLConnection keeps 5 idle connections per host by default: 16 callers would
            // open and close connections all the time and use up the ephemeral ports.
            "-Dhttp.maxConnections=64",
            "-Dretryagent.exporters.delayMillis=0",
            "-Dretryagent.reload.pollMillis=200"));
    ScheduledExecutorService reloader = Executors.newSingleThreadScheduledExecutor();
    AtomicInteger written = new AtomicInteger();
    try (SoakServer server = SoakServer.start();
        ForkedJvm.Running app =
            ForkedJvm.builder(jdk)
                .agentArgs("config=" + config)
                .jvmArgs(options.toArray(String[]::new))
                .classpath(OkHttpVersions.V4.jars())
                .classpath(ApacheVersions.V5_6.jars())
                .mainClass(SoakApp.class)
                .args(
                    "seconds=" + load.toSeconds(),
                    "sample=" + sampleSeconds,
                    "threads=" + threads,
                    "pinned=" + threads.equals("virtual"),
                    "base=http://127.0.0.1:" + server.port())
                .timeout(load.plus(Duration.ofMinutes(4)))
                .start()) {
      app.awaitValue("ready");
      // Rewrites stop a few seconds before the load does, so each one is applied during it.
      long rewrites = (load.toMillis() - 2000) / RELOAD_EVERY.toMillis();
      reloader.scheduleAtFixedRate(
          () -> {
            if (written.get() < rewrites) {
              int n = written.incrementAndGet();
              Ops.write(
                  config, SoakConfig.yaml(n % SoakConfig.VARIANTS, prometheusPort, deadLetters));
            }
          },
          RELOAD_EVERY.toMillis(),
          RELOAD_EVERY.toMillis(),
          TimeUnit.MILLISECONDS);
      await("the soak's report")
          .atMost(load.plus(Duration.ofMinutes(3)))
          .pollInterval(Duration.ofMillis(500))
          .until(() -> app.value("report") != null || app.value("stuck") != null || !app.isAlive());
      reloader.shutdownNow();
      String prometheus = Ops.scrape(prometheusPort);
      app.send("exit");
      ForkedJvm.Result result = app.finish(Duration.ofSeconds(30));
      return new Outcome(
          name, load, result, server.counts(), prometheus, deadLetters(deadLetters), written.get());
    } finally {
      reloader.shutdownNow();
    }
  }

  /** The class of a dead letter's {@code error} ({@code CLASS: message}). */
  private static String errorClass(Object error) {
    String e = String.valueOf(error);
    int colon = e.indexOf(':');
    return colon < 0 ? e : e.substring(0, colon);
  }

  /**
   * Dead letters per route: every one ({@code total}); those of calls that made no attempt (the
   * breaker or the rate limit refused the first: {@code no-attempt}; the rate limit's: {@code
   * rate-limited-first}); those of calls refused at a later attempt, after a retry had been decided
   * ({@code refused-later}: attempts made, and no outcome, or the outcome of the attempt before a
   * retry the rate limit refused); and by kind, {@code letter.REASON,attempts=N,STATUS-OR-OUTCOME[,
   * ERROR-CLASS]}, for the figures. Every line must parse.
   */
  private static Map<String, Long> deadLetters(Path file) {
    Map<String, Long> tally = new TreeMap<>();
    if (!Files.exists(file)) {
      return tally;
    }
    try (Stream<String> lines = Files.lines(file)) {
      lines.forEach(
          line -> {
            Map<String, Object> letter = Json.object(line);
            String route = (String) letter.get("route");
            long attempts = (Long) letter.get("attempts");
            tally.merge(route + ".total", 1L, Long::sum);
            // What the figures show of a route whose counts differ.
            tally.merge(
                route
                    + ".letter."
                    + letter.get("reason")
                    + ",attempts="
                    + attempts
                    + ","
                    + (letter.get("status") != null ? letter.get("status") : letter.get("outcome"))
                    + (letter.get("error") != null ? "," + errorClass(letter.get("error")) : ""),
                1L,
                Long::sum);
            boolean rateLimited = "rate-limited".equals(letter.get("reason"));
            if (attempts == 0) {
              tally.merge(route + ".no-attempt", 1L, Long::sum);
              if (rateLimited) {
                tally.merge(route + ".rate-limited-first", 1L, Long::sum);
              }
            } else if (letter.get("outcome") == null || rateLimited) {
              // A retry the rate limit refused ends with the attempt before it (its outcome).
              tally.merge(route + ".refused-later", 1L, Long::sum);
            }
          });
      return tally;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
