package dev.retryagent.bench;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Jitter;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.StatusSet;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The retry storm of Brooker's "Exponential Backoff and Jitter" (AWS Architecture Blog, 2015), with
 * real clients, a real server and the real engine: N clients each write once to a loopback resource
 * under optimistic concurrency, and retry through the engine until they succeed.
 *
 * <p>The server reads the resource's version when a write arrives, works for {@code --work-ms},
 * then commits if the version is unchanged ({@code 200}) and answers {@code 409} otherwise: of the
 * writes that overlap in time, one wins. Each client is one thread with its own engine (clients are
 * independent processes in the model) and a {@link RetryingHttpClient} over one shared
 * java.net.http client; the engine's clock, sleeper and randomness are the real ones. The policy
 * retries 409 with exponential backoff ({@code --initial-ms}, multiplier 2, {@code --max-ms}) and
 * the jitter under test; budget and breaker are off so that jitter alone is compared. {@code
 * maxAttempts} is at most 10 by contract, so a client whose call gave up after 10 attempts makes a
 * new call at once (a fresh backoff), as an application that must get its write through would; the
 * run counts those give-ups.
 *
 * <p>Measured per jitter mode and N, median over {@code --rounds} interleaved rounds: requests the
 * server answered (calls), and the time until the last client succeeded. With {@code --svg DIR} it
 * draws both curves into {@code DIR/retry-storm-calls.svg} and {@code DIR/retry-storm-time.svg}.
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar dev.retryagent.bench.RetryStormRun
 * [--clients 10,25,50,100,150,200] [--rounds 3] [--work-ms 1] [--initial-ms 5] [--max-ms 1000]
 * [--svg docs]}.
 */
public final class RetryStormRun {
  private static final int MAX_ATTEMPTS = RetryPolicy.MAX_ATTEMPTS_LIMIT;
  private static final String CSV_HEADER = "round,jitter,clients,calls,millis,give_ups";

  private RetryStormRun() {}

  /** One run: N clients until all succeeded. */
  private static final class Result {
    final long calls;
    final long millis;
    final long giveUps;

    Result(long calls, long millis, long giveUps) {
      this.calls = calls;
      this.millis = millis;
      this.giveUps = giveUps;
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opt = options(args);
    int[] clients =
        Arrays.stream(opt.getOrDefault("clients", "10,25,50,100,150,200").split(","))
            .mapToInt(Integer::parseInt)
            .toArray();
    int rounds = Integer.parseInt(opt.getOrDefault("rounds", "3"));
    long workMillis = Long.parseLong(opt.getOrDefault("work-ms", "10"));
    long initialMillis = Long.parseLong(opt.getOrDefault("initial-ms", "10"));
    long maxMillis = Long.parseLong(opt.getOrDefault("max-ms", "1000"));
    Jitter[] modes = Jitter.values();
    if (opt.containsKey("plot")) {
      report(readCsv(Path.of(opt.get("plot"))), modes, clients, opt.get("svg"), opt);
      return;
    }

    AtomicLong version = new AtomicLong();
    try (LoopbackServer server =
        LoopbackServer.start(
            1024,
            (method, path) -> {
              long seen = version.get();
              Thread.sleep(workMillis);
              return LoopbackServer.Reply.of(version.compareAndSet(seen, seen + 1) ? 200 : 409);
            })) {
      HttpClient shared = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpRequest write =
          HttpRequest.newBuilder(URI.create(server.url("/resource")))
              .PUT(HttpRequest.BodyPublishers.noBody())
              .build();
      // Warm-up: JIT, connections, threads; not recorded.
      run(server, shared, write, policy(Jitter.FULL, initialMillis, maxMillis), max(clients));

      Map<String, List<Result>> results = new LinkedHashMap<>();
      StringBuilder csv = new StringBuilder(CSV_HEADER).append('\n');
      System.out.println(CSV_HEADER);
      for (int round = 0; round < rounds; round++) {
        for (int n : clients) {
          for (int m = 0; m < modes.length; m++) {
            // Rotate the order each round so no mode always runs first on a fresh machine state.
            Jitter mode = modes[(m + round) % modes.length];
            Result r = run(server, shared, write, policy(mode, initialMillis, maxMillis), n);
            results.computeIfAbsent(key(mode, n), k -> new ArrayList<>()).add(r);
            String row =
                String.join(
                    ",",
                    String.valueOf(round + 1),
                    mode.configName(),
                    String.valueOf(n),
                    String.valueOf(r.calls),
                    String.valueOf(r.millis),
                    String.valueOf(r.giveUps));
            csv.append(row).append('\n');
            System.out.println(row);
          }
        }
      }
      if (opt.containsKey("svg")) {
        Files.writeString(Path.of(opt.get("svg"), "retry-storm.csv"), csv.toString());
      }
      report(results, modes, clients, opt.get("svg"), opt);
    }
  }

