package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.fleet.RedisServerProcess;
import dev.retryagent.it.apps.FleetLoadApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.Ops;
import dev.retryagent.it.harness.RecordedRequest;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

/**
 * Fleet mode end to end: several JVMs, each with the real agent jar and {@link FleetLoadApp}, one
 * real {@code redis-server} started by the test (out of the embedded-redis jar), and one loopback
 * {@link CountingServer} standing for the provider, which counts the requests by its own clock. JDK
 * 17 only: the fleet code is the same on 25, and these runs take seconds each.
 */
@Timeout(150)
class FleetIT {
  private static final long SECOND = 1_000_000_000L;
  private static final AtomicInteger PREFIXES = new AtomicInteger();

  /**
   * Permits are timed by Redis; requests arrive at the server a little later, by thread scheduling
   * in the JVMs (never earlier): a window of the server's clock may hold this many more.
   */
  private static final int JITTER = 3;

  private static RedisServerProcess redis;

  @TempDir Path dir;
  private final List<ForkedJvm.Running> jvms = new ArrayList<>();
  private final List<Integer> metricsPorts = new ArrayList<>();

  @BeforeAll
  static void startRedis() throws Exception {
    redis = RedisServerProcess.start("fleet-pw");
  }

  @AfterAll
  static void stopRedis() throws Exception {
    redis.close();
  }

  @AfterEach
  void stopJvms() {
    jvms.forEach(ForkedJvm.Running::close);
  }

  private static String url(String password) {
    return redis.url().replace("redis://", "redis://:" + password + "@");
  }

  /** Starts {@code n} JVMs of one fleet whose route {@code llm} claims the server's host. */
  private void startFleet(int n, String redisUrl, String limit) {
    startFleet(n, redisUrl, limit, SLOW_MACHINE);
  }

  /**
   * A command timeout for the tests of the limit and the pause: long enough that two shared cores
   * under load do not turn them into outage tests (the default 50 ms is for production).
   */
  private static final String SLOW_MACHINE = "1s";

  private void startFleet(int n, String redisUrl, String limit, String commandTimeout) {
    String prefix = "it-" + PREFIXES.incrementAndGet();
    for (int i = 0; i < n; i++) {
      int port = Ops.freePort();
      Path config =
          Ops.write(
              dir.resolve("jvm" + i + ".yml"),
              "agent:\n"
                  + "  metrics: { prometheus: { enabled: true, port: "
                  + port
                  + " } }\n"
                  + "fleet:\n"
                  + "  redis: { url: '"
                  + redisUrl
                  + "', commandTimeout: "
                  + commandTimeout
                  + " }\n"
                  + "  keyPrefix: "
                  + prefix
                  + "\n"
                  + "defaults:\n"
                  + "  budget: { enabled: false }\n"
                  + "  circuitBreaker: { enabled: false }\n"
                  + "routes:\n"
                  + "  - name: llm\n"
                  + "    match: { hosts: [127.0.0.1] }\n"
                  + "    retry: { maxAttempts: 3, retryAfter: { max: 5s } }\n"
                  + "    rateLimit: { enabled: true, scope: fleet, maxWait: 30s, "
                  + limit
                  + " }\n");
      ForkedJvm.Running app =
          ForkedJvm.builder(Jdks.jdk17())
              .agentArgs("config=" + config)
              .jvmArgs(Ops.FAST_AGENT)
              .jvmArgs("-Dfleet.jvm=jvm" + i, "-Xmx96m", "-XX:+UseSerialGC")
              .mainClass(FleetLoadApp.class)
              .timeout(Duration.ofSeconds(140))
              .start();
      jvms.add(app);
      metricsPorts.add(port);
    }
    for (ForkedJvm.Running app : jvms) {
      app.awaitValue("ready");
    }
  }

  private void awaitShared(boolean shared) {
    for (int i = 0; i < jvms.size(); i++) {
      int port = metricsPorts.get(i);
      try {
        await("jvm" + i + " fleet_shared " + shared)
            .atMost(Duration.ofSeconds(30))
            .until(() -> metric(port, "retryagent_fleet_shared ") == (shared ? 1 : 0));
      } catch (org.awaitility.core.ConditionTimeoutException e) {
        throw new AssertionError(
            e.getMessage() + "; metrics: " + Ops.scrape(port) + "; " + jvms.get(i).describe(), e);
      }
    }
  }

