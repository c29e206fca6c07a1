package dev.retryagent.bench;

import dev.retryagent.config.ConfigLoader;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.okhttp.AsyncRetrier;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * A whole-process measurement of many asynchronous calls all waiting for a retry at once: 10,000
 * {@code sendAsync} (java.net.http) or {@code enqueue} (OkHttp) calls whose first request is
 * answered {@code 503} with {@code Retry-After: 2}. While they wait it counts the threads (the
 * agent's {@code retry-agent-*}, the client's, any thread sleeping), OkHttp's running and queued
 * calls (the per-host slots), and the heap they retain: used heap after a full GC with the calls
 * waiting, minus the same before they started, per call, and of that the agent's own objects
 * ({@link HeapShare}); and, once every call has ended, what that end freed per call (the growth
 * from before the calls also holds what the client keeps after them: java.net.http's idle
 * connections). Then it lets them finish and checks that every call got its 200.
 *
 * <p>Run: {@code java -Xmx2g -cp benchmarks/target/benchmarks.jar
 * dev.retryagent.bench.AsyncScaleRun CLIENT WIRING [CALLS [RETRY_AFTER [SPREAD_MS [close]]]]} with
 * {@code CLIENT} one of {@code jdk}, {@code okhttp} and {@code WIRING} one of {@code wrap} (core's
 * {@code RetryingHttpClient} / {@code AsyncRetrier}, wired by hand) or {@code agent} (plain
 * clients; add {@code -javaagent:agent/target/retry-agent.jar=benchmarks/config/async-scale.yml}).
 * Both read {@code benchmarks/config/async-scale.yml} (budget and breaker off, so every call
 * waits). The server runs in a child process ({@link AsyncScaleServer}). The calls are started over
 * {@code SPREAD_MS} (default 1000): all of them are still waiting at once when their first answers
 * come within {@code RETRY_AFTER} seconds. {@code close}: every answer says {@code Connection:
 * close}, so no connection waits idle in the client's pool at the snapshots (java.net.http keeps a
 * 16 KiB read buffer per idle connection, and how many of the burst's connections are still idle at
 * each snapshot varies from run to run).
 */
public final class AsyncScaleRun {
  private static final Path CONFIG = Path.of("benchmarks/config/async-scale.yml");
  private static final int WARM_CALLS = 200;

  private AsyncScaleRun() {}

  /** One way of making an asynchronous call; completes {@code done} when the call has ended. */
  private interface Caller {
    void call(String url, AtomicInteger ok, CountDownLatch done);
  }

