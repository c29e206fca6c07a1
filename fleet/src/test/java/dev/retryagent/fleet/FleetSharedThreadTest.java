package dev.retryagent.fleet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.engine.AsyncRetryLoop;
import dev.retryagent.engine.Clock;
import dev.retryagent.engine.FleetLimits;
import dev.retryagent.engine.FleetRouteCounters;
import dev.retryagent.engine.PermitLimiter;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.RateLimitPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A fleet retry's ask for a permit on the engine's scheduler, whose two threads run every
 * asynchronous call's due retries in the JVM: with Redis stalled, it takes an idle connection or
 * none, so the due retries of other calls are not held behind it (a connect, a wait for a
 * connection another call holds, each up to a timeout).
 */
@Timeout(60)
class FleetSharedThreadTest {
  private static final long BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

  private final TestFleet.Lines log = new TestFleet.Lines();
  private final CountDownLatch unstall = new CountDownLatch(1);
  private final List<Thread> threads = new ArrayList<>();
  private FakeRedis redis;
  private FleetConnection fleet;

  @AfterEach
  void tearDown() throws Exception {
    unstall.countDown();
    for (Thread t : threads) {
      t.join(10_000);
    }
    if (fleet != null) {
      fleet.close();
    }
    if (redis != null) {
      redis.close();
    }
  }

  /**
   * @param maxConnections 2: every connection is held by the stalled calls (the fleet retries
   *     waited for one); 16: none is idle (they opened one each)
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 16})
  void withRedisStalledAFleetRetryOnTheSchedulerDoesNotDelayAnotherCallsDueRetry(int maxConnections)
      throws Exception {
    redis = new FakeRedis();
    // Every script answered as Redis would grant a permit at once (the heartbeat reads the first).
    redis.scriptReply = sha -> "*4\r\n:1\r\n:0\r\n:0\r\n:0\r\n";
    AtomicInteger stalled = new AtomicInteger();
    AtomicBoolean stalling = new AtomicBoolean();
    redis.onCommand =
        command -> {
          if (command.get(0).equalsIgnoreCase("EVALSHA")
              && command.get(1).equals(Scripts.ACQUIRE.sha1)
              && stalling.get()) {
            stalled.incrementAndGet();
            TestFleet.holdUntil(unstall); // Redis stalls: no answer until the test ends
          }
        };
    Duration commandTimeout = Duration.ofSeconds(5);
    fleet =
        TestFleet.startUp(
            TestFleet.settings(redis.url())
                .commandTimeout(commandTimeout)
                .maxConnections(maxConnections)
                // No heartbeat during the test: its connection, put back idle, would be one more.
                .heartbeatInterval(Duration.ofMinutes(1))
                .build(),
            Clock.SYSTEM,
            log);
    AgentConfig config =
        ConfigLoader.parse(
            String.join(
                "\n",
                "fleet:",
                "  redis: { url: '" + redis.url() + "' }",
                "defaults:",
                "  retry: { maxAttempts: 2, backoff: { initial: 200ms, jitter: none } }",
                "routes:",
                "  - name: llm",
                "    match: { hosts: [llm.example] }",
                "    rateLimit: { enabled: true, scope: fleet, perSecond: 1000, burst: 100 }",
                "  - name: other",
                "    match: { hosts: [other.example] }"),
            "shared-thread.yml",
            Map.of());
    RetryEngine engine =
        RetryEngine.builder().policies((m, h, p, path) -> config.resolve(m, h, p, path)).build();
    engine.useFleet(new Limits(fleet));

    // Two fleet calls and another call, each in its first attempt (the fleet's permits granted
    // while Redis answered).
    Call llm1 = new Call(engine, "llm.example");
    Call llm2 = new Call(engine, "llm.example");
    Call other = new Call(engine, "other.example");
    await()
        .atMost(TestFleet.UP_TIMEOUT)
        .until(
            () -> llm1.starts.size() == 1 && llm2.starts.size() == 1 && other.starts.size() == 1);

    // Redis stalls; two blocking calls of the application wait on the two idle connections.
    stalling.set(true);
    for (int i = 0; i < 2; i++) {
      Thread t =
          new Thread(
              () -> {
                try {
                  engine.newCall(get("llm.example")).reservePermit();
                } catch (Exception e) {
                  // the outcome is not what this test looks at
                }
              },
              "application-call-" + i);
      t.setDaemon(true);
      t.start();
      threads.add(t);
    }
    await().atMost(TestFleet.UP_TIMEOUT).until(() -> stalled.get() == 2);

    // Each first attempt fails with a 503: three retries due in turn, the fleet ones first, on the
    // scheduler's two threads.
    llm1.respond(503);
    llm2.respond(503);
    long otherFailed = System.nanoTime();
    other.respond(503);

    await().atMost(TestFleet.UP_TIMEOUT).until(() -> other.starts.size() == 2);
    long late = other.starts.get(1) - otherFailed - BACKOFF_NANOS;
    // Held behind the fleet retries' connects and round trips, it came a commandTimeout late
    // (5 s); not held, it comes when due, give or take the machine's stalls.
    assertThat(TimeUnit.NANOSECONDS.toMillis(late))
        .as("ms the other call's retry came after it was due")
        .isLessThan(commandTimeout.toMillis() / 3);
    // The fleet retries were not held either: they went on at the local share.
    await()
        .atMost(TestFleet.UP_TIMEOUT)
        .until(() -> llm1.starts.size() == 2 && llm2.starts.size() == 2);
  }

  @Test
  void anAskThatMustNotBlockFindingNoIdleConnectionDecidesLocallyAndTheFleetsThreadOpensOne()
      throws Exception {
    redis = new FakeRedis();
    redis.scriptReply = sha -> "*4\r\n:1\r\n:0\r\n:0\r\n:0\r\n";
    AtomicInteger stalled = new AtomicInteger();
    AtomicBoolean stalling = new AtomicBoolean();
    redis.onCommand =
        command -> {
          if (command.get(0).equalsIgnoreCase("EVALSHA")
              && command.get(1).equals(Scripts.ACQUIRE.sha1)
              && stalling.get()) {
            stalled.incrementAndGet();
            TestFleet.holdUntil(unstall);
          }
        };
    Duration commandTimeout = Duration.ofSeconds(5);
    fleet =
        TestFleet.startUp(
            TestFleet.settings(redis.url())
                .commandTimeout(commandTimeout)
                .heartbeatInterval(Duration.ofMinutes(1))
                .build(),
            Clock.SYSTEM,
            log);
    FleetRateLimiter limiter =
        fleet.limiter("llm", TestFleet.limit(1000, 100), Duration.ofSeconds(1));
    long s = 1_000_000_000L;
    // The two idle connections taken by calls that may block, which Redis holds.
    stalling.set(true);
    for (int i = 0; i < 2; i++) {
      Thread t =
          new Thread(() -> limiter.reserve(System.nanoTime(), s, 10 * s), "application-" + i);
      t.setDaemon(true);
      t.start();
      threads.add(t);
    }
    await().atMost(TestFleet.UP_TIMEOUT).until(() -> stalled.get() == 2);
    long connections = redis.received.stream().filter("CLIENT"::equals).count();

    long asked = System.nanoTime();
    long wait = limiter.reserve(System.nanoTime(), s, 10 * s, false);
    long took = System.nanoTime() - asked;

    assertThat(wait).isZero(); // the local share's permit
    assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
    assertThat(TimeUnit.NANOSECONDS.toMillis(took)).isLessThan(commandTimeout.toMillis() / 3);
    // The fleet's thread opens the connection it lacked: the next such ask is Redis's again.
    await()
        .atMost(TestFleet.UP_TIMEOUT)
        .until(() -> redis.received.stream().filter("CLIENT"::equals).count() > connections);
    stalling.set(false);
    assertThat(limiter.reserve(System.nanoTime(), s, 10 * s, false)).isZero();
    assertThat(limiter.metrics().fallbacks()).isEqualTo(1);
  }

  /** One asynchronous call whose attempts the test answers. */
  private static final class Call {
    final List<Long> starts = new CopyOnWriteArrayList<>();
    final List<CompletableFuture<Integer>> attempts = new CopyOnWriteArrayList<>();

