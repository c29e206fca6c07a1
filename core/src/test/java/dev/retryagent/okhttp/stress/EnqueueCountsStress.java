package dev.retryagent.okhttp.stress;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.PathMask;
import dev.retryagent.config.Route;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.PolicyResolver;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.internal.observe.CounterSnapshot;
import dev.retryagent.internal.observe.RetryMetrics;
import dev.retryagent.okhttp.AsyncRetrier;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import org.junit.jupiter.api.Test;

/**
 * The soak's OkHttp {@code enqueue} route alone (SoakIT, ok-enqueue), wired by hand through an
 * {@link AsyncRetrier} with the soak's policy (30% 500/503/429, budget, breaker, rate limit,
 * reloads), run for a while, checking per call what the soak checks in total: one callback heard,
 * one call ended in the engine, attempts = requests the server got. Each call has its own path
 * ({@code /ok-enqueue/items/ID}), so the engine's events, the server's requests and the callback
 * are matched to it; the first call that differs stops the run with all that is known of it.
 *
 * <p>Not in the default suite (its name): {@code -Dtest=EnqueueCountsStress}, with {@code
 * -Dstress.seconds} (60), {@code stress.callers} (64), {@code stress.reloadMillis} (300, 0: none),
 * {@code stress.threshold} (the host breaker's failure rate, 70), {@code stress.ratio} (the
 * budget's, 0.1), {@code stress.perSecond}/{@code stress.burst}/{@code stress.maxWait} (the rate
 * limit's, 20000/2000/20ms), {@code stress.fail} (% of requests failed, 30), {@code
 * stress.blocking} (callers of {@code execute()} on the same client, its own route, 16), {@code
 * stress.paceMillis} (least time between the starts of one caller's calls, 10).
 */
class EnqueueCountsStress {
  private static final MediaType JSON = MediaType.parse("application/json");
  private static final String ROUTE = "ok-enqueue";
  private static final String EXECUTE_ROUTE = "ok-execute";
  private static final String ATTEMPT_HEADER = "X-Attempt";

  /** What is known of one call: the app's, the engine's and the server's side. */
  static final class CallRecord {
    final long id;
    final String shape;
    final long enqueuedNanos = System.nanoTime();
    final Queue<String> log = new ConcurrentLinkedQueue<>();
    final AtomicInteger callbacks = new AtomicInteger();
    final AtomicInteger completes = new AtomicInteger();
    final AtomicInteger attemptEvents = new AtomicInteger();
    final AtomicInteger giveUps = new AtomicInteger();
    final AtomicInteger requests = new AtomicInteger();
    final AtomicInteger firstRequests = new AtomicInteger();
    volatile long heardNanos;

    CallRecord(long id, String shape) {
      this.id = id;
      this.shape = shape;
    }

    void note(String what) {
      log.add(
          String.format(
              "%8.3fms %-28s %s",
              (System.nanoTime() - enqueuedNanos) / 1e6, Thread.currentThread().getName(), what));
    }

    String describe() {
      StringBuilder b =
          new StringBuilder("call ")
              .append(id)
              .append(" (")
              .append(shape)
              .append("): callbacks=")
              .append(callbacks)
              .append(" engine completes=")
              .append(completes)
              .append(" attempt events=")
              .append(attemptEvents)
              .append(" give-ups=")
              .append(giveUps)
              .append(" server requests=")
              .append(requests)
              .append(" (first ")
              .append(firstRequests)
              .append(")\n");
      log.forEach(l -> b.append("  ").append(l).append('\n'));
      return b.toString();
    }
  }

  private final Map<Long, CallRecord> calls = new ConcurrentHashMap<>();
  private final AtomicLong nextId = new AtomicLong();
  private final AtomicReference<String> mismatch = new AtomicReference<>();
  private final AtomicLong unknownEvents = new AtomicLong();
  private final AtomicLong heard = new AtomicLong();
  private final AtomicLong executed = new AtomicLong();
  private final AtomicLong serverRequests = new AtomicLong();
  private final AtomicLong serverFirst = new AtomicLong();
  private final AtomicLong executeRequests = new AtomicLong();
  private final AtomicLong reloads = new AtomicLong();

