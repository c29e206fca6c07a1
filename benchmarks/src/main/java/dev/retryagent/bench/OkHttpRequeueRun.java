package dev.retryagent.bench;

import com.sun.net.httpserver.HttpServer;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.okhttp.AsyncRetrier;
import dev.retryagent.okhttp.RetryInterceptor;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * A whole-process measurement (not JMH: the effect is seconds, not nanoseconds) of what an {@code
 * enqueue}d call waiting between retries does to other calls to the same host, with OkHttp's
 * default {@code maxRequestsPerHost} of 5.
 *
 * <p>Five "flaky" calls are enqueued first; the server answers each one's first request {@code 503}
 * with {@code Retry-After: 1}, its second {@code 200}. Then twenty "fast" calls to the same host
 * are enqueued; the server answers them {@code 200} at once. Printed: how long the fast calls took
 * (median and slowest, from their enqueue to their callback) and when the last flaky call ended,
 * for two wirings of the same engine:
 *
 * <ul>
 *   <li>{@code no-flaky}: the fast calls alone, for reference.
 *   <li>{@code requeue}: {@link AsyncRetrier} (what the agent does): the wait happens on the
 *       engine's scheduler, the dispatcher slot is free meanwhile.
 *   <li>{@code in-interceptor}: {@link RetryInterceptor} alone with {@code call.enqueue}: the wait
 *       happens inside the interceptor, on the dispatcher thread, holding the host's slot.
 * </ul>
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar dev.retryagent.bench.OkHttpRequeueRun
 * [rounds]}.
 */
public final class OkHttpRequeueRun {
  private static final int FLAKY = 5;
  private static final int FAST = 20;

  private OkHttpRequeueRun() {}

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    Set<String> seen = ConcurrentHashMap.newKeySet();
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
    server.setExecutor(Executors.newCachedThreadPool());
    server.createContext(
        "/",
        exchange -> {
          String path = exchange.getRequestURI().getPath();
          boolean first = path.startsWith("/flaky/") && seen.add(path);
          if (first) {
            exchange.getResponseHeaders().add("Retry-After", "1");
          }
          byte[] body = (first ? "busy" : "ok").getBytes();
          exchange.sendResponseHeaders(first ? 503 : 200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });
    server.start();
    String base = "http://127.0.0.1:" + server.getAddress().getPort();
    try {
      for (int round = 1; round <= rounds; round++) {
        for (String wiring : List.of("no-flaky", "requeue", "in-interceptor")) {
          System.out.println("round " + round + " " + run(wiring, base + "/" + wiring + round));
        }
      }
    } finally {
      server.stop(0);
      ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdownNow();
    }
  }

  private static String run(String wiring, String base) throws Exception {
    RetryEngine engine = RetryEngine.builder().build();
    AsyncRetrier retrier = new AsyncRetrier(engine);
    Dispatcher dispatcher = new Dispatcher();
    dispatcher.setMaxRequestsPerHost(5);
    boolean requeue = wiring.equals("requeue");
    OkHttpClient client =
        new OkHttpClient.Builder()
            .dispatcher(dispatcher)
            .addInterceptor(requeue ? retrier.interceptor() : new RetryInterceptor(engine))
            .build();
    int flaky = wiring.equals("no-flaky") ? 0 : FLAKY;
    CountDownLatch done = new CountDownLatch(flaky + FAST);
    List<Long> fastMillis = Collections.synchronizedList(new ArrayList<>());
    long[] flakyEnd = new long[1];
    long start = System.nanoTime();
    for (int i = 0; i < flaky; i++) {
      enqueue(
          client,
          retrier,
          requeue,
          base.replace("/" + wiring, "/flaky/" + wiring) + "-" + i,
          start,
          done,
          null,
          flakyEnd);
    }
    Thread.sleep(100); // the flaky calls have had their 503 and wait for their retry
    for (int i = 0; i < FAST; i++) {
      enqueue(
          client, retrier, requeue, base + "/fast-" + i, System.nanoTime(), done, fastMillis, null);
    }
    if (!done.await(30, TimeUnit.SECONDS)) {
      throw new IllegalStateException("calls did not finish");
    }
    dispatcher.executorService().shutdown();
    client.connectionPool().evictAll();
    List<Long> sorted = new ArrayList<>(fastMillis);
    Collections.sort(sorted);
    return String.format(
        "%-14s fast calls: median %4d ms, slowest %4d ms; last flaky call done at %4d ms",
        wiring,
        sorted.get(sorted.size() / 2),
        sorted.get(sorted.size() - 1),
        flaky == 0 ? 0 : TimeUnit.NANOSECONDS.toMillis(flakyEnd[0] - start));
  }

  private static void enqueue(
      OkHttpClient client,
      AsyncRetrier retrier,
      boolean requeue,
      String url,
      long enqueuedAt,
      CountDownLatch done,
      List<Long> millis,
      long[] lastEnd) {
    Call call = client.newCall(new Request.Builder().url(url).build());
    Callback callback =
        new Callback() {
          @Override
          public void onFailure(Call c, IOException e) {
            e.printStackTrace();
            finish();
          }

          @Override
          public void onResponse(Call c, Response response) {
            response.close();
            finish();
          }

          private void finish() {
            long now = System.nanoTime();
            if (millis != null) {
              millis.add(TimeUnit.NANOSECONDS.toMillis(now - enqueuedAt));
            }
            if (lastEnd != null) {
              synchronized (lastEnd) {
                lastEnd[0] = Math.max(lastEnd[0], now);
              }
            }
            done.countDown();
          }
        };
    if (requeue) {
      retrier.enqueue(call, callback);
    } else {
      call.enqueue(callback);
    }
  }
}