    Call(RetryEngine engine, String host) {
      AsyncRetryLoop.execute(
          engine,
          engine.newCall(get(host)),
          (n, timeout) -> {
            starts.add(System.nanoTime());
            CompletableFuture<Integer> f = new CompletableFuture<>();
            if (n > 1) {
              f.complete(200); // the retry succeeds at once
            }
            attempts.add(f);
            return f;
          },
          STATUS);
    }

    void respond(int status) {
      attempts.get(0).complete(status);
    }
  }

  private static final ResponseAccess<Integer> STATUS =
      new ResponseAccess<Integer>() {
        @Override
        public int status(Integer response) {
          return response;
        }

        @Override
        public String header(Integer response, String name) {
          return null;
        }

        @Override
        public void discard(Integer response) {}
      };

  /** The fleet as the engine sees it (FleetMode, on a connection of the test's settings). */
  private static final class Limits implements FleetLimits {
    private final FleetConnection connection;

    Limits(FleetConnection connection) {
      this.connection = connection;
    }

    @Override
    public PermitLimiter limiter(String route, RateLimitPolicy limit, Duration retryAfterMax) {
      return connection.limiter(route, limit, retryAfterMax);
    }

    @Override
    public List<FleetRouteCounters> counters() {
      return Collections.emptyList();
    }

    @Override
    public boolean shared() {
      return connection.isShared();
    }
  }

  private static RequestInfo get(String host) {
    return new RequestInfo() {
      @Override
      public String method() {
        return "GET";
      }

      @Override
      public String scheme() {
        return "http";
      }

      @Override
      public String host() {
        return host;
      }

      @Override
      public int port() {
        return 80;
      }

      @Override
      public String path() {
        return "/";
      }

      @Override
      public String header(String name) {
        return null;
      }

      @Override
      public boolean bodyReplayable() {
        return true;
      }
    };
  }
}
