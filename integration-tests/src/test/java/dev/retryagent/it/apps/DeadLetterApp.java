package dev.retryagent.it.apps;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Gives up as fast as it can, so the agent writes dead letters: {@code threads} threads each send
 * {@code calls} POSTs without idempotency key (which the agent never retries after a status) with
 * {@code java.net.http} to {@code BASE/dl/...}; {@code calls=0} sends until the JVM is killed.
 *
 * <p>Arguments ({@code key=value}): {@code base}, {@code threads}, {@code calls}. Prints {@code
 * ready=PID} first; at the end (if there is one) {@code status.N=COUNT} or {@code
 * error.CLASS=COUNT} per outcome, {@code calls=} in all, and {@code slowestMillis=}, the longest
 * single call: a dead-letter file that cannot be written must not hold calls up.
 */
public final class DeadLetterApp {
  private DeadLetterApp() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new TreeMap<>();
    for (String arg : args) {
      String[] kv = arg.split("=", 2);
      a.put(kv[0], kv[1]);
    }
    String base = a.get("base");
    int threads = Integer.parseInt(a.get("threads"));
    long calls = Long.parseLong(a.get("calls"));
    HttpClient client =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .build();
    Map<String, LongAdder> outcomes = new ConcurrentHashMap<>();
    AtomicLong slowest = new AtomicLong();
    System.out.println("ready=" + ProcessHandle.current().pid());
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      String worker = "w" + t;
      Thread w =
          new Thread(
              () -> {
                for (long i = 0; calls == 0 || i < calls; i++) {
                  long started = System.nanoTime();
                  String outcome = call(client, base + "/dl/" + worker + "/" + i);
                  slowest.accumulateAndGet((System.nanoTime() - started) / 1_000_000, Math::max);
                  outcomes.computeIfAbsent(outcome, k -> new LongAdder()).increment();
                }
              },
              worker);
      w.start();
      workers.add(w);
    }
    for (Thread w : workers) {
      w.join();
    }
    long total = 0;
    for (Map.Entry<String, LongAdder> e : new TreeMap<>(outcomes).entrySet()) {
      System.out.println(e.getKey() + "=" + e.getValue().sum());
      total += e.getValue().sum();
    }
    System.out.println("calls=" + total);
    System.out.println("slowestMillis=" + slowest.get());
  }

  private static String call(HttpClient client, String url) {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(url))
            .timeout(Duration.ofSeconds(20))
            .POST(HttpRequest.BodyPublishers.ofString("{\"order\":42}"))
            .build();
    try {
      return "status." + client.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
    } catch (Exception e) {
      return "error." + e.getClass().getName();
    }
  }
}