  private static long longProperty(String name, long def) {
    String v = System.getProperty(name);
    return v == null || v.isBlank() ? def : Long.parseLong(v);
  }

  private static String property(String name, String def) {
    String v = System.getProperty(name);
    return v == null || v.isBlank() ? def : v;
  }

  static String yaml(int variant) {
    int maxAttempts = variant == 1 ? 4 : 3;
    String openFor = variant == 2 ? "400ms" : "300ms";
    return "defaults:\n"
        + "  retry:\n"
        + "    maxAttempts: "
        + maxAttempts
        + "\n"
        + "    unsafeMethods: if-idempotency-key\n"
        + "    attemptHeader: "
        + ATTEMPT_HEADER
        + "\n"
        + "    backoff: { initial: 2ms, max: 20ms, jitter: full }\n"
        + "  budget: { ratio: "
        + property("stress.ratio", "0.1")
        + ", minPerSecond: 5, window: 10s }\n"
        + "  circuitBreaker:\n"
        + "    window: { type: count, size: 50 }\n"
        + "    minimumCalls: 20\n"
        + "    failureRateThreshold: "
        + property("stress.threshold", "70")
        + "%\n"
        + "    openFor: "
        + openFor
        + "\n"
        + "    halfOpenCalls: 3\n"
        + "  rateLimit: { enabled: true, perSecond: "
        + property("stress.perSecond", "20000")
        + ", burst: "
        + property("stress.burst", "2000")
        + ", maxWait: "
        + property("stress.maxWait", "20ms")
        + " }\n"
        + "routes:\n"
        + "  - name: "
        + ROUTE
        + "\n"
        + "    match: { paths: [\"/"
        + ROUTE
        + "/**\"] }\n"
        + "  - name: "
        + EXECUTE_ROUTE
        + "\n"
        + "    match: { paths: [\"/"
        + EXECUTE_ROUTE
        + "/**\"] }\n";
  }

  /** The agent's own resolver (AgentRuntime.Routes), over a parsed configuration. */
  static final class Routes implements PolicyResolver {
    private final AgentConfig config;

    Routes(AgentConfig config) {
      this.config = config;
    }

    @Override
    public Policy resolve(String method, String host, int port, String path) {
      return config.resolve(method, host, port, path);
    }

    @Override
    public boolean readsPath() {
      return config.routesByPath();
    }

    @Override
    public PathMask pathMask() {
      return config.pathMask();
    }

    @Override
    public Collection<Policy> policies() {
      List<Policy> all = new ArrayList<>();
      for (Route r : config.routes()) {
        all.add(r.policy());
      }
      all.add(config.defaultPolicy());
      return all;
    }
  }

  static Routes routes(int variant) throws Exception {
    return new Routes(ConfigLoader.parse(yaml(variant), "stress.yml", Map.of()));
  }

  private CallRecord record(String path) {
    int slash = path.lastIndexOf('/');
    long id;
    try {
      id = Long.parseLong(path.substring(slash + 1));
    } catch (RuntimeException e) {
      return null;
    }
    CallRecord r = calls.get(id);
    if (r == null) {
      unknownEvents.incrementAndGet();
      fail("an event or request for call " + id + ", already checked or never made: " + path);
    }
    return r;
  }

  private void fail(String what) {
    if (mismatch.compareAndSet(null, what)) {
      System.out.println("MISMATCH " + what);
    }
  }

