package dev.retryagent.bench;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.engine.CircuitBreakerOpenException;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.jdk.RetryingHttpClient;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Retry amplification under a total outage: 1,000 GETs through {@link RetryingHttpClient} against a
 * loopback server that answers every request {@code 503}, with {@code maxAttempts: 3} and the
 * default backoff, from 50 client threads. Three engines, each wired as the agent wires its own
 * (log lines built, then dropped): budget on (breaker off), budget off (breaker off), and the
 * defaults (budget and breaker on). Printed: requests the server saw per call, how calls ended, and
 * for calls that started with the breaker already open (they fail without a request) their wall
 * time and the CPU time of the calling thread, the whole client stack included.
 *
 * <p>The budget allows {@code ratio x calls + minPerSecond x window} retries in its window (0.2 x
 * 1,000 + 10/s x 10 s = 300 here, as the run fits in one window): at most 1.3 requests per call,
 * 1.2 plus the floor's 0.1.
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar dev.retryagent.bench.OutageRun [calls]
 * [threads]}.
 */
public final class OutageRun {
  private OutageRun() {}

  public static void main(String[] args) throws Exception {
    int calls = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
    int threads = args.length > 1 ? Integer.parseInt(args[1]) : 50;
    String[][] variants = {
      {"budget on, breaker off", "circuitBreaker: { enabled: false }"},
      {
        "budget off, breaker off",
        "budget: { enabled: false }\n  circuitBreaker: { enabled: false }"
      },
      {"defaults (budget and breaker on)", "budget: { enabled: true }"},
    };
    try (LoopbackServer server =
        LoopbackServer.start(1024, (m, p) -> LoopbackServer.Reply.of(503))) {
      HttpClient plain = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpRequest get = HttpRequest.newBuilder(URI.create(server.url("/outage"))).build();
      // Warm-up (JIT, connections), not printed.
      run(server, plain, get, config(variants[1][1]), 200, threads);
      System.out.printf("%d calls, maxAttempts 3, %d threads, always 503%n", calls, threads);
      System.out.println(
          "| engine | requests / call | gave up on 503 | ended by the breaker | run ms |"
              + " started with the breaker open | their wall µs median / p99 | their CPU µs"
              + " median |");
      System.out.println("|---|---:|---:|---:|---:|---:|---:|---:|");
      for (String[] v : variants) {
        Result r = run(server, plain, get, config(v[1]), calls, threads);
        System.out.printf(
            "| %s | %.2f | %d | %d | %d | %d | %s | %s |%n",
            v[0],
            (double) r.requests / calls,
            r.gaveUp.get(),
            r.rejected.get(),
            r.millis,
            r.rejectedWall.size(),
            r.rejectedWall.isEmpty()
                ? "-"
                : String.format(
                    "%.1f / %.1f",
                    percentile(r.rejectedWall, 0.5) / 1e3, percentile(r.rejectedWall, 0.99) / 1e3),
            r.rejectedCpu.isEmpty()
                ? "-"
                : String.format("%.1f", percentile(r.rejectedCpu, 0.5) / 1e3));
      }
    }
  }

  private static AgentConfig config(String defaults) throws Exception {
    return ConfigLoader.parse(
        "defaults:\n  retry: { maxAttempts: 3 }\n  " + defaults + "\n", "outage", Map.of());
  }

  private static final class Result {
    long requests;
    long millis;
    final AtomicInteger gaveUp = new AtomicInteger();
    final AtomicInteger rejected = new AtomicInteger();
    final List<Long> rejectedWall = new ArrayList<>();
    final List<Long> rejectedCpu = new ArrayList<>();
  }

  private static Result run(
      LoopbackServer server,
      HttpClient plain,
      HttpRequest get,
      AgentConfig config,
      int calls,
      int threads)
      throws Exception {
    RetryEngine engine = Fixtures.agentEngine(config, line -> {});
    HttpClient client = RetryingHttpClient.wrap(plain, engine);
    ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
    Result r = new Result();
    AtomicInteger next = new AtomicInteger();
    AtomicLong failures = new AtomicLong();
    long before = server.requests();
    long start = System.nanoTime();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread w =
          new Thread(
              () -> {
                while (next.getAndIncrement() < calls) {
                  boolean openAtStart = Fixtures.breakerOpen(engine);
                  long wall = System.nanoTime();
                  long cpuStart = cpu.getCurrentThreadCpuTime();
                  try {
                    int status =
                        client.send(get, HttpResponse.BodyHandlers.discarding()).statusCode();
                    if (status == 503) {
                      r.gaveUp.incrementAndGet();
                    }
                  } catch (CircuitBreakerOpenException e) {
                    long cpuNanos = cpu.getCurrentThreadCpuTime() - cpuStart;
                    long wallNanos = System.nanoTime() - wall;
                    r.rejected.incrementAndGet();
                    if (!openAtStart) {
                      continue; // a retry found the breaker open: the call waited first
                    }
                    synchronized (r) {
                      r.rejectedWall.add(wallNanos);
                      r.rejectedCpu.add(cpuNanos);
                    }
                  } catch (Exception e) {
                    failures.incrementAndGet();
                  }
                }
              });
      w.start();
      workers.add(w);
    }
    for (Thread w : workers) {
      w.join();
    }
    r.millis = (System.nanoTime() - start) / 1_000_000;
    r.requests = server.requests() - before;
    if (failures.get() > 0) {
      throw new IllegalStateException(failures.get() + " calls failed unexpectedly");
    }
    return r;
  }

  private static double percentile(List<Long> values, double p) {
    long[] v = values.stream().mapToLong(Long::longValue).toArray();
    Arrays.sort(v);
    return v[Math.min(v.length - 1, (int) Math.floor(p * v.length))];
  }
}