  /**
   * Every JVM makes a few calls to {@code /warm} first: a cold JVM's first send is slow (classes,
   * the connection), which would let the measured load start with a bunch. Requests to {@code
   * /warm} are left out of the counts.
   */
  private void warmUp(CountingServer server) {
    for (ForkedJvm.Running app : jvms) {
      app.send("load w " + server.uri("/warm") + " 1 300 0");
    }
    for (ForkedJvm.Running app : jvms) {
      app.awaitValue("w.done");
    }
  }

  /** The arrival times of the measured requests (not {@code /warm}). */
  private static List<Long> measured(CountingServer server) {
    List<Long> all = server.arrivalNanos();
    List<RecordedRequest> requests = server.requests();
    List<Long> out = new ArrayList<>();
    for (int i = 0; i < all.size(); i++) {
      if (!requests.get(i).target().startsWith("/warm")) {
        out.add(all.get(i));
      }
    }
    return out;
  }

  /** Every JVM runs {@code load}; returns when all are done. */
  private void load(CountingServer server, int threads, long millis, long paceMillis) {
    for (ForkedJvm.Running app : jvms) {
      app.send(
          "load l " + server.uri("/v1/chat") + " " + threads + " " + millis + " " + paceMillis);
    }
  }

  private void awaitLoad() {
    for (ForkedJvm.Running app : jvms) {
      app.awaitValue("l.done");
    }
  }