  /** Per call: the engine's events, by path. */
  private final RetryListener events =
      new RetryListener() {
        private void note(RetryEvent e, String what) {
          CallRecord r = record(e.path());
          if (r != null) {
            r.note(
                what
                    + " attempt="
                    + e.attempt()
                    + " outcome="
                    + e.outcomeText()
                    + (e.reason() == null ? "" : " reason=" + e.reason().label()));
          }
        }

        @Override
        public void onAttempt(RetryEvent e) {
          CallRecord r = record(e.path());
          if (r != null) {
            r.attemptEvents.incrementAndGet();
          }
          note(e, "engine ATTEMPT");
        }

        @Override
        public void onRetry(RetryEvent e) {
          note(e, "engine RETRY delay=" + e.delayNanos() / 1000 + "us");
        }

        @Override
        public void onGiveUp(RetryEvent e) {
          CallRecord r = record(e.path());
          if (r != null) {
            r.giveUps.incrementAndGet();
          }
          note(e, "engine GIVE_UP");
        }

        @Override
        public void onCallComplete(RetryEvent e) {
          CallRecord r = record(e.path());
          if (r != null) {
            r.completes.incrementAndGet();
          }
          note(e, "engine CALL_COMPLETE succeeded=" + e.succeeded());
        }

        @Override
        public void onBreakerRejected(RetryEvent e) {
          note(e, "engine BREAKER_REJECTED");
        }

        @Override
        public void onRateLimited(RetryEvent e) {
          note(e, "engine RATE_LIMITED");
        }
      };

  private void answer(HttpExchange x) throws IOException {
    try (InputStream in = x.getRequestBody()) {
      in.readAllBytes();
    }
    String attempt = x.getRequestHeaders().getFirst(ATTEMPT_HEADER);
    serverRequests.incrementAndGet();
    if ("1".equals(attempt)) {
      serverFirst.incrementAndGet();
    }
    int fail = (int) longProperty("stress.fail", 30);
    int roll = ThreadLocalRandom.current().nextInt(100);
    if (x.getRequestURI().getPath().startsWith("/" + EXECUTE_ROUTE)) {
      serverRequests.decrementAndGet(); // counted apart: the totals are the enqueue route's
      executeRequests.incrementAndGet();
      if ("1".equals(attempt)) {
        serverFirst.decrementAndGet();
      }
    }
    int status =
        roll < fail * 20 / 30 ? 503 : roll < fail * 27 / 30 ? 500 : roll < fail ? 429 : 200;
    CallRecord r = record(x.getRequestURI().getPath());
    if (r != null) {
      r.requests.incrementAndGet();
      if ("1".equals(attempt)) {
        r.firstRequests.incrementAndGet();
      }
      r.note("server got " + ATTEMPT_HEADER + "=" + attempt + ", sends " + status);
    }
    byte[] body = (status == 200 ? "ok" : "no").getBytes(StandardCharsets.UTF_8);
    x.sendResponseHeaders(status, body.length);
    try (OutputStream out = x.getResponseBody()) {
      out.write(body);
    }
  }

