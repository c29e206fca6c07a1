package dev.retryagent.it.differential;

import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Reply;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One forked run of the suite: every case on every API of one driver variant, on one JDK, with or
 * without the agent, in one JVM ({@link DiffApp}). Each case and API gets a server of its own, and
 * with the agent a route that claims that server's port with the case's policy, so that per-host
 * breakers and budgets never mix. Each API first makes {@link #withWarmups warm-up calls}, so that
 * no case pays for class loading.
 */
final class DiffRun {
  /** Calls run this many at a time in the forked JVM. */
  static final int LANES = Integer.getInteger("diff.lanes", 3);

  /** The header that marks the requests of one call of one run. */
  static final String CALL_HEADER = "X-Diff-Call";

  /** After the last call, late requests (retries after a cancel) get this long to arrive. */
  static final int LINGER_MILLIS = 1_500;

  private DiffRun() {}

  /**
   * What one run observed.
   *
   * @param calls by {@code caseId/api}
   * @param jvm the forked JVM's exit code and output
   * @param millis how long the JVM ran
   */
  record Outcome(Map<String, Observation> calls, ForkedJvm.Result jvm, long millis) {
    /**
     * {@code name|daemon|loader} of each thread alive at {@code when} ({@code start}, {@code end}).
     */
    List<String> threads(String when) {
      List<String> threads = new ArrayList<>();
      for (String line : jvm.stdout().split("\\R")) {
        if (line.startsWith("thread." + when + "=")) {
          threads.add(line.substring(line.indexOf('=') + 1));
        }
      }
      return threads;
    }
  }

  /** A case's server in one run: a counting server, a black hole, or a refused port. */
  private record Target(CountingServer server, Blackhole hole, int refused)
      implements AutoCloseable {
    /**
     * A server for {@code c} that admits only requests with header {@value #CALL_HEADER}: {@code
     * token}. On a shared machine, another process's late retry can reach a port it had and this
     * server now has.
     */
    static Target start(Case c, String token) throws IOException {
      if (c.script() == null) {
        return new Target(null, Blackhole.start(), 0);
      }
      if (c.script() == Case.REFUSED) {
        return new Target(null, null, dev.retryagent.it.harness.RefusedPort.port());
      }
      CountingServer s = CountingServer.start();
      s.admitOnly(r -> token.equals(r.header(CALL_HEADER)));
      c.script().accept(s);
      return new Target(s, null, 0);
    }

    URI uri() {
      return server != null
          ? server.uri("")
          : hole != null ? hole.uri() : URI.create("http://127.0.0.1:" + refused);
    }

    int port() {
      return server != null ? server.port() : hole != null ? hole.port() : refused;
    }

    int requests() {
      return server != null ? server.requestCount() : 0;
    }

    List<dev.retryagent.it.harness.RecordedRequest> recorded() {
      return server != null ? server.requests() : List.of();
    }

    @Override
    public void close() throws IOException {
      if (server != null) {
        server.close();
      } else if (hole != null) {
        hole.close();
      }
    }
  }

  /** Whether {@code api} of {@code driver} can run case {@code c}. */
  static boolean runs(Driver driver, String api, Case c) {
    return driver.features(api).containsAll(c.action().needs());
  }

  /**
   * Runs {@code cases} on every API of {@code driver} that offers what they need, in one JVM of
   * {@code variant} on {@code jdk}, with or without the agent. The plan, the agent's configuration,
   * its dead letters and the JVM's output are left in {@code dir} for whoever reads a difference.
   */
  static Outcome run(
      Driver driver, Driver.Variant variant, Path jdk, boolean agent, List<Case> cases, Path dir) {
    return run(driver, variant, jdk, agent, cases, dir, List.of());
  }

  /** As {@link #run(Driver, Driver.Variant, Path, boolean, List, Path)}, with JVM options. */
  static Outcome run(
      Driver driver,
      Driver.Variant variant,
      Path jdk,
      boolean agent,
      List<Case> cases,
      Path dir,
      List<String> jvmOptions) {
    Map<String, Target> targets = new LinkedHashMap<>();
    String run = java.util.UUID.randomUUID().toString();
    try {
      Files.createDirectories(dir);
      Files.deleteIfExists(dir.resolve("dead-letters.jsonl"));
      List<String> plan = new ArrayList<>();
      StringBuilder routes = new StringBuilder();
      long bounds = 0;
      for (String api : driver.apis()) {
        for (Case c : withWarmups(cases)) {
          if (!runs(driver, api, c)) {
            continue;
          }
          String key = c.id() + "/" + api;
          Target t = Target.start(c, run + "/" + key);
          targets.put(key, t);
          Action a = c.action().header(CALL_HEADER, run + "/" + key);
          plan.add(key + "\t" + t.uri() + "\t" + a.encode());
          routes.append(route(c.id() + "-" + api, t.port(), c.policy()));
          bounds += c.action().bound();
        }
      }
      Path planFile = Files.write(dir.resolve("plan.txt"), plan, StandardCharsets.UTF_8);
      Path config = dir.resolve("config.yml");
      Files.writeString(config, config(dir, routes), StandardCharsets.UTF_8);
      ForkedJvm.Builder jvm =
          ForkedJvm.builder(jdk)
              .classpath(variant.classpath().toArray(new Path[0]))
              .jvmArgs(jvmOptions.toArray(new String[0]))
              .mainClass(DiffApp.class)
              .args(
                  driver.getClass().getName(),
                  planFile.toString(),
                  String.valueOf(LANES),
                  String.valueOf(LINGER_MILLIS))
              .timeout(Duration.ofSeconds(60 + bounds / 1000 / LANES));
      long start = System.nanoTime();
      ForkedJvm.Result result =
          (agent ? jvm.agentArgs("config=" + config) : jvm.withoutAgent()).run();
      long millis = (System.nanoTime() - start) / 1_000_000;
      Files.writeString(dir.resolve("stdout.txt"), result.stdout(), StandardCharsets.UTF_8);
      Files.writeString(dir.resolve("stderr.txt"), result.stderr(), StandardCharsets.UTF_8);
      Map<String, Observation> calls = new LinkedHashMap<>();
      targets.forEach(
          (key, t) ->
              calls.put(key, Observation.read(result, key, t.port(), t.requests(), t.recorded())));
      return new Outcome(calls, result, millis);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      for (Target t : targets.values()) {
        try {
          t.close();
        } catch (IOException ignored) {
          // closing anyway
        }
      }
    }
  }

  /**
   * The cases after two warm-up calls: a POST answered 503, which gives up at once on the caller's
   * thread (so the agent's first give-up, and whatever it starts then, comes from an application
   * thread), and a GET answered 503 then 200 (a retry).
   */
  private static List<Case> withWarmups(List<Case> cases) {
    List<Case> all = new ArrayList<>();
    all.add(
        Case.of("warmup-give-up", "a POST answered 503")
            .server(s -> s.setDefaultReply(Reply.status(503)))
            .action(Action.post("/", "{}")));
    all.add(
        Case.of("warmup-retry", "a GET answered 503, then 200")
            .server(s -> s.enqueue(Reply.status(503), Reply.ok("warm"))));
    all.addAll(cases);
    return all;
  }

  private static String route(String name, int port, String policy) {
    StringBuilder r = new StringBuilder();
    r.append("  - name: ").append(name).append('\n');
    r.append("    match: { hosts: [\"127.0.0.1:").append(port).append("\"] }\n");
    for (String line : policy.split("\n")) {
      if (!line.isBlank()) {
        r.append("    ").append(line).append('\n');
      }
    }
    return r.toString();
  }

  /** No reload thread (nothing to watch for); a dead-letter file, so its writer runs. */
  private static String config(Path dir, CharSequence routes) {
    return "version: 1\n"
        + "agent:\n"
        + "  reload: false\n"
        + "  deadLetter: { path: \""
        + dir.resolve("dead-letters.jsonl")
        + "\" }\n"
        + "routes:\n"
        + routes;
  }
}