  /** Results written by an earlier run, to draw them again without running. */
  private static Map<String, List<Result>> readCsv(Path file) throws IOException {
    Map<String, List<Result>> results = new LinkedHashMap<>();
    for (String line : Files.readAllLines(file)) {
      if (line.isBlank() || line.equals(CSV_HEADER)) {
        continue;
      }
      String[] f = line.split(",");
      Jitter mode = Jitter.valueOf(f[1].toUpperCase(java.util.Locale.ROOT));
      results
          .computeIfAbsent(key(mode, Integer.parseInt(f[2])), k -> new ArrayList<>())
          .add(new Result(Long.parseLong(f[3]), Long.parseLong(f[4]), Long.parseLong(f[5])));
    }
    return results;
  }

  static Policy policy(Jitter jitter, long initialMillis, long maxMillis) {
    return new Policy(
        "storm",
        RetryPolicy.builder()
            .maxAttempts(MAX_ATTEMPTS)
            .retryOnStatuses(StatusSet.of("409"))
            .backoff(
                BackoffPolicy.builder()
                    .initial(Duration.ofMillis(initialMillis))
                    .multiplier(2.0)
                    .max(Duration.ofMillis(maxMillis))
                    .jitter(jitter)
                    .build())
            .deadline(Duration.ofMinutes(5))
            .build(),
        BudgetPolicy.builder().enabled(false).build(),
        CircuitBreakerPolicy.builder().enabled(false).build(),
        RateLimitPolicy.defaults());
  }

  private static Result run(
      LoopbackServer server, HttpClient shared, HttpRequest write, Policy policy, int n)
      throws InterruptedException {
    CountDownLatch go = new CountDownLatch(1);
    AtomicLong giveUps = new AtomicLong();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      HttpClient client =
          RetryingHttpClient.wrap(shared, RetryEngine.builder().policy(policy).build());
      Thread t =
          new Thread(
              () -> {
                try {
                  go.await();
                  while (client.send(write, HttpResponse.BodyHandlers.discarding()).statusCode()
                      != 200) {
                    giveUps.incrementAndGet();
                  }
                } catch (Exception e) {
                  throw new IllegalStateException("a client failed", e);
                }
              },
              "storm-client-" + i);
      t.start();
      threads.add(t);
    }
    long before = server.requests();
    long start = System.nanoTime();
    go.countDown();
    for (Thread t : threads) {
      t.join();
    }
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    return new Result(server.requests() - before, millis, giveUps.get());
  }

  private static void report(
      Map<String, List<Result>> results,
      Jitter[] modes,
      int[] clients,
      String svgDir,
      Map<String, String> opt)
      throws IOException {
    String setup =
        String.format(
            "%s-ms optimistic writes; backoff %s ms x2, max %s ms; %d attempts a call;" + " median",
            opt.getOrDefault("work-ms", "10"),
            opt.getOrDefault("initial-ms", "10"),
            opt.getOrDefault("max-ms", "1000"),
            MAX_ATTEMPTS);
    System.out.println();
    System.out.println(setup);
    System.out.println("| jitter | N | calls | calls / N | time ms | give-ups |");
    System.out.println("|---|---:|---:|---:|---:|---:|");
    SvgChart calls =
        new SvgChart(
            "Retry storm: requests until every client wrote", setup, "clients (N)", "requests");
    SvgChart time =
        new SvgChart(
            "Retry storm: time until every client wrote", setup, "clients (N)", "time (ms)");
    double[] x = Arrays.stream(clients).asDoubleStream().toArray();
    for (Jitter mode : modes) {
      double[] c = new double[clients.length];
      double[] t = new double[clients.length];
      for (int i = 0; i < clients.length; i++) {
        List<Result> rs = results.get(key(mode, clients[i]));
        c[i] = median(rs, r -> r.calls);
        t[i] = median(rs, r -> r.millis);
        System.out.printf(
            "| %s | %d | %.0f | %.1f | %.0f | %.0f |%n",
            mode.configName(),
            clients[i],
            c[i],
            c[i] / clients[i],
            t[i],
            median(rs, r -> r.giveUps));
      }
      calls.series(mode.configName(), x, c);
      time.series(mode.configName(), x, t);
    }
    if (svgDir != null) {
      calls.write(Path.of(svgDir, "retry-storm-calls.svg"));
      time.write(Path.of(svgDir, "retry-storm-time.svg"));
      System.out.println("wrote " + svgDir + "/retry-storm-calls.svg and retry-storm-time.svg");
    }
  }

  private static double median(List<Result> rs, java.util.function.ToLongFunction<Result> f) {
    long[] v = rs.stream().mapToLong(f).sorted().toArray();
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2.0;
  }

  private static String key(Jitter mode, int n) {
    return mode + "/" + n;
  }

  private static int max(int[] values) {
    return Arrays.stream(values).max().orElse(1);
  }

  /** {@code --name value} pairs. */
  static Map<String, String> options(String[] args) {
    Map<String, String> opt = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --name value, found " + args[i]);
      }
      opt.put(args[i].substring(2), args[i + 1]);
    }
    return opt;
  }
}
