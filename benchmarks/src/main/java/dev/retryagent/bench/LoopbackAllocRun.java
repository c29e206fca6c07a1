package dev.retryagent.bench;

import com.sun.management.ThreadMXBean;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.okhttp.RetryInterceptor;
import dev.retryagent.policy.Policy;
import java.lang.management.ManagementFactory;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import okhttp3.OkHttpClient;
import okhttp3.Request;

/**
 * The calls of {@link LoopbackCallBenchmark}, counted instead of timed: bytes allocated and CPU
 * time used by <em>every</em> thread of the process (caller, client threads, server) per call, over
 * blocks of calls, the variants interleaved block by block. Medians over many blocks are steadier
 * than JMH's wall-clock scores on a shared machine, and the interleaving puts the variants under
 * the same load.
 *
 * <p>Without an agent it compares the plain clients with the ones wired by hand ({@link
 * RetryingHttpClient#wrap}, {@link RetryInterceptor}); with {@code
 * -javaagent:agent/target/retry-agent.jar} it measures the plain clients, which the agent
 * instruments (a probe checks that it does). Compare the agent's rows with the plain rows of a run
 * without it.
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar dev.retryagent.bench.LoopbackAllocRun
 * [apache] [blocks [calls per block]]}. With {@code apache} it compares Apache HttpClient 4.5, 5.x
 * classic and 5.x async, plain and wired by hand ({@link ApacheCalls}), instead, without an agent.
 */
public final class LoopbackAllocRun {
  private LoopbackAllocRun() {}

  /** One way of making the call. */
  @FunctionalInterface
  private interface Call {
    Object make() throws Exception;
  }

  public static void main(String[] args) throws Exception {
    boolean apacheOnly = args.length > 0 && args[0].equals("apache");
    if (apacheOnly) {
      args = java.util.Arrays.copyOfRange(args, 1, args.length);
    }
    int blocks = args.length > 0 ? Integer.parseInt(args[0]) : 30;
    int perBlock = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
    ApacheCalls apache = null;
    try (LoopbackServer server = LoopbackServer.okWithProbe()) {
      HttpClient jdk = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      OkHttpClient ok = new OkHttpClient();
      boolean agent = LoopbackCallBenchmark.jdkProbe(server, jdk, "alloc") == 200;
      if (agent) {
        LoopbackCallBenchmark.expectStatus(
            200, LoopbackCallBenchmark.okProbe(server, ok, "alloc"), "OkHttp with the agent");
      }
      HttpRequest jdkGet = LoopbackCallBenchmark.jdkRequest(server.url("/v1/items"));
      Request okGet = new Request.Builder().url(server.url("/v1/items")).build();
      Map<String, Call> variants = new LinkedHashMap<>();
      if (apacheOnly) {
        if (agent) {
          throw new IllegalStateException("apache: run without -javaagent");
        }
        Map<String, java.util.concurrent.Callable<Object>> calls = new LinkedHashMap<>();
        apache = new ApacheCalls(server, RetryEngine.builder().policy(Policy.defaults()).build());
        apache.addTo(calls, false);
        calls.forEach((name, c) -> variants.put(name, c::call));
      } else if (agent) {
        variants.put("jdk, agent", () -> LoopbackCallBenchmark.jdk(jdk, jdkGet));
        variants.put("okhttp, agent", () -> LoopbackCallBenchmark.ok(ok, okGet));
      } else {
        RetryEngine engine = RetryEngine.builder().policy(Policy.defaults()).build();
        HttpClient jdkWrapped = RetryingHttpClient.wrap(jdk, engine);
        OkHttpClient okWrapped =
            ok.newBuilder().addInterceptor(new RetryInterceptor(engine)).build();
        variants.put("jdk, plain", () -> LoopbackCallBenchmark.jdk(jdk, jdkGet));
        variants.put(
            "jdk, RetryingHttpClient.wrap", () -> LoopbackCallBenchmark.jdk(jdkWrapped, jdkGet));
        variants.put("okhttp, plain", () -> LoopbackCallBenchmark.ok(ok, okGet));
        variants.put("okhttp, RetryInterceptor", () -> LoopbackCallBenchmark.ok(okWrapped, okGet));
      }
      ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
      Map<String, List<double[]>> samples = new LinkedHashMap<>();
      for (int block = -3; block < blocks; block++) { // three blocks of warm-up
        for (Map.Entry<String, Call> v : variants.entrySet()) {
          long[] before = totals(threads);
          long start = System.nanoTime();
          for (int i = 0; i < perBlock; i++) {
            v.getValue().make();
          }
          long wall = System.nanoTime() - start;
          long[] after = totals(threads);
          if (block >= 0) {
            samples
                .computeIfAbsent(v.getKey(), k -> new ArrayList<>())
                .add(
                    new double[] {
                      (after[0] - before[0]) / (double) perBlock,
                      (after[1] - before[1]) / (double) perBlock,
                      wall / (double) perBlock
                    });
          }
        }
      }
      System.out.printf(
          "%d blocks x %d calls per variant, all threads of the process%n", blocks, perBlock);
      System.out.println(
          "| variant | B/call, median (quartiles) | CPU µs/call, median | wall µs/call, median |");
      System.out.println("|---|---:|---:|---:|");
      for (Map.Entry<String, List<double[]>> e : samples.entrySet()) {
        double[] bytes = e.getValue().stream().mapToDouble(s -> s[0]).sorted().toArray();
        double[] cpu = e.getValue().stream().mapToDouble(s -> s[1]).sorted().toArray();
        double[] wall = e.getValue().stream().mapToDouble(s -> s[2]).sorted().toArray();
        System.out.printf(
            "| %s | %.0f (%.0f-%.0f) | %.1f | %.1f |%n",
            e.getKey(),
            bytes[bytes.length / 2],
            bytes[bytes.length / 4],
            bytes[bytes.length * 3 / 4],
            cpu[cpu.length / 2] / 1e3,
            wall[wall.length / 2] / 1e3);
      }
      ok.dispatcher().executorService().shutdown();
    } finally {
      if (apache != null) {
        apache.close();
      }
    }
  }

  /**
   * Bytes allocated and CPU nanoseconds used so far by the live threads. A thread that ends between
   * two readings takes its share with it; the clients' and server's pools keep theirs.
   */
  private static long[] totals(ThreadMXBean threads) {
    long[] ids = threads.getAllThreadIds();
    long bytes = 0;
    long cpu = 0;
    long[] allocated = threads.getThreadAllocatedBytes(ids);
    for (int i = 0; i < ids.length; i++) {
      if (allocated[i] > 0) {
        bytes += allocated[i];
      }
      long c = threads.getThreadCpuTime(ids[i]);
      if (c > 0) {
        cpu += c;
      }
    }
    return new long[] {bytes, cpu};
  }
}
