package dev.retryagent.it.apps;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One JVM of a fleet, for the fleet-mode tests: no retry or rate-limit code of its own. Prints
 * {@code ready=PID}, then on {@code load NAME URL THREADS MILLIS PACE_MILLIS} sends GETs to URL
 * (header {@code X-Jvm: <-Dfleet.jvm>}) from THREADS threads for MILLIS, each thread pausing
 * PACE_MILLIS between its calls, and prints {@code NAME.ok=}, {@code NAME.failed=}, {@code
 * NAME.statuses=} (status:count,...), {@code NAME.failures=} (the first few exceptions), {@code
 * NAME.maxMillis=} (the slowest call) and {@code NAME.done=1}. {@code exit} returns from main.
 */
public final class FleetLoadApp {
  private FleetLoadApp() {}

  public static void main(String[] args) throws Exception {
    HttpClient client =
        HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(10))
            .version(HttpClient.Version.HTTP_1_1)
            .build();
    System.out.println("ready=" + ProcessHandle.current().pid());
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      String[] p = line.split(" ");
      if (p[0].equals("exit")) {
        return;
      }
      if (p[0].equals("load")) {
        load(
            client,
            p[1],
            URI.create(p[2]),
            Integer.parseInt(p[3]),
            Long.parseLong(p[4]),
            Long.parseLong(p[5]));
      }
    }
  }

  private static void load(
      HttpClient client, String name, URI uri, int threads, long millis, long paceMillis)
      throws InterruptedException {
    String jvm = System.getProperty("fleet.jvm", "jvm");
    long end = System.nanoTime() + millis * 1_000_000L;
    AtomicLong ok = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    AtomicLong maxNanos = new AtomicLong();
    Map<Integer, AtomicLong> statuses = new ConcurrentHashMap<>();
    List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    List<Thread> workers = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      Thread t =
          new Thread(
              () -> {
                while (System.nanoTime() - end < 0) {
                  long start = System.nanoTime();
                  try {
                    HttpResponse<Void> r =
                        client.send(
                            HttpRequest.newBuilder(uri)
                                .header("X-Jvm", jvm)
                                .timeout(Duration.ofSeconds(40))
                                .build(),
                            HttpResponse.BodyHandlers.discarding());
                    statuses
                        .computeIfAbsent(r.statusCode(), s -> new AtomicLong())
                        .incrementAndGet();
                    ok.incrementAndGet();
                  } catch (IOException e) {
                    failed.incrementAndGet();
                    if (failures.size() < 5) {
                      failures.add(e.getClass().getName() + ": " + e.getMessage());
                    }
                  } catch (InterruptedException e) {
                    return;
                  }
                  maxNanos.accumulateAndGet(System.nanoTime() - start, Math::max);
                  if (paceMillis > 0) {
                    try {
                      Thread.sleep(paceMillis);
                    } catch (InterruptedException e) {
                      return;
                    }
                  }
                }
              },
              name + "-" + i);
      t.start();
      workers.add(t);
    }
    for (Thread t : workers) {
      t.join();
    }
    Map<Integer, Long> sorted = new TreeMap<>();
    statuses.forEach((k, v) -> sorted.put(k, v.get()));
    StringBuilder s = new StringBuilder();
    sorted.forEach((k, v) -> s.append(s.length() == 0 ? "" : ",").append(k).append(':').append(v));
    System.out.println(name + ".ok=" + ok.get());
    System.out.println(name + ".failed=" + failed.get());
    System.out.println(name + ".statuses=" + s);
    System.out.println(name + ".failures=" + String.join(" | ", failures));
    System.out.println(name + ".maxMillis=" + maxNanos.get() / 1_000_000);
    System.out.println(name + ".done=1");
  }
}