  public static void main(String[] args) throws Exception {
    String client = args[0];
    boolean agent = args[1].equals("agent");
    int calls = args.length > 2 ? Integer.parseInt(args[2]) : 10_000;
    String retryAfter = args.length > 3 ? args[3] : "2";
    long spreadMillis = args.length > 4 ? Long.parseLong(args[4]) : 1000;
    boolean close = args.length > 5 && args[5].equals("close");
    boolean jdk = client.equals("jdk");
    Process server = startServer(retryAfter, close);
    try (BufferedReader fromServer =
            new BufferedReader(
                new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
        PrintWriter toServer =
            new PrintWriter(server.getOutputStream(), true, StandardCharsets.UTF_8)) {
      String base = "http://127.0.0.1:" + fromServer.readLine().substring("port ".length());
      RetryEngine engine =
          agent ? null : Fixtures.agentEngine(ConfigLoader.load(CONFIG, Map.of()), line -> {});
      OkHttpClient ok = jdk ? null : new OkHttpClient();
      Caller caller = jdk ? jdkCaller(agent ? plainJdk() : wrapped(engine)) : okCaller(ok, engine);

      runCalls(caller, base + "/wait/warm-", WARM_CALLS, 60);
      long[] warm = stats(fromServer, toServer);
      long heapBefore = usedHeapAfterGc();
      HeapShare histogramBefore = HeapShare.now();
      // Counted as at the snapshot, by name over every group: Thread.activeCount() counts the
      // caller's group only, and the agent's threads live in the system group (acd5856).
      ThreadCount threadsBefore = ThreadCount.now();

      long start = System.nanoTime();
      AtomicInteger succeeded = new AtomicInteger();
      CountDownLatch done = new CountDownLatch(calls);
      // Started over spreadMillis, not in one burst: 10,000 simultaneous connects overflow the
      // listen backlog (SYNs dropped, retried after 1 s, 3 s...) and measure the kernel.
      long slices = Math.max(1, spreadMillis / 10);
      for (int i = 0; i < calls; i++) {
        caller.call(base + "/wait/" + i, succeeded, done);
        long slice = (i + 1) * slices / calls;
        long due = start + TimeUnit.MILLISECONDS.toNanos(slice * 10);
        while (i + 1 < calls && System.nanoTime() < due) {
          Thread.sleep(1);
        }
      }
      awaitFirstAnswers(fromServer, toServer, warm[0] + calls, done);
      long firstRoundMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      if (engine != null) {
        awaitPending(engine, calls);
      } else {
        Thread.sleep(300); // the agent's engine is not visible here: let the last 503s be read
      }
      int pending = engine == null ? -1 : engine.pendingAsyncRetries();
      ThreadCount threads = ThreadCount.now();
      int running = ok == null ? -1 : ok.dispatcher().runningCallsCount();
      int queued = ok == null ? -1 : ok.dispatcher().queuedCallsCount();
      long heapWaiting = usedHeapAfterGc();
      HeapShare histogramWaiting = HeapShare.now();
      long retriesBeforeEnd = stats(fromServer, toServer)[1] - warm[1];
      boolean finished = done.await(120, TimeUnit.SECONDS);
      long totalMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

      System.out.printf(
          "%s %s: %d calls started over %d ms, Retry-After: %s%s; 503s answered in %d ms;"
              + " waiting at the snapshot: %s; retries arrived before the snapshot ended: %d%n",
          client,
          agent ? "agent" : "wrap",
          calls,
          spreadMillis,
          retryAfter,
          close ? ", Connection: close" : "",
          firstRoundMillis,
          pending < 0 ? "n/a (agent)" : String.valueOf(pending),
          retriesBeforeEnd);
      System.out.printf(
          "  threads: retry-agent-* %d, client %d, sleeping %d, running retry-agent code %d,"
              + " all %d (before the calls: retry-agent-* %d, client %d, all %d)%n",
          threads.agent,
          threads.client,
          threads.sleeping,
          threads.inEngine,
          threads.all,
          threadsBefore.agent,
          threadsBefore.client,
          threadsBefore.all);
      System.out.printf("  by name: %s%n", threads.named);
      threads.stacks.forEach((name, stack) -> System.out.printf("  %s:%s%n", name, stack));
      System.out.printf(
          "  OkHttp dispatcher: running %s, queued %s%n",
          running < 0 ? "n/a" : running, queued < 0 ? "n/a" : queued);
      System.out.printf(
          "  retained heap: %d KiB in all, %d B per waiting call%n",
          (heapWaiting - heapBefore) / 1024, (heapWaiting - heapBefore) / calls);
      List<Map.Entry<String, Long>> own =
          histogramWaiting.agentGrowthPerCall(histogramBefore, calls);
      System.out.printf(
          "  of which the agent's own objects: %d B per waiting call: %s%n",
          own.stream().mapToLong(Map.Entry::getValue).sum(), own);
      System.out.printf(
          "  finished: %s, %d of %d calls got 200, %d ms after the first call%n",
          finished, succeeded.get(), calls, totalMillis);
      // What the waiting calls hold is what their end frees. The growth from before the calls
      // also counts what the client keeps after them, held by no call: java.net.http's idle
      // connections (a 16 KiB read buffer each), as many as the burst left open, which varies from
      // run to run. Live bytes from the histograms: exact, where the used heap is not.
      HeapShare histogramAfter = HeapShare.now();
      System.out.printf(
          "  after every call ended: %d B per call still live, largest: %s%n",
          (histogramAfter.total() - histogramBefore.total()) / calls,
          histogramAfter.largestGrowthPerCall(histogramBefore, calls, 8));
      System.out.printf(
          "  freed when the calls ended: %d B per waiting call, largest: %s%n",
          (histogramWaiting.total() - histogramAfter.total()) / calls,
          histogramWaiting.largestGrowthPerCall(histogramAfter, calls, 16));
      if (ok != null) {
        ok.dispatcher().executorService().shutdown();
      }
    } finally {
      server.destroy();
    }
  }

  private static Process startServer(String retryAfter, boolean close) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    return new ProcessBuilder(
            java,
            "-cp",
            System.getProperty("java.class.path"),
            AsyncScaleServer.class.getName(),
            retryAfter,
            String.valueOf(close))
        .redirectError(ProcessBuilder.Redirect.INHERIT)
        .start();
  }

  private static HttpClient plainJdk() {
    return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  }

  private static HttpClient wrapped(RetryEngine engine) {
    return RetryingHttpClient.wrap(plainJdk(), engine);
  }

  private static Caller jdkCaller(HttpClient client) {
    return (url, ok, done) -> {
      CompletableFuture<HttpResponse<String>> f =
          client.sendAsync(
              HttpRequest.newBuilder(URI.create(url)).build(),
              HttpResponse.BodyHandlers.ofString());
      f.whenComplete(
          (r, e) -> {
            if (r != null && r.statusCode() == 200) {
              ok.incrementAndGet();
            }
            done.countDown();
          });
    };
  }

