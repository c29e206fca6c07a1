package dev.retryagent.okhttp;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.EventListener;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What {@link AsyncRetrier} keeps for a call through its retry's wait (the outcome to end with, the
 * watch of its call timeout) is found at the wait's end and at the call's end whatever the maps'
 * aggregate count says: {@code ConcurrentHashMap.isEmpty()} can answer empty for a map holding the
 * call's entry while other calls' entries are put and removed meanwhile ({@link UndercountingMap}
 * answers so once, deterministically; the same for the attempts: {@link ManagedAttemptsTest}).
 * Sizes are asserted with {@code hasSize}: an assertion of emptiness would ask the lying {@code
 * isEmpty()} itself.
 */
class AsyncRetrierMapsTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final AtomicInteger bodiesEnded = new AtomicInteger();
  private final UndercountingMap<EnqueuedCall, Object> giveBacks = new UndercountingMap<>();
  private final UndercountingMap<EnqueuedCall, EnqueuedCall.WaitTimeout> callTimeouts =
      new UndercountingMap<>();
  private AsyncRetrier retrier;
  private OkHttpClient client;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
    if (client != null) {
      client.dispatcher().executorService().shutdown();
      client.connectionPool().evictAll();
    }
  }

  /** The retrier over the maps above, last on a client built from {@code b}. */
  private void configure(RetryEngine engine, OkHttpClient.Builder b) {
    retrier =
        new AsyncRetrier(engine, Call::enqueue, new ManagedAttempts(), giveBacks, callTimeouts);
    client =
        b.eventListener(
                new EventListener() {
                  @Override
                  public void responseBodyEnd(Call call, long byteCount) {
                    bodiesEnded.incrementAndGet();
                  }
                })
            .addInterceptor(retrier.interceptor())
            .build();
  }

  /** One permit, never refilled, no wait for one: a retry is refused its permit. */
  private void configureOnePermit() {
    configure(TestEngines.rateLimitedTo(1, time, events), new OkHttpClient.Builder());
  }

  /** A 503's body longer than a copy takes (8 KiB): the 503 is kept unreleased through the wait. */
  private static String largeBody() {
    StringBuilder page = new StringBuilder();
    while (page.length() < 20_000) {
      page.append("busy, come back later. ");
    }
    return page.toString();
  }

  private Request get(String path) {
    return new Request.Builder().url(server.url(path)).build();
  }

  /** The callback's one report. */
  private static final class Heard implements Callback {
    final CompletableFuture<String> outcome = new CompletableFuture<>();
    final AtomicInteger reports = new AtomicInteger();

    @Override
    public void onFailure(Call call, IOException e) {
      reports.incrementAndGet();
      outcome.complete(e.getClass().getName() + ": " + e.getMessage());
    }

    @Override
    public void onResponse(Call call, Response response) throws IOException {
      reports.incrementAndGet();
      try (Response r = response) {
        outcome.complete(r.code() + " " + r.body().string());
      }
    }

    String await() throws Exception {
      return outcome.get(10, TimeUnit.SECONDS);
    }
  }

  /**
   * Before, the wait's end asked the map's {@code isEmpty()} first; answered empty, it went on
   * without the 503 kept through the wait, and the retry the rate limit refused ended with the
   * limit's exception in onFailure, where without the agent onResponse gets the 503.
   */
  @Test
  void aRetryTheRateLimitRefusesEndsWithThe503KeptWhileTheMapsCountReadsEmpty() throws Exception {
    configureOnePermit();
    String page = largeBody();
    server.enqueue(status(503).body(page), ok("never"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/v1/items")), heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1); // the backoff
    assertThat(giveBacks).as("the 503 kept through the wait").hasSize(1);

    giveBacks.readsEmpty.set(1);
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("503 " + page);
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("the retry not made").isEqualTo(1);
    assertThat(giveBacks).hasSize(0);
  }

  /**
   * Before, the call's end asked the map's {@code isEmpty()} first; answered empty, the 503 kept
   * through the wait of a call cancelled meanwhile stayed in the map, unreleased: its connection
   * was never given back, and the call was held for good.
   */
  @Test
  void aCancelDuringTheWaitReleasesThe503KeptWhileTheMapsCountReadsEmpty() throws Exception {
    configureOnePermit();
    server.enqueue(status(503).body(largeBody()), ok("never"));
    time.holdTasks();
    Call call = client.newCall(get("/v1/items"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1); // the backoff
    assertThat(bodiesEnded).as("kept through the wait").hasValue(0);

    giveBacks.readsEmpty.set(1);
    call.cancel();
    retrier.cancel(call);
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.reports).hasValue(1);
    // Taken as the call ended, before the callback heard of it.
    assertThat(giveBacks).as("what the call kept for its wait").hasSize(0);
    await().atMost(Duration.ofSeconds(10)).until(() -> bodiesEnded.get() == 1);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  /**
   * Before, the call's end asked the map's {@code isEmpty()} first; answered empty, the watch of a
   * retried call's call timeout stayed in the map for good, holding the call, and stayed entered on
   * okio's watchdog until the timeout.
   */
  @Test
  void aRetriedCallWithACallTimeoutStopsItsWatchWhileTheMapsCountReadsEmpty() throws Exception {
    configure(
        TestEngines.engine(time, Mode.ENFORCE, r -> r, CircuitBreakerPolicy.defaults(), events),
        new OkHttpClient.Builder().callTimeout(30, TimeUnit.SECONDS));
    server.enqueue(status(503), ok("fine"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/v1/items")), heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1); // the backoff
    assertThat(callTimeouts).as("the call timeout watched through the wait").hasSize(1);

    callTimeouts.readsEmpty.set(1);
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("200 fine");
    assertThat(heard.reports).hasValue(1);
    // Taken as the call ended, before the callback heard of it.
    assertThat(callTimeouts).as("watches of ended calls").hasSize(0);
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
  }
}