  /** The value of the Prometheus sample starting with {@code prefix}, or -1. */
  private static long metric(int port, String prefix) {
    String text = Ops.scrape(port);
    if (text == null) {
      return -1;
    }
    for (String line : text.split("\n")) {
      if (line.startsWith(prefix)) {
        return (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return -1;
  }

  private static long fleetPermits(int port, String result) {
    return metric(port, "retryagent_fleet_permits_total{route=\"llm\",result=\"" + result + "\"} ");
  }

  /** Most arrivals in any window of {@code length} nanos. */
  static int maxInAnyWindow(List<Long> times, long length) {
    List<Long> sorted = new ArrayList<>(times);
    sorted.sort(null);
    int best = 0;
    int start = 0;
    for (int end = 0; end < sorted.size(); end++) {
      while (sorted.get(end) - sorted.get(start) >= length) {
        start++;
      }
      best = Math.max(best, end - start + 1);
    }
    return best;
  }

  private void assertEveryCallSucceeded() {
    for (ForkedJvm.Running app : jvms) {
      assertThat(app.value("l.failed")).as(app.value("l.failures") + app.stderr()).isEqualTo("0");
      assertThat(app.value("l.statuses")).as(app.describe()).matches("200:\\d+");
    }
  }

  @Test
  void threeJvmsTogetherNeverExceedTheFleetLimitAndEachGetsAFairShare() throws Exception {
    try (CountingServer server = CountingServer.start()) {
      startFleet(3, url("fleet-pw"), "perSecond: 20, burst: 5");
      awaitShared(true);
      warmUp(server);
      load(server, 4, 4_000, 0);
      awaitLoad();

      assertEveryCallSucceeded();
      List<Long> arrivals = measured(server);
      long span = arrivals.get(arrivals.size() - 1) - arrivals.get(0);
      System.out.printf(
          "fleet: %d requests in %d ms, at most %d in any second, %d in any two (limit 20/s +"
              + " burst 5)%n",
          arrivals.size(),
          span / 1_000_000,
          maxInAnyWindow(arrivals, SECOND),
          maxInAnyWindow(arrivals, 2 * SECOND));
      assertThat(maxInAnyWindow(arrivals, SECOND))
          .as(histogram(arrivals, arrivals.get(0)))
          .isLessThanOrEqualTo(20 + 5 + JITTER);
      assertThat(arrivals.size()).isLessThanOrEqualTo((int) (5 + 20 * span / SECOND) + JITTER);
      assertThat(arrivals.size()).isGreaterThanOrEqualTo((int) (20 * span / SECOND) - JITTER);
      Map<String, Integer> perJvm = new HashMap<>();
      for (RecordedRequest r : server.requests()) {
        if (!r.target().startsWith("/warm")) {
          perJvm.merge(r.header("X-Jvm"), 1, Integer::sum);
        }
      }
      assertThat(perJvm).containsOnlyKeys("jvm0", "jvm1", "jvm2");
      for (int i = 0; i < 3; i++) {
        int n = perJvm.get("jvm" + i);
        assertThat((double) n / arrivals.size()).as("share of jvm" + i).isBetween(0.25, 0.42);
        // Each call took one permit of the fleet limit, counted where the metrics are.
        assertThat(fleetPermits(metricsPorts.get(i), "granted"))
            .isEqualTo(n + Long.parseLong(jvms.get(i).value("w.ok")));
        assertThat(fleetPermits(metricsPorts.get(i), "waited")).isPositive();
        assertThat(fleetPermits(metricsPorts.get(i), "fallback")).isZero();
        String stderr = jvms.get(i).stderr();
        assertThat(stderr).doesNotContain("SLF4J").doesNotContain("fleet:");
        assertThat(stderr).doesNotContain("fleet-pw");
      }
    }
  }

  @Test
  void a429SeenByOneJvmStopsEveryJvmOnTheRouteUntilRetryAfterPasses() throws Exception {
    try (CountingServer server = CountingServer.start()) {
      // 3 JVMs at about 10 calls a second each, well under the limit: no permit is reserved
      // ahead, so what stops them is the pause alone.
      startFleet(3, url("fleet-pw"), "perSecond: 100, burst: 20");
      awaitShared(true);
      warmUp(server);
      load(server, 1, 6_000, 100);
      await("every JVM sending")
          .atMost(Duration.ofSeconds(30))
          .until(() -> jvmsSeen(server.requests()) == 3);
      server.enqueue(Reply.status(429).withHeader("Retry-After", "3"));
      awaitLoad();

      assertEveryCallSucceeded();
      List<Long> arrivals = server.arrivalNanos();
      List<Reply> replies = server.replies();
      List<RecordedRequest> requests = server.requests();
      int paused = -1;
      for (int i = 0; i < replies.size(); i++) {
        if (replies.get(i).status() == 429) {
          paused = i;
        }
      }
      assertThat(paused).as("the 429 was served").isNotNegative();
      long t429 = arrivals.get(paused);
      String pausedJvm = requests.get(paused).header("X-Jvm");
      // A call granted its permit before the pause reached Redis may still arrive after the 429:
      // a few ms, more when a thread waits for a core; from then until Retry-After has passed,
      // no JVM sends anything.
      long grace = 500_000_000L;
      List<String> during = new ArrayList<>();
      long firstAfter = Long.MAX_VALUE;
      for (int i = paused + 1; i < arrivals.size(); i++) {
        long t = arrivals.get(i) - t429;
        if (t > grace && t < 3 * SECOND - 50_000_000L) {
          during.add(requests.get(i).header("X-Jvm") + "@" + t / 1_000_000 + "ms");
        }
        if (t > grace) {
          firstAfter = Math.min(firstAfter, t);
        }
      }
      assertThat(during)
          .as("requests during the pause set by " + pausedJvm + histogram(arrivals, t429))
          .isEmpty();
      assertThat(firstAfter).isLessThan(5 * SECOND);
      long pausesSet = 0;
      for (int i = 0; i < 3; i++) {
        int port = metricsPorts.get(i);
        pausesSet += metric(port, "retryagent_fleet_pauses_total{route=\"llm\",kind=\"set\"} ");
        if (!pausedJvm.equals("jvm" + i)) {
          // The JVM that got the 429 waits Retry-After before its retry: past the pause.
          assertThat(
                  metric(port, "retryagent_fleet_pauses_total{route=\"llm\",kind=\"honoured\"} "))
              .as("jvm" + i + " honoured the pause")
              .isPositive();
        }
      }
      assertThat(pausesSet).isEqualTo(1);
    }
  }

  @Test
  void redisPausedKilledRestartedAndFlushedMidRunNoCallFailsAndTheFleetLimitResumes()
      throws Exception {
    try (CountingServer server = CountingServer.start();
        Jedis admin = redis.admin()) {
      startFleet(3, url("fleet-pw"), "perSecond: 40, burst: 8", "200ms");
      awaitShared(true);
      warmUp(server);
      load(server, 2, 13_000, 0);
      await("every JVM sending")
          .atMost(Duration.ofSeconds(30))
          .until(() -> jvmsSeen(server.requests()) == 3);
      // The test's own timeline from here: the moments of the outages, not waits for results.
      long start = System.nanoTime();
      sleepUntil(start, 1_000);
      admin.clientPause(1_500);
      sleepUntil(start, 4_000);
      redis.kill();
      sleepUntil(start, 5_500);
      redis.restart();
      try (Jedis again = redis.admin()) {
        sleepUntil(start, 6_500);
        again.scriptFlush();
      }
      awaitLoad();

      assertEveryCallSucceeded();
      List<Long> arrivals = measured(server);
      int whileKilled = 0;
      List<Long> lastSeconds = new ArrayList<>();
      for (long t : arrivals) {
        long at = t - start;
        if (at > 4_200_000_000L && at < 5_400_000_000L) {
          whileKilled++;
        }
        if (at > 7_000_000_000L) {
          lastSeconds.add(t);
        }
      }
      // Redis down: the calls went on, each JVM at its 25% share (10/s, burst 2).
      String timeline = histogram(arrivals, start);
      assertThat(whileKilled).as(timeline).isPositive().isLessThanOrEqualTo(3 * (12 + 2) + JITTER);
      // Redis back: one fleet limit again.
      assertThat(maxInAnyWindow(lastSeconds, 2 * SECOND))
          .as(timeline)
          .isLessThanOrEqualTo(8 + 2 * 40 + JITTER);
      awaitShared(true);
      for (int i = 0; i < 3; i++) {
        ForkedJvm.Running app = jvms.get(i);
        assertThat(fleetPermits(metricsPorts.get(i), "fallback")).isPositive();
        assertThat(Long.parseLong(app.value("l.maxMillis"))).isLessThan(3_000);
        String stderr = app.stderr();
        // Two outages at least (a slow moment of a loaded machine may add one), each said once
        // when it starts and once when it ends.
        int outages = ForkedJvm.Running.count(stderr, "is unreachable");
        assertThat(outages).as(stderr).isGreaterThanOrEqualTo(2);
        assertThat(ForkedJvm.Running.count(stderr, "answers again")).as(stderr).isEqualTo(outages);
        assertThat(stderr).doesNotContain("fleet-pw").doesNotContain("SLF4J");
      }
    }
  }

  @Test
  void aWrongPasswordIsOneClearLineAndTheLocalShareDecides() throws Exception {
    try (CountingServer server = CountingServer.start()) {
      startFleet(1, url("not-the-password"), "perSecond: 8, burst: 2");
      ForkedJvm.Running app = jvms.get(0);
      app.awaitStderrCount("refused the credentials", 1);
      load(server, 2, 2_000, 0);
      awaitLoad();

      assertEveryCallSucceeded();
      // 25% of 8/s with a burst of at least 1: about 2 a second, locally.
      assertThat(server.requestCount()).isBetween(2, 2 + 2 * 2 + JITTER);
      assertThat(app.stderr())
          .contains("check the user and password in fleet.redis.url")
          .doesNotContain("not-the-password");
      assertThat(ForkedJvm.Running.count(app.stderr(), "refused the credentials")).isEqualTo(1);
      assertThat(fleetPermits(metricsPorts.get(0), "fallback")).isEqualTo(server.requestCount());
      assertThat(metric(metricsPorts.get(0), "retryagent_fleet_shared ")).isZero();
    }
  }

  private static int jvmsSeen(List<RecordedRequest> requests) {
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (RecordedRequest r : requests) {
      if (!r.target().startsWith("/warm")) {
        seen.add(r.header("X-Jvm"));
      }
    }
    return seen.size();
  }

  /** Arrivals per 250 ms from {@code from}, for the messages of failed assertions. */
  private static String histogram(List<Long> arrivals, long from) {
    java.util.TreeMap<Long, Integer> buckets = new java.util.TreeMap<>();
    for (long t : arrivals) {
      buckets.merge(Math.floorDiv(t - from, 250_000_000L) * 250, 1, Integer::sum);
    }
    return " arrivals per 250ms from t0 (ms=count): " + buckets;
  }

  private static void sleepUntil(long start, long millis) throws InterruptedException {
    long left = start + millis * 1_000_000L - System.nanoTime();
    if (left > 0) {
      Thread.sleep(left / 1_000_000L, (int) (left % 1_000_000L));
    }
  }
}