  private static Caller okCaller(OkHttpClient plain, RetryEngine engine) {
    AsyncRetrier retrier = engine == null ? null : new AsyncRetrier(engine);
    OkHttpClient client =
        retrier == null ? plain : plain.newBuilder().addInterceptor(retrier.interceptor()).build();
    return (url, ok, done) -> {
      Call call = client.newCall(new Request.Builder().url(url).build());
      Callback callback =
          new Callback() {
            @Override
            public void onFailure(Call c, IOException e) {
              done.countDown();
            }

            @Override
            public void onResponse(Call c, Response r) {
              if (r.code() == 200) {
                ok.incrementAndGet();
              }
              r.close();
              done.countDown();
            }
          };
      if (retrier == null) {
        call.enqueue(callback);
      } else {
        retrier.enqueue(call, callback);
      }
    };
  }

  /** Warms up classes, threads and the JIT with the same calls, 503 and retry included. */
  private static void runCalls(Caller caller, String prefix, int n, int seconds) throws Exception {
    AtomicInteger ok = new AtomicInteger();
    CountDownLatch done = new CountDownLatch(n);
    for (int i = 0; i < n; i++) {
      caller.call(prefix + i, ok, done);
    }
    if (!done.await(seconds, TimeUnit.SECONDS) || ok.get() != n) {
      throw new IllegalStateException("warm-up: " + ok.get() + " of " + n + " calls got 200");
    }
  }

  private static void awaitFirstAnswers(
      BufferedReader in, PrintWriter out, long firstAnswers, CountDownLatch done) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (System.nanoTime() < deadline) {
      if (stats(in, out)[0] >= firstAnswers) {
        return;
      }
      if (done.getCount() == 0) {
        throw new IllegalStateException("the calls ended before they all waited");
      }
      Thread.sleep(20);
    }
    throw new IllegalStateException("not every call got its 503 within 120 s");
  }

  private static void awaitPending(RetryEngine engine, int calls) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (engine.pendingAsyncRetries() < calls && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
  }

  private static long[] stats(BufferedReader in, PrintWriter out) throws IOException {
    out.println("stats");
    String[] parts = in.readLine().split(" ");
    return new long[] {
      Long.parseLong(parts[0].substring("first=".length())),
      Long.parseLong(parts[1].substring("retries=".length()))
    };
  }

  private static long usedHeapAfterGc() throws InterruptedException {
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 4; i++) {
      System.gc();
      Thread.sleep(50);
      used = Math.min(used, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
    }
    return used;
  }

  /** Live threads by kind, from their names and stacks. */
  private static final class ThreadCount {
    int agent;
    int client;
    int sleeping;
    int inEngine;
    int all;

    /** Names of agent and sleeping threads, digits folded into {@code N}, with their counts. */
    final Map<String, Integer> named = new java.util.TreeMap<>();

    /** The top frames of one thread per name that runs retry-agent code, to tell what it does. */
    final Map<String, String> stacks = new java.util.TreeMap<>();

    static ThreadCount now() {
      ThreadCount c = new ThreadCount();
      for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
        String name = e.getKey().getName();
        c.all++;
        if (name.startsWith("retry-agent")) {
          c.agent++;
          c.named.merge(name.replaceAll("[0-9]+", "N"), 1, Integer::sum);
        }
        if (name.startsWith("HttpClient-") || name.startsWith("OkHttp")) {
          c.client++;
        }
        StackTraceElement[] stack = e.getValue();
        if (e.getKey() != Thread.currentThread() && runsRetryAgentCode(stack)) {
          c.inEngine++;
          String group = name.replaceAll("[0-9]+", "N");
          c.named.merge("in retry-agent code: " + group, 1, Integer::sum);
          c.stacks.computeIfAbsent(group, g -> top(stack, 8));
        }
        if (stack.length > 0
            && stack[0].getClassName().equals("java.lang.Thread")
            && stack[0].getMethodName().startsWith("sleep")
            && e.getKey() != Thread.currentThread()) {
          c.sleeping++;
          c.named.merge("sleeping: " + name.replaceAll("[0-9]+", "N"), 1, Integer::sum);
        }
      }
      return c;
    }

    private static String top(StackTraceElement[] stack, int frames) {
      StringBuilder b = new StringBuilder();
      for (int i = 0; i < Math.min(frames, stack.length); i++) {
        b.append("\n      at ").append(stack[i]);
      }
      return b.toString();
    }

    /** A frame of the engine, an adapter or the agent (not of this run) on the stack. */
    private static boolean runsRetryAgentCode(StackTraceElement[] stack) {
      for (StackTraceElement frame : stack) {
        String cls = frame.getClassName();
        if (cls.startsWith("dev.retryagent.") && !cls.startsWith("dev.retryagent.bench.")) {
          return true;
        }
      }
      return false;
    }
  }
}