  private static ExecutorService fixedPool(String prefix, int threads) {
    AtomicInteger n = new AtomicInteger();
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            threads,
            threads,
            0,
            TimeUnit.MILLISECONDS,
            new LinkedBlockingQueue<>(),
            r -> {
              Thread t = new Thread(r, prefix + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    pool.prestartAllCoreThreads();
    return pool;
  }

  @Test
  void everyEnqueuedCallIsCountedOnceAndEachAttemptReachesTheServer() throws Exception {
    long seconds = longProperty("stress.seconds", 60);
    int callers = (int) longProperty("stress.callers", 64);
    long reloadMillis = longProperty("stress.reloadMillis", 300);
    long paceNanos = TimeUnit.MILLISECONDS.toNanos(longProperty("stress.paceMillis", 10));
    int blocking = (int) longProperty("stress.blocking", 16);

    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
    http.createContext(
        "/",
        x -> {
          try {
            answer(x);
          } finally {
            x.close();
          }
        });
    ExecutorService serverPool = fixedPool("stress-server-", 32);
    http.setExecutor(serverPool);
    http.start();
    String base = "http://127.0.0.1:" + http.getAddress().getPort();

    RetryMetrics metrics = new RetryMetrics();
    RetryEngine engine =
        RetryEngine.builder()
            .mode(Mode.ENFORCE)
            .policies(routes(0))
            .listener(metrics)
            .listener(events)
            .errors(line -> fail("engine error: " + line))
            .build();
    AsyncRetrier retrier = new AsyncRetrier(engine);
    Dispatcher dispatcher = new Dispatcher(fixedPool("stress-okhttp-dispatcher-", 64));
    dispatcher.setMaxRequests(256);
    dispatcher.setMaxRequestsPerHost(256);
    OkHttpClient client =
        new OkHttpClient.Builder()
            .dispatcher(dispatcher)
            .readTimeout(30, TimeUnit.SECONDS)
            .addInterceptor(retrier.interceptor())
            .addNetworkInterceptor(retrier.interceptor().networkInterceptor())
            .build();

    ScheduledExecutorService next = Executors.newScheduledThreadPool(2);
    ScheduledExecutorService chores = Executors.newScheduledThreadPool(2);
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    CountDownLatch finished = new CountDownLatch(callers);
    if (reloadMillis > 0) {
      AtomicInteger variant = new AtomicInteger();
      chores.scheduleAtFixedRate(
          () -> {
            try {
              engine.reconfigure(Mode.ENFORCE, routes(variant.incrementAndGet() % 3));
              reloads.incrementAndGet();
            } catch (Exception e) {
              fail("reload: " + e);
            }
          },
          reloadMillis,
          reloadMillis,
          TimeUnit.MILLISECONDS);
    }
    chores.scheduleAtFixedRate(this::check, 500, 500, TimeUnit.MILLISECONDS);

    class Caller {
      void callInTurn() {
        if (System.nanoTime() - end >= 0 || mismatch.get() != null) {
          finished.countDown();
          return;
        }
        long started = System.nanoTime();
        long id = nextId.incrementAndGet();
        int roll = ThreadLocalRandom.current().nextInt(100);
        Request.Builder b = new Request.Builder().url(base + "/" + ROUTE + "/items/" + id);
        String shape;
        if (roll < 60) {
          shape = "GET";
          b.get();
        } else if (roll < 85) {
          String key = UUID.randomUUID().toString();
          shape = "POST keyed";
          b.header("Idempotency-Key", key)
              .post(RequestBody.create(JSON, "{\"key\":\"" + key + "\"}"));
        } else {
          shape = "POST";
          b.post(RequestBody.create(JSON, "{\"key\":null}"));
        }
        CallRecord r = new CallRecord(id, shape);
        calls.put(id, r);
        r.note("app enqueue");
        Call call = client.newCall(b.build());
        try {
          retrier.enqueue(
              call,
              new Callback() {
                @Override
                public void onFailure(Call c, IOException e) {
                  heard(r, "failure " + e);
                }

                @Override
                public void onResponse(Call c, Response response) throws IOException {
                  try (response) {
                    response.body().string();
                    heard(r, "response " + response.code());
                  }
                }
              },
              dispatcher);
        } catch (RuntimeException e) {
          heard(r, "thrown " + e);
        }
      }

      void heard(CallRecord r, String what) {
        r.note("app heard " + what);
        r.heardNanos = System.nanoTime();
        if (r.callbacks.incrementAndGet() == 1) {
          heard.incrementAndGet();
          long started = r.enqueuedNanos;
          next.schedule(
              this::callInTurn, started + paceNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
        } else {
          fail("a second callback\n" + r.describe());
        }
      }
    }
    for (int i = 0; i < callers; i++) {
      new Caller().callInTurn();
    }
    // The soak's ok-execute callers: the same client, interceptor and host state, blocking.
    ExecutorService blockingPool = Executors.newFixedThreadPool(Math.max(1, blocking));
    for (int i = 0; i < blocking; i++) {
      blockingPool.execute(
          () -> {
            while (System.nanoTime() - end < 0 && mismatch.get() == null) {
              long started = System.nanoTime();
              long id = nextId.incrementAndGet();
              CallRecord r = new CallRecord(id, "execute GET");
              calls.put(id, r);
              r.note("app execute");
              Request request =
                  new Request.Builder().url(base + "/" + EXECUTE_ROUTE + "/items/" + id).build();
              try (Response response = client.newCall(request).execute()) {
                response.body().string();
                r.note("app got " + response.code());
              } catch (IOException e) {
                r.note("app got " + e);
              }
              r.heardNanos = System.nanoTime();
              r.callbacks.incrementAndGet();
              executed.incrementAndGet();
              long left = started + paceNanos - System.nanoTime();
              if (left > 0) {
                try {
                  TimeUnit.NANOSECONDS.sleep(left);
                } catch (InterruptedException e) {
                  return;
                }
              }
            }
          });
    }
    blockingPool.shutdown();
    boolean allDone = finished.await(seconds + 60, TimeUnit.SECONDS);
    blockingPool.awaitTermination(60, TimeUnit.SECONDS);
    // Let the last events arrive, then check every call left.
    Thread.sleep(1500);
    chores.shutdownNow();
    chores.awaitTermination(10, TimeUnit.SECONDS);
    check();
    CounterSnapshot counters = CounterSnapshot.ZERO;
    for (RetryMetrics.Series s : metrics.series()) {
      if (s.route().equals(ROUTE)) {
        counters = counters.plus(s.counters());
      }
    }
    StringBuilder give = new StringBuilder();
    for (GiveUpReason reason : GiveUpReason.values()) {
      if (counters.giveUps(reason) > 0) {
        give.append(' ').append(reason.label()).append('=').append(counters.giveUps(reason));
      }
    }
    String summary =
        String.format(
            "stress: %d calls made, %d heard; engine calls=%d attempts=%d retries=%d succeeded=%d"
                + " failed=%d gave-up=%d (%s) budget-rejections=%d breaker-opens=%d"
                + " breaker-rejections=%d rate-limit waits=%d rejections=%d; server requests=%d"
                + " first=%d; execute calls=%d requests=%d; reloads=%d; unchecked left=%d",
            nextId.get(),
            heard.get(),
            counters.calls(),
            counters.attempts(),
            counters.retries(),
            counters.succeeded(),
            counters.failed(),
            counters.giveUps(),
            give.toString().trim(),
            counters.budgetRejections(),
            counters.breakerOpens(),
            counters.breakerRejections(),
            counters.rateLimitWaits(),
            counters.rateLimitRejections(),
            serverRequests.get(),
            serverFirst.get(),
            executed.get(),
            executeRequests.get(),
            reloads.get(),
            calls.size());
    System.out.println(summary);
    next.shutdownNow();
    http.stop(0);
    serverPool.shutdownNow();
    dispatcher.executorService().shutdown();
    assertThat(mismatch.get()).as(summary).isNull();
    assertThat(allDone).as("every caller finished: " + summary).isTrue();
    assertThat(counters.calls()).as("engine calls = callbacks heard").isEqualTo(heard.get());
    // (the ok-execute route's calls are checked one by one above)
    assertThat(counters.attempts())
        .as("engine attempts = requests at the server")
        .isEqualTo(serverRequests.get());
  }

  /** Checks every call heard more than a second ago, then forgets it. */
  private void check() {
    long now = System.nanoTime();
    for (CallRecord r : calls.values()) {
      long heardAt = r.heardNanos;
      if (heardAt == 0) {
        if (now - r.enqueuedNanos > TimeUnit.SECONDS.toNanos(60)) {
          fail("never heard\n" + r.describe());
        }
        continue;
      }
      if (now - heardAt < TimeUnit.SECONDS.toNanos(1)) {
        continue;
      }
      if (r.callbacks.get() != 1
          || r.completes.get() != 1
          || r.attemptEvents.get() != r.requests.get()) {
        fail("counts differ\n" + r.describe());
      }
      calls.remove(r.id);
    }
  }
}
