package dev.retryagent.okhttp;

import static dev.retryagent.testing.ScriptedHttpServer.Action.closeWithoutResponse;
import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.reset;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retryagent.engine.CircuitBreakerOpenException;
import dev.retryagent.engine.CircuitState;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RateLimitedException;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.Sleeper;
import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Jitter;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.EventTypes;
import dev.retryagent.testing.FakeRequest;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.ScriptedHttpServer.Action;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.lang.ref.WeakReference;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import okhttp3.Cache;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.EventListener;
import okhttp3.HttpUrl;
import okhttp3.Interceptor;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What an application sees of an enqueued call whose retries an {@link AsyncRetrier} runs, beyond
 * the scenarios every way shares ({@link RetryInterceptorTest}): where and how it hears of a
 * cancel, what its callback throws, the key its interceptors add, OkHttp's own resends (issue 11).
 */
class AsyncRetrierTest {
  private static final MediaType JSON = MediaType.parse("application/json");

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private RetryEngine engine;
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

  /** The retrier's interceptor last, as the agent puts it, after {@code before}. */
  private void configure(
      UnaryOperator<RetryPolicy.Builder> retry, OkHttpClient.Builder before, boolean resends) {
    configure(retry, before, resends, CircuitBreakerPolicy.defaults());
  }

  private void configure(
      UnaryOperator<RetryPolicy.Builder> retry,
      OkHttpClient.Builder before,
      boolean resends,
      CircuitBreakerPolicy breaker) {
    configure(retry, before, resends, Policy.defaults().budget(), breaker);
  }

  private void configure(
      UnaryOperator<RetryPolicy.Builder> retry,
      OkHttpClient.Builder before,
      boolean resends,
      BudgetPolicy budget,
      CircuitBreakerPolicy breaker) {
    engine = TestEngines.engine(time, Mode.ENFORCE, retry, budget, breaker, events);
    retrier = new AsyncRetrier(engine);
    OkHttpClient.Builder b = before.addInterceptor(retrier.interceptor());
    if (resends) {
      b.addNetworkInterceptor(retrier.interceptor().networkInterceptor());
    }
    client = b.build();
  }

  /** One permit a second, a burst of one, a caller waits up to 5 s for its permit. */
  private void configureRateLimited() {
    configureRateLimited(onePermitASecond());
  }

  private static RateLimitPolicy onePermitASecond() {
    return RateLimitPolicy.builder()
        .enabled(true)
        .perSecond(1)
        .burst(1)
        .maxWait(Duration.ofSeconds(5))
        .build();
  }

  /**
   * The fake time's sleeper, which first runs, once, what {@code duringTheWait} holds as a wait
   * begins: something that happens meanwhile (a cancel, another call's 429).
   */
  private Sleeper runningFirst(AtomicReference<Runnable> duringTheWait) {
    return nanos -> {
      Runnable r = duringTheWait.getAndSet(null);
      if (r != null) {
        r.run();
      }
      time.sleep(nanos);
    };
  }

  private void configureRateLimited(RateLimitPolicy rateLimit) {
    configureRateLimited(rateLimit, time);
  }

  private void configureRateLimited(RateLimitPolicy rateLimit, Sleeper sleeper) {
    configureRateLimited(rateLimit, sleeper, new OkHttpClient.Builder());
  }

  /** The retrier's interceptor last, after {@code before}. */
  private void configureRateLimited(
      RateLimitPolicy rateLimit, Sleeper sleeper, OkHttpClient.Builder before) {
    engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(sleeper)
            .scheduler(time)
            .mode(Mode.ENFORCE)
            .policy(TestEngines.rateLimited(rateLimit))
            .build();
    retrier = new AsyncRetrier(engine);
    client = before.addInterceptor(retrier.interceptor()).build();
  }

  /** The callback's one report: the thread it came on and what it said. */
  private static final class Heard implements Callback {
    final CompletableFuture<String> outcome = new CompletableFuture<>();
    final AtomicInteger reports = new AtomicInteger();
    volatile String thread;

    @Override
    public void onFailure(Call call, IOException e) {
      reports.incrementAndGet();
      thread = Thread.currentThread().getName();
      outcome.complete(e.getClass().getName() + ": " + e.getMessage());
    }

    @Override
    public void onResponse(Call call, Response response) throws IOException {
      reports.incrementAndGet();
      thread = Thread.currentThread().getName();
      try (Response r = response) {
        outcome.complete(r.code() + " " + r.body().string());
      }
    }

    String await() throws Exception {
      return outcome.get(10, TimeUnit.SECONDS);
    }
  }

  private Request get(String path) {
    return new Request.Builder().url(server.url(path)).build();
  }

  @Test
  void aCancelDuringTheWaitIsHeardOnADispatcherThreadNeverInsideCancel() throws Exception {
    // issue 11 (B10): the callback ran inside cancel(), on the cancelling thread.
    configure(b -> b, new OkHttpClient.Builder(), false);
    server.enqueue(status(503), ok("never"));
    time.holdTasks();
    Call call = client.newCall(get("/wait"));
    Heard heard = new Heard();

    retrier.enqueue(call, heard);
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    call.cancel();
    retrier.cancel(call);
    assertThat(heard.outcome).isNotDone();
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
    // Abandoned at the attempt it reached: no attempt counted that was never sent.
    assertThat(events)
        .extracting(e -> e.type() + " " + e.attempt() + " " + e.reason())
        .containsExactly("RETRY 1 null", "GIVE_UP 1 CANCELLED");
  }

  @Test
  void aRetryWhoseWaitTheSchedulerRefusesEndsWithTheAttemptsOutcomeWithoutRetryingAtOnce()
      throws Exception {
    // A pool that cannot start a thread (the JVM out of them), or a scheduler shut down, throws
    // from schedule(). The retry went at once, without its backoff, and so did each retry after
    // it: a failing host got maxAttempts requests back to back. Without the agent the callback
    // has the attempt's outcome; it gets it, once, and the retry goes back to the budget.
    configureWithOneRetryASecond(new OkHttpClient.Builder());
    server.enqueue(status(503), closeWithoutResponse(), status(503), ok("retried"));
    time.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));
    Heard answered = new Heard();
    retrier.enqueue(client.newCall(get("/refused")), answered, client.dispatcher());
    assertThat(answered.await()).isEqualTo("503 status 503");
    assertThat(answered.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(1);

    client.connectionPool().evictAll(); // a fresh connection: OkHttp does not resend on its own
    Heard failed = new Heard();
    retrier.enqueue(client.newCall(get("/refused")), failed, client.dispatcher());
    assertThat(failed.await()).startsWith("java.io.");
    assertThat(failed.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(engine.pendingAsyncRetries()).isZero();
    assertThat(retrier.running()).isZero();

    time.refuse(null);
    time.holdTasks();
    assertTheHostsNextCallGetsTheBudgetsOneRetry(); // "200 retried"
    assertThat(server.requestCount()).isEqualTo(4);
  }

  @Test
  void aRetryTheRateLimitRefusesIsNotMadeAndTheCallbackGetsThe503AsWithoutTheAgent()
      throws Exception {
    // The first attempt takes the one token; the retry, at its backoff's end, finds none (maxWait
    // 0s). Before, the callback heard the rate limit's RateLimitedException in place of the 503.
    configureRateLimited(RateLimitPolicy.builder().enabled(true).perSecond(0.01).burst(1).build());
    server.enqueue(status(503).body("busy"), ok("never"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/limited")), heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1); // the backoff
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("503 busy");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("the retry not made").isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  /** A 503's body longer than a copy takes (8 KiB). */
  private static String largeBody() {
    StringBuilder page = new StringBuilder();
    while (page.length() < 20_000) {
      page.append("busy, come back later. ");
    }
    return page.toString();
  }

  /**
   * The engine holds {@code permits} permits, never refilled, no wait for one (maxWait 0, the
   * default); the client counts the response bodies OkHttp saw end (read or closed) in {@code
   * bodiesEnded}.
   */
  private void configureRateLimitedTo(int permits, AtomicInteger bodiesEnded) {
    engine = TestEngines.rateLimitedTo(permits, time, events);
    retrier = new AsyncRetrier(engine);
    client =
        new OkHttpClient.Builder()
            .eventListener(
                new EventListener() {
                  @Override
                  public void responseBodyEnd(Call call, long byteCount) {
                    bodiesEnded.incrementAndGet();
                  }
                })
            .addInterceptor(retrier.interceptor())
            .build();
  }

  /**
   * A retry the rate limit refuses after a 503 whose body is longer than a copy takes ends with
   * that 503 and its whole body, told to onResponse on a dispatcher thread, as without the agent:
   * kept unreleased through the retry's short wait, the retry's permit asked for before it went.
   * Before, it was released on the dispatcher before the wait, and the callback heard the rate
   * limit's exception in onFailure. So with the dispatcher known (the agent's way) and without it
   * (the 503 told through a clone's run). No permit was given back for the refused retry: the next
   * call finds the bucket empty.
   */
  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void aRetryTheRateLimitRefusesAfterA503WithALargeBodyGivesThat503ToOnResponse(
      boolean dispatcherKnown) throws Exception {
    String page = largeBody();
    AtomicInteger bodiesEnded = new AtomicInteger();
    configureRateLimitedTo(1, bodiesEnded);
    server.enqueue(status(503).body(page), ok("never"));
    Heard heard = new Heard();

    if (dispatcherKnown) {
      retrier.enqueue(client.newCall(get("/v1/items")), heard, client.dispatcher());
    } else {
      retrier.enqueue(client.newCall(get("/v1/items")), heard);
    }

    assertThat(heard.await()).isEqualTo("503 " + page);
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("the retry not made").isEqualTo(1);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.RATE_LIMITED);
    await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
    assertThat(engine.pendingAsyncRetries()).isZero();
    Heard next = new Heard();
    retrier.enqueue(client.newCall(get("/v1/items")), next, client.dispatcher());
    assertThat(next.await()).startsWith("dev.retryagent.engine.RateLimitedException");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  /**
   * The retry granted its permit: the 503 kept through the retry's wait is released before the
   * retry goes (its body ended), the retry is made and the callback hears its 200, one permit spent
   * on each attempt and none given back (the next call finds the bucket empty).
   */
  @Test
  void aRetryGrantedItsPermitAfterA503KeptThroughItsWaitReleasesThe503ThenRetries()
      throws Exception {
    AtomicInteger bodiesEnded = new AtomicInteger();
    configureRateLimitedTo(2, bodiesEnded);
    server.enqueue(status(503).body(largeBody()), ok("fine"));
    Heard heard = new Heard();

    retrier.enqueue(client.newCall(get("/v1/items")), heard, client.dispatcher());

    assertThat(heard.await()).isEqualTo("200 fine");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(server.requestCount()).isEqualTo(2);
    await().atMost(Duration.ofSeconds(10)).until(() -> bodiesEnded.get() == 2);
    Heard next = new Heard();
    retrier.enqueue(client.newCall(get("/v1/items")), next, client.dispatcher());
    assertThat(next.await()).startsWith("dev.retryagent.engine.RateLimitedException");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  /**
   * A cancel during the wait the 503 is kept through: the callback hears "Canceled" on a dispatcher
   * thread, as before, and the kept 503 is released (its body ended), not left open.
   */
  @Test
  void aCancelDuringTheWaitA503IsKeptThroughReleasesIt() throws Exception {
    AtomicInteger bodiesEnded = new AtomicInteger();
    configureRateLimitedTo(1, bodiesEnded);
    server.enqueue(status(503).body(largeBody()), ok("never"));
    time.holdTasks();
    Call call = client.newCall(get("/v1/items"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1); // the backoff
    assertThat(bodiesEnded).as("kept through the wait").hasValue(0);

    call.cancel();
    retrier.cancel(call);
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    await().atMost(Duration.ofSeconds(10)).until(() -> bodiesEnded.get() == 1);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    assertThat(retrier.running()).isZero();
  }

  @Test
  void aRetrysRateLimitWaitTheSchedulerRefusesEndsTheCallWithThe503NotOverTheLimit()
      throws Exception {
    // Before, the retry went at once, without waiting for its token: while the scheduler refused,
    // every retry went over the host's limit. The retry is not made, as one the limit gives no
    // permit, and the call ends with the 503 before it (its copy), as without the agent; before,
    // with the rate limit's exception.
    configureRateLimited(); // one a second
    server.enqueue(status(503), ok("never"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/limited")), heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1); // the backoff
    time.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));
    time.runHeldTasks(); // the backoff ends: the token is due later, and its wait is refused

    assertThat(heard.await()).isEqualTo("503 status 503");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("not over the limit").isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  @Test
  void aCancelDuringTheWaitIsHeardWhenTheSchedulerRefusesToTellIt() throws Exception {
    configure(b -> b, new OkHttpClient.Builder(), false);
    server.enqueue(status(503), ok("never"));
    time.holdTasks();
    Call call = client.newCall(get("/wait"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    time.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));

    call.cancel();
    retrier.cancel(call);

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  @Test
  void cancelAllReachesACallWaitingForItsRetry() throws Exception {
    // issue 11 (B11): the dispatcher does not hold a call that waits, so cancelAll() missed it.
    configure(b -> b, new OkHttpClient.Builder(), false);
    server.enqueue(status(503), ok("never"));
    time.holdTasks();
    Call call = client.newCall(get("/wait"));
    Heard heard = new Heard();

    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    client.dispatcher().cancelAll();
    retrier.cancelAll(client.dispatcher());
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(call.isCanceled()).isTrue();
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aCallAnsweredByACloneDoesNotKeepTheCloneOnceTheApplicationLetsGoOfTheResponse()
      throws Exception {
    // The clone was a strong value of the call's entry: it, its request and its attempt's state
    // (~1.5 KiB) lived as long as the application's call object, and after it until the map's
    // next use (issue 13, twelfth pass).
    List<WeakReference<Call>> attempts = new CopyOnWriteArrayList<>();
    configure(b -> b, recordingCalls(attempts), false);
    server.enqueue(status(503), ok("done"));
    Call call = client.newCall(get("/items"));
    Heard heard = new Heard();

    retrier.enqueue(call, heard, client.dispatcher());
    assertThat(heard.await()).isEqualTo("200 done"); // the response is closed and dropped
    assertThat(attempts).hasSize(2);
    WeakReference<Call> clone = attempts.get(1);
    assertThat(clone.get()).isNotSameAs(call);

    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () -> {
              System.gc();
              return clone.get() == null;
            });
    assertThat(call.isCanceled()).as("the call itself is still held here").isFalse();
  }

  @Test
  void whileTheApplicationHoldsAResponseFromACloneCancelStillReachesThatClone() throws Exception {
    List<WeakReference<Call>> attempts = new CopyOnWriteArrayList<>();
    configure(b -> b, recordingCalls(attempts), false);
    server.enqueue(status(503), ok("a body being read"));
    Call call = client.newCall(get("/items"));
    CompletableFuture<Response> held = new CompletableFuture<>();

    retrier.enqueue(
        call,
        new Callback() {
          @Override
          public void onFailure(Call c, IOException e) {
            held.completeExceptionally(e);
          }

          @Override
          public void onResponse(Call c, Response response) {
            held.complete(response); // kept open, as an application reading a large body
          }
        },
        client.dispatcher());
    try (Response response = held.get(10, TimeUnit.SECONDS)) {
      WeakReference<Call> clone = attempts.get(1);
      System.gc();

      assertThat(retrier.cancel(call)).isTrue();
      assertThat(clone.get()).as("held through the response").isNotNull();
      assertThat(clone.get().isCanceled()).isTrue();
      assertThat(response.code()).isEqualTo(200);
    }
  }

  /** An application interceptor that records each attempt's call, weakly. */
  private static OkHttpClient.Builder recordingCalls(List<WeakReference<Call>> calls) {
    return new OkHttpClient.Builder()
        .addInterceptor(
            chain -> {
              calls.add(new WeakReference<>(chain.call()));
              return chain.proceed(chain.request());
            });
  }

  @Test
  void anIOExceptionFromTheCallbackIsLoggedAsOkHttpLogsIt() throws Exception {
    // issue 11 (B12): it went to the thread's uncaught-exception handler instead.
    configure(b -> b, new OkHttpClient.Builder(), false);
    server.enqueue(status(503), ok("later"));
    List<String> logged = new CopyOnWriteArrayList<>();
    Logger okhttp = Logger.getLogger(OkHttpClient.class.getName());
    Handler handler =
        new Handler() {
          @Override
          public void publish(LogRecord r) {
            logged.add(r.getMessage() + " (" + r.getThrown() + ")");
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    okhttp.addHandler(handler);
    try {
      retrier.enqueue(
          client.newCall(get("/items")),
          new Callback() {
            @Override
            public void onFailure(Call call, IOException e) {}

            @Override
            public void onResponse(Call call, Response response) throws IOException {
              response.close();
              throw new IOException("the callback failed");
            }
          },
          client.dispatcher());

      await()
          .atMost(Duration.ofSeconds(10))
          .untilAsserted(
              () ->
                  assertThat(logged)
                      .singleElement()
                      .asString()
                      .startsWith("Callback failure for call to http://127.0.0.1:")
                      .endsWith("(java.io.IOException: the callback failed)"));
      assertThat(server.requestCount()).isEqualTo(2);
    } finally {
      okhttp.removeHandler(handler);
    }
  }

  @Test
  void aRetryCarriesTheKeyOfTheFirstAttemptThoughAnInterceptorMakesANewOneEachTime()
      throws Exception {
    // issue 11 (B13): the gate saw the request before the application's interceptors (no key),
    // and each retry of an enqueued call runs them again.
    AtomicInteger keys = new AtomicInteger();
    OkHttpClient.Builder app =
        new OkHttpClient.Builder()
            .addInterceptor(
                chain ->
                    chain.proceed(
                        chain
                            .request()
                            .newBuilder()
                            .header("Idempotency-Key", "k-" + keys.incrementAndGet())
                            .build()));
    configure(b -> b.unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY), app, false);
    server.enqueue(status(503), ok("charged"));
    Heard heard = new Heard();

    Call call =
        client.newCall(
            new Request.Builder()
                .url(server.url("/v1/charges"))
                .post(RequestBody.create(JSON, "{}"))
                .build());
    retrier.enqueue(call, heard, client.dispatcher());

    assertThat(heard.await()).isEqualTo("200 charged");
    assertThat(server.requests())
        .extracting(r -> r.header("Idempotency-Key"))
        .containsExactly("k-1", "k-1");
  }

  /**
   * An application interceptor that, on {@code /token}'s first attempt, runs {@code before}, notes
   * when it ran there and then spends 5 ms (a token fetched); on the retry's clone it notes the
   * clone's deadline.
   */
  private static Interceptor slowOnFirstToken(
      AtomicLong firstRan, AtomicLong cloneDeadline, Runnable before) {
    return chain -> {
      if (!chain.request().url().encodedPath().equals("/token")) {
        return chain.proceed(chain.request());
      }
      if (firstRan.get() == 0) {
        before.run();
        long ran = System.nanoTime();
        firstRan.set(ran);
        while (System.nanoTime() - ran < TimeUnit.MILLISECONDS.toNanos(5)) {
          Thread.onSpinWait(); // the token, fetched
        }
      } else {
        cloneDeadline.set(chain.call().timeout().deadlineNanoTime());
      }
      return chain.proceed(chain.request());
    };
  }

  @Test
  void aRetrysDeadlineCountsFromWhenOkHttpRanTheCallNotFromWhenItsInterceptorsLetItThrough()
      throws Exception {
    // OkHttp starts an enqueued call's callTimeout when it runs the call, ahead of the
    // application's interceptors; the clone's deadline was counted from when the first attempt
    // reached the agent's interceptor, after them: an interceptor that took long on the first
    // attempt (a token fetched) let a retried call run past its callTimeout by that long.
    AtomicLong firstRan = new AtomicLong();
    AtomicLong cloneDeadline = new AtomicLong();
    AtomicBoolean enqueueReturned = new AtomicBoolean();
    configure(
        b -> b,
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .addInterceptor(
                slowOnFirstToken(
                    firstRan,
                    cloneDeadline,
                    () -> {
                      // After enqueue() returned, when the agent has looked at the dispatcher's
                      // queue: a slow enqueuing thread (a loaded machine) lets this interceptor
                      // run first, and the start is then counted from here, as before.
                      long since = System.nanoTime();
                      while (!enqueueReturned.get()
                          && System.nanoTime() - since < TimeUnit.SECONDS.toNanos(10)) {
                        Thread.onSpinWait();
                      }
                    })),
        false);
    server.enqueue(status(503), ok("fine"));
    Heard heard = new Heard();

    retrier.enqueue(client.newCall(get("/token")), heard, client.dispatcher());
    enqueueReturned.set(true);

    assertThat(heard.await()).isEqualTo("200 fine");
    assertThat(cloneDeadline.get() - firstRan.get())
        .as("the clone's deadline, from when OkHttp ran the first attempt")
        .isLessThanOrEqualTo(TimeUnit.SECONDS.toNanos(30));
  }

  @Test
  void aQueuedCallsRetryDeadlineCountsFromWhenOkHttpRanItNotFromWhenItsInterceptorsLetItThrough()
      throws Exception {
    // The call waited in the dispatcher's queue (the host's one slot taken), so when OkHttp ran it
    // was not known at enqueue: the clone's deadline was counted from when the first attempt
    // reached the agent's interceptor, after the application's, and an interceptor that took long
    // there (a token fetched) let a retried call run past its callTimeout by that long.
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    AtomicLong firstRan = new AtomicLong();
    AtomicLong cloneDeadline = new AtomicLong();
    configure(
        b -> b,
        holdingTheSlot(slotTaken, slotFree)
            .callTimeout(30, TimeUnit.SECONDS)
            .addInterceptor(slowOnFirstToken(firstRan, cloneDeadline, () -> {})),
        false);
    client.dispatcher().setMaxRequestsPerHost(1);
    server.enqueue(ok("slot"), status(503), ok("fine"));
    Heard slot = new Heard();
    Heard heard = new Heard();
    client.newCall(get("/slot")).enqueue(slot);
    assertThat(slotTaken.await(10, TimeUnit.SECONDS)).isTrue();

    retrier.enqueue(client.newCall(get("/token")), heard, client.dispatcher());
    assertThat(client.dispatcher().queuedCallsCount()).as("the call itself, queued").isEqualTo(1);
    slotFree.countDown();

    assertThat(slot.await()).isEqualTo("200 slot");
    assertThat(heard.await()).isEqualTo("200 fine");
    assertThat(cloneDeadline.get() - firstRan.get())
        .as("the clone's deadline, from when OkHttp ran the first attempt")
        .isLessThanOrEqualTo(TimeUnit.SECONDS.toNanos(30));
  }

  @Test
  void anExecutedCallsDeadlineCountsFromExecuteNotFromWhenItsInterceptorsLetItThrough()
      throws Exception {
    // OkHttp starts an executed call's callTimeout in execute(), ahead of the application's
    // interceptors; the engine counted it from when the request reached the agent's interceptor,
    // after them. With an interceptor that took 400 ms (a token fetched), a retry whose wait ended
    // past the call's timeout was still started: OkHttp's timeout then ends it, and the
    // application hears "timeout" where without the agent it had the 503. (The engine's clock is
    // fake; only the interceptor's 400 ms and OkHttp's timeout are real.)
    configure(
        b ->
            b.deadline(Duration.ofMinutes(5))
                .backoff(
                    BackoffPolicy.builder()
                        .initial(Duration.ofMillis(29_800))
                        .max(Duration.ofMinutes(1))
                        .jitter(Jitter.NONE)
                        .build()),
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .addInterceptor(
                chain -> {
                  long since = System.nanoTime();
                  while (System.nanoTime() - since < TimeUnit.MILLISECONDS.toNanos(400)) {
                    Thread.onSpinWait(); // the token, fetched
                  }
                  return chain.proceed(chain.request());
                }),
        false);
    server.enqueue(status(503).body("busy"), ok("never"));

    try (Response r = client.newCall(get("/token")).execute()) {
      assertThat(r.code() + " " + r.body().string()).isEqualTo("503 busy");
    }
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.CALL_TIMEOUT);
  }

  @Test
  void aRetryKeepsTheCallsOwnTimeoutWhereItOverridesTheClients() throws Exception {
    // A clone starts with the client's callTimeout: a call whose own timeout() the application
    // lifted (a long download on a client with a short default) had its retry cut off by the
    // client's, with InterruptedIOException: timeout, long before the call's own time was up.
    configure(b -> b, new OkHttpClient.Builder().callTimeout(200, TimeUnit.MILLISECONDS), false);
    server.enqueue(status(503), ok("slow, within the call's own timeout").delay(600));
    Call call = client.newCall(get("/download"));
    call.timeout().timeout(10, TimeUnit.SECONDS);
    Heard heard = new Heard();

    retrier.enqueue(call, heard, client.dispatcher());

    assertThat(heard.await()).isEqualTo("200 slow, within the call's own timeout");
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
  }

  @Test
  void okHttpsOwnResendOnAStalePooledConnectionCountsAsAnAttempt() throws Exception {
    // issue 11: OkHttp sends a request again on a new connection when the pooled one it was
    // written to fails; with maxAttempts 2 that resend was a third request.
    configure(b -> b.maxAttempts(2), new OkHttpClient.Builder(), true);
    server.enqueue(ok("warm"), closeWithoutResponse(), status(503), ok("a third request"));
    try (Response warm = client.newCall(get("/warm")).execute()) {
      assertThat(warm.body().string()).isEqualTo("warm");
    }
    Heard heard = new Heard();

    retrier.enqueue(client.newCall(get("/items")), heard, client.dispatcher());

    assertThat(heard.await()).startsWith("503 ");
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(events).anySatisfy(e -> assertThat(e.reason()).hasToString("ATTEMPTS"));
  }

  @Test
  void okHttpsOwnResendCountsOnExecuteToo() throws Exception {
    configure(b -> b.maxAttempts(2), new OkHttpClient.Builder(), true);
    server.enqueue(ok("warm"), closeWithoutResponse(), status(503), ok("a third request"));
    try (Response warm = client.newCall(get("/warm")).execute()) {
      assertThat(warm.body().string()).isEqualTo("warm");
    }

    try (Response r = client.newCall(get("/items")).execute()) {
      assertThat(r.code()).isEqualTo(503);
    }
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @Test
  void aCallWaitingForItsFirstPermitIsExecutedAsSoonAsEnqueueReturns() throws Exception {
    // The first attempt waited for its permit on the scheduler before the call was enqueued with
    // OkHttp: isExecuted() said false, a second enqueue() or execute() of the call was accepted,
    // and when the wait was over OkHttp threw "Already Executed" on the scheduler's thread, so the
    // first callback never heard anything.
    configureRateLimited();
    server.enqueue(ok("takes the only permit"), ok("waited"), ok("never"));
    time.holdTasks();
    try (Response first = client.newCall(get("/first")).execute()) {
      assertThat(first.body().string()).isEqualTo("takes the only permit");
    }
    Call call = client.newCall(get("/second"));
    Heard heard = new Heard();

    retrier.enqueue(call, heard, client.dispatcher());

    assertThat(call.isExecuted()).isTrue();
    Heard again = new Heard();
    assertThatThrownBy(() -> retrier.enqueue(call, again, client.dispatcher()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("Already Executed");
    assertThatThrownBy(call::execute)
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("Already Executed");
    time.runHeldTasks();
    assertThat(heard.await()).isEqualTo("200 waited");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(again.outcome).isNotDone();
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(time.waits().stream().mapToLong(Long::longValue).sum())
        .as("the wait for the permit")
        .isEqualTo(TimeUnit.SECONDS.toNanos(1));
    assertThat(retrier.running()).isZero();
  }

  @Test
  void executeCancelledDuringTheWaitReportsTheCancelThoughTheBreakerOpenedMeanwhile()
      throws Exception {
    // After a cancel ended the wait, the loop still asked the rate limit and the breaker before the
    // next attempt: the breaker had opened meanwhile (other calls failed), so the application got
    // CircuitBreakerOpenException instead of OkHttp's "Canceled".
    AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
    Sleeper sleeper = runningFirst(duringTheWait);
    Policy policy =
        new Policy(
            "test",
            RetryPolicy.builder().maxAttempts(2).build(),
            Policy.defaults().budget(),
            CircuitBreakerPolicy.builder().countWindow(3).minimumCalls(3).build(),
            Policy.defaults().rateLimit());
    engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(sleeper)
            .scheduler(time)
            .mode(Mode.ENFORCE)
            .policy(policy)
            .build();
    retrier = new AsyncRetrier(engine);
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
    server.otherwise(status(503));
    Call call = client.newCall(get("/items"));
    duringTheWait.set(
        () -> {
          call.cancel();
          // Two more failures of the host: with the call's first, the breaker opens.
          try (Response other = client.newCall(get("/other")).execute()) {
            assertThat(other.code()).isEqualTo(503);
          } catch (IOException e) {
            throw new AssertionError(e);
          }
        });

    assertThatThrownBy(call::execute).isExactlyInstanceOf(IOException.class).hasMessage("Canceled");
    assertThat(server.awaitRequests(3)).isEqualTo(requests(3));
  }

  @Test
  void executeCancelledDuringTheWaitIsGivenUpAtTheAttemptItReachedAsPlainOkHttpFailsIt()
      throws Exception {
    // SyncRetryLoop started the retry after the wait and counted it (GIVE_UP at attempt 2, an
    // attempt in the metrics), though OkHttp sent nothing for it.
    AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
    engine =
        TestEngines.rateLimited(
            time, TestEngines.neverRefilled(3), runningFirst(duringTheWait), events);
    retrier = new AsyncRetrier(engine);
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
    server.enqueue(status(503), ok("second"), ok("third"));
    Call call = client.newCall(get("/wait"));
    duringTheWait.set(call::cancel);

    Throwable withAgent = org.assertj.core.api.Assertions.catchThrowable(call::execute);

    Call plain = new OkHttpClient().newCall(get("/plain"));
    plain.cancel();
    Throwable without = org.assertj.core.api.Assertions.catchThrowable(plain::execute);
    assertThat(withAgent).isExactlyInstanceOf(without.getClass()).hasMessage(without.getMessage());
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    assertThat(events)
        .extracting(e -> e.type() + " " + e.attempt() + " " + e.reason())
        .containsExactly("RETRY 1 null", "GIVE_UP 1 CANCELLED");
    // Of the 3 permits, the first attempt's alone is spent: any taken for the retry went back once.
    events.clear();
    for (String expected : new String[] {"second", "third"}) {
      try (Response r = client.newCall(get("/next")).execute()) {
        assertThat(r.body().string()).isEqualTo(expected);
      }
    }
    assertThatThrownBy(() -> client.newCall(get("/refused")).execute())
        .isInstanceOf(dev.retryagent.engine.RateLimitedException.class);
    assertThat(server.awaitRequests(3)).isEqualTo(requests(3));
  }

  @Test
  void aCallCancelledDuringTheWaitForItsRetryHearsCanceledThoughNoPermitIsLeft() throws Exception {
    // Cancelled with call.cancel() alone (wired by hand), the wait ran out and the retry still
    // asked the rate limit for a permit: with none left, the callback got RateLimitedException
    // instead of "Canceled".
    configureRateLimited(TestEngines.neverRefilled(1));
    server.enqueue(status(503), ok("never"));
    time.holdTasks();
    Call call = client.newCall(get("/wait"));
    Heard heard = new Heard();

    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    call.cancel();
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    assertThat(retrier.running()).isZero();
  }

  @Test
  void aCancelDuringTheWaitForTheFirstPermitEndsItAndIsHeardAsCanceled() throws Exception {
    // The call itself waits for its first permit on the dispatcher thread that runs it: a cancel
    // ends that wait, and the callback hears OkHttp's "Canceled", nothing sent.
    AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
    configureRateLimited(onePermitASecond(), runningFirst(duringTheWait));
    server.enqueue(ok("takes the only permit"), ok("never"));
    client.newCall(get("/first")).execute().close();
    Call call = client.newCall(get("/second"));
    duringTheWait.set(call::cancel);
    Heard heard = new Heard();

    retrier.enqueue(call, heard, client.dispatcher());

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(time.waits().stream().mapToLong(Long::longValue).sum())
        .as("the wait ended at the cancel")
        .isLessThan(TimeUnit.SECONDS.toNanos(1));
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(retrier.running()).isZero();
  }

  @Test
  void aCallWaitingForItsFirstPermitWhenA429PausesTheHostSendsNothingBeforeThePauseEnds()
      throws Exception {
    // The concurrency pass's finding: the call waited for its permit on the dispatcher thread, a
    // 429 with Retry-After paused the host meanwhile, and the attempt went when the permit fell
    // due, inside the pause. Now it waits out the rest of the pause (the bucket is full again by
    // then): 1 s for the permit, then 2 s of the 3 s pause.
    AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
    configureRateLimited(onePermitASecond(), runningFirst(duringTheWait));
    server.enqueue(ok("takes the only permit"), ok("after the pause"));
    client.newCall(get("/first")).execute().close();
    Request second = get("/second");
    HttpUrl url = second.url();
    duringTheWait.set(
        () -> {
          // Another call to the host, in flight before the wait began, hears a 429.
          RetryCall other =
              engine.newCall(FakeRequest.of("GET", url.scheme(), url.host(), url.port(), "/other"));
          try {
            other.beginAttempt();
          } catch (IOException e) {
            throw new AssertionError(e);
          }
          other.onResponse(429, "3");
        });
    Heard heard = new Heard();

    retrier.enqueue(client.newCall(second), heard, client.dispatcher());

    assertThat(heard.await()).isEqualTo("200 after the pause");
    assertThat(duringTheWait.get()).as("the 429 came during the wait").isNull();
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(time.waits().stream().mapToLong(Long::longValue).sum())
        .as("the permit's wait, then the rest of the pause")
        .isEqualTo(TimeUnit.SECONDS.toNanos(3));
    assertThat(retrier.running()).isZero();
  }

  /**
   * An executor that holds what OkHttp's dispatcher gives it until {@link #release}, then runs it
   * on a thread of its own: a call enqueued here has not started yet.
   */
  private static final class HeldExecutor extends java.util.concurrent.AbstractExecutorService {
    private final List<Runnable> held = new CopyOnWriteArrayList<>();
    private final java.util.concurrent.ExecutorService runner =
        java.util.concurrent.Executors.newCachedThreadPool(r -> new Thread(r, "OkHttp held"));

    @Override
    public void execute(Runnable command) {
      held.add(command);
    }

    void release() {
      for (Runnable r : held) {
        held.remove(r);
        runner.execute(r);
      }
    }

    @Override
    public void shutdown() {
      runner.shutdown();
    }

    @Override
    public List<Runnable> shutdownNow() {
      return runner.shutdownNow();
    }

    @Override
    public boolean isShutdown() {
      return runner.isShutdown();
    }

    @Override
    public boolean isTerminated() {
      return runner.isTerminated();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
      return runner.awaitTermination(timeout, unit);
    }
  }

  @ParameterizedTest(name = "network interceptor: {0}")
  @ValueSource(booleans = {true, false})
  void anEnqueuedCallCancelledBeforeItRanSendsNothingAndCountsNoAttempt(boolean resends)
      throws Exception {
    // enqueue() of a call cancelled first, and a cancel() right after enqueue(), before a thread of
    // the dispatcher's ran the call: OkHttp tells the callback "Canceled" from a dispatcher thread,
    // sending nothing, with or without the agent. Such a first attempt is not counted (as for
    // execute(), RetryInterceptorTest), and its rate-limit permit goes back: also without the
    // network interceptor, which alone tells that no request reached a connection (the call was
    // cancelled before the attempt ran, so OkHttp refuses it before it looks for one).
    server.otherwise(ok("fine"));
    RefusedAttempts refused = new RefusedAttempts(time, events);
    retrier = refused.retrier;
    HeldExecutor plainThreads = new HeldExecutor();
    HeldExecutor threads = new HeldExecutor();
    OkHttpClient plain =
        new OkHttpClient.Builder().dispatcher(new okhttp3.Dispatcher(plainThreads)).build();
    client =
        refused
            .ours(plain.newBuilder().dispatcher(new okhttp3.Dispatcher(threads)), resends)
            .build();
    try {
      for (boolean cancelFirst : new boolean[] {true, false}) {
        Heard[] heard = {new Heard(), new Heard()};
        OkHttpClient[] clients = {plain, client};
        for (int i = 0; i < 2; i++) {
          Call call = clients[i].newCall(get("/items"));
          if (cancelFirst) {
            call.cancel();
          }
          if (i == 0) {
            call.enqueue(heard[i]);
          } else {
            retrier.enqueue(call, heard[i], client.dispatcher());
          }
          if (!cancelFirst) {
            // What the agent's hook on cancel() does, then OkHttp's own.
            if (i == 1) {
              retrier.cancel(call);
            }
            call.cancel();
          }
        }
        plainThreads.release();
        threads.release();
        assertThat(heard[1].await()).as("cancel first: " + cancelFirst).isEqualTo(heard[0].await());
        assertThat(heard[1].await()).isEqualTo("java.io.IOException: Canceled");
        assertThat(heard[1].thread).isEqualTo(heard[0].thread);
        assertThat(heard[1].reports).hasValue(1);
      }
      refused.assertNothingCounted(server, events, 2);
      assertThat(retrier.running()).isZero();
      Heard after = new Heard();
      retrier.enqueue(client.newCall(get("/items")), after, client.dispatcher());
      threads.release();
      assertThat(after.await()).as("the permit back").isEqualTo("200 fine");
      assertThat(refused.attempts()).isEqualTo(1);
    } finally {
      plainThreads.shutdown();
    }
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aFirstAttemptTheShutDownExecutorRefusesSendsNothingCountsNoAttemptAndKeepsNoPermit(
      boolean resends) throws Exception {
    // The application shut its dispatcher's executor down, then enqueue()d: OkHttp tells the
    // callback "executor rejected" on the enqueuing thread, sending nothing. The agent counted
    // that first attempt (attempts_total, the give-up's attempt 1) and kept its rate-limit
    // permit: with a bucket of one, the host's next call, on another client, was refused.
    server.otherwise(ok("fine"));
    dev.retryagent.internal.observe.RetryMetrics metrics =
        new dev.retryagent.internal.observe.RetryMetrics();
    retrier = new AsyncRetrier(TestEngines.rateLimitedTo(1, time, events, metrics));
    OkHttpClient plain = new OkHttpClient.Builder().dispatcher(new okhttp3.Dispatcher()).build();
    OkHttpClient.Builder b =
        plain
            .newBuilder()
            .dispatcher(new okhttp3.Dispatcher())
            .addInterceptor(retrier.interceptor());
    if (resends) {
      b.addNetworkInterceptor(retrier.interceptor().networkInterceptor());
    }
    OkHttpClient closed = b.build();
    plain.dispatcher().executorService().shutdown();
    closed.dispatcher().executorService().shutdown();
    Heard without = new Heard();
    plain.newCall(get("/items")).enqueue(without);
    Heard with = new Heard();
    retrier.enqueue(closed.newCall(get("/items")), with, closed.dispatcher());

    assertThat(with.await()).isEqualTo(without.await());
    assertThat(with.await()).isEqualTo("java.io.InterruptedIOException: executor rejected");
    assertThat(with.thread).isEqualTo(without.thread).isEqualTo(Thread.currentThread().getName());
    assertThat(with.reports).hasValue(1);
    assertThat(server.requestCount()).isZero();
    assertThat(metrics.route("test").attempts()).isZero();
    assertThat(events).hasSize(1).extracting(RetryEvent::attempt).containsOnly(0);
    assertThat(retrier.running()).isZero();

    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
    Heard after = new Heard();
    retrier.enqueue(client.newCall(get("/items")), after, client.dispatcher());
    assertThat(after.await()).as("the permit back").isEqualTo("200 fine");
    assertThat(metrics.route("test").attempts()).isEqualTo(1);
  }

  @Test
  void anEnqueuedCallToAHostWhoseBreakerIsOpenHearsTheBreakerNotTheEmptyBucket() throws Exception {
    // The breaker was asked only after the rate limit: with the host's bucket empty (maxWait 0),
    // the callback heard RateLimitedException where an open breaker fails the call itself.
    engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            b -> b.maxAttempts(1),
            Policy.defaults().budget(),
            CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build(),
            TestEngines.neverRefilled(1),
            events);
    retrier = new AsyncRetrier(engine);
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
    server.otherwise(status(503));
    client.newCall(get("/fails")).execute().close(); // the bucket's one permit; opens the breaker
    Heard heard = new Heard();

    retrier.enqueue(client.newCall(get("/items")), heard, client.dispatcher());

    assertThat(heard.await()).startsWith(CircuitBreakerOpenException.class.getName());
    assertThat(heard.reports).hasValue(1);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    assertThat(retrier.running()).isZero();
  }

  @Test
  void aCallCancelledBeforeItIsEnqueuedHearsCanceledThoughTheBreakerIsOpen() throws Exception {
    // Retrofit cancels its OkHttp call before enqueue() when its own call was cancelled first.
    // OkHttp then reports "Canceled"; the agent asked the breaker first, and the callback got
    // CircuitBreakerOpenException.
    engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            b -> b.maxAttempts(1),
            CircuitBreakerPolicy.builder().countWindow(3).minimumCalls(3).build(),
            events);
    retrier = new AsyncRetrier(engine);
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
    server.otherwise(status(503));
    for (int i = 0; i < 3; i++) {
      client.newCall(get("/fails")).execute().close();
    }
    Call call = client.newCall(get("/items"));
    call.cancel();
    Heard heard = new Heard();

    retrier.enqueue(call, heard, client.dispatcher());

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    Call executed = client.newCall(get("/items"));
    executed.cancel();
    assertThatThrownBy(executed::execute)
        .isExactlyInstanceOf(IOException.class)
        .hasMessage("Canceled");
    assertThat(server.awaitRequests(3)).isEqualTo(requests(3));
    assertThat(retrier.running()).isZero();
  }

  @ParameterizedTest(name = "refused by the breaker: {0}")
  @ValueSource(booleans = {false, true})
  void aRefusalToldAfterTheApplicationsCancelIsGivenUpAsTheCancelTheCallbackHears(boolean breaker)
      throws Exception {
    // The rate limit (no permit left, maxWait 0) or the open breaker refused the call as it was
    // enqueued: the refusal is told through OkHttp's run of the call, which the dispatcher's
    // executor held, and the application cancelled the call meanwhile. The callback hears
    // "Canceled", as plain OkHttp tells a call cancelled before it ran; the listeners heard the
    // refusal (give-up RATE_LIMITED or CIRCUIT_OPEN, its dead letter, the completion), told as
    // the engine refused.
    HoldingExecutor executor = new HoldingExecutor();
    OkHttpClient.Builder b =
        new OkHttpClient.Builder().dispatcher(new okhttp3.Dispatcher(executor));
    if (breaker) {
      configure(
          r -> r.maxAttempts(1),
          b,
          false,
          CircuitBreakerPolicy.builder().countWindow(3).minimumCalls(3).build());
      server.otherwise(status(503));
      for (int i = 0; i < 3; i++) {
        client.newCall(get("/fails")).execute().close(); // the breaker opens
      }
    } else {
      engine =
          TestEngines.engine(
              time,
              Mode.ENFORCE,
              r -> r,
              Policy.defaults().budget(),
              CircuitBreakerPolicy.defaults(),
              TestEngines.neverRefilled(1),
              events);
      retrier = new AsyncRetrier(engine);
      client = b.addInterceptor(retrier.interceptor()).build();
      server.otherwise(ok("fine"));
      client.newCall(get("/spent")).execute().close(); // the one permit
    }
    int sent = server.requestCount();
    events.clear();
    executor.hold.set(true);
    Call call = client.newCall(get("/items"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);
    assertThat(events).as("nothing told before the callback hears").isEmpty();

    call.cancel();
    executor.release();

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CANCELLED);
    assertThat(server.requestCount()).as("nothing sent").isEqualTo(sent);
    assertThat(plainCallCancelledBeforeItsCallbackHeard())
        .as("plain OkHttp, a call cancelled before its callback heard of it")
        .isEqualTo("java.io.IOException: Canceled");
  }

  @ParameterizedTest(name = "refused by the breaker: {0}")
  @ValueSource(booleans = {false, true})
  void aRefusalNotCancelledIsGivenUpAsTheRefusalTheCallbackHears(boolean breaker) throws Exception {
    // As above, without a cancel: the callback hears the refusal, and so do the listeners.
    OkHttpClient.Builder b = new OkHttpClient.Builder();
    if (breaker) {
      configure(
          r -> r.maxAttempts(1),
          b,
          false,
          CircuitBreakerPolicy.builder().countWindow(3).minimumCalls(3).build());
      server.otherwise(status(503));
      for (int i = 0; i < 3; i++) {
        client.newCall(get("/fails")).execute().close();
      }
    } else {
      engine =
          TestEngines.engine(
              time,
              Mode.ENFORCE,
              r -> r,
              Policy.defaults().budget(),
              CircuitBreakerPolicy.defaults(),
              TestEngines.neverRefilled(1),
              events);
      retrier = new AsyncRetrier(engine);
      client = b.addInterceptor(retrier.interceptor()).build();
      server.otherwise(ok("fine"));
      client.newCall(get("/spent")).execute().close();
    }
    events.clear();
    Call call = client.newCall(get("/items"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());

    assertThat(heard.await())
        .startsWith(
            (breaker ? CircuitBreakerOpenException.class : RateLimitedException.class).getName());
    assertThat(heard.reports).hasValue(1);
    await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
    assertTheListenersHeardWhatTheCallbackHeard(
        breaker ? GiveUpReason.CIRCUIT_OPEN : GiveUpReason.RATE_LIMITED);
  }

  @Test
  void theRefusalsOfAClientWhoseCacheWasClosedDoNotOpenTheHostsBreakerForOtherClients(
      @TempDir Path dir) throws Exception {
    // A client whose cache the application closed fails each call with IllegalStateException
    // "cache is closed", before anything is sent; OkHttp cancels an enqueued call that threw so,
    // and tells its callback IOException "canceled due to ...". Taken for the host's failure, two
    // more such calls after a retry refused so opened the host's breaker for every other client.
    engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            b -> b,
            CircuitBreakerPolicy.builder().countWindow(4).minimumCalls(4).build(),
            events);
    retrier = new AsyncRetrier(engine);
    Cache cache = new Cache(dir.toFile(), 1 << 20);
    OkHttpClient closing =
        new OkHttpClient.Builder().cache(cache).addInterceptor(retrier.interceptor()).build();
    server.enqueue(status(503));
    server.otherwise(ok("fine"));
    time.holdTasks();
    Heard waiting = new Heard();
    retrier.enqueue(closing.newCall(get("/v1/items")), waiting, closing.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);

    cache.close(); // while the call waits for its retry
    time.runHeldTasks();

    String refused =
        "java.io.IOException: canceled due to java.lang.IllegalStateException: cache"
            + " is closed";
    assertThat(waiting.await()).isEqualTo(refused);
    assertThat(waiting.reports).hasValue(1);
    for (int i = 0; i < 2; i++) {
      Heard heard = new Heard();
      retrier.enqueue(closing.newCall(get("/v1/items")), heard, closing.dispatcher());
      assertThat(heard.await()).isEqualTo(refused);
    }
    assertThat(server.requestCount()).isEqualTo(1);

    // The closed cache sent nothing: another client's call reaches the host, as without retries.
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
    Heard other = new Heard();
    retrier.enqueue(client.newCall(get("/v1/items")), other, client.dispatcher());

    assertThat(other.await()).isEqualTo("200 fine");
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(retrier.running()).isZero();
    closing.dispatcher().executorService().shutdown();
  }

  @Test
  void aRetryThatTheShutDownDispatcherRefusesIsHeardOnceThoughTheCallbackThrows() throws Exception {
    // OkHttp tells the callback of a call its shut-down executor refuses on the thread that
    // enqueued it, and what the callback throws comes back out of enqueue(): for a retry, into the
    // agent, which took it for a refusal of its own and told the callback a second time,
    // "retry-agent: could not enqueue a retry".
    configure(b -> b, new OkHttpClient.Builder(), false);
    server.enqueue(uncopyable503(), ok("never"));
    time.holdTasks();
    List<String> heard = new CopyOnWriteArrayList<>();
    Callback throwing =
        new Callback() {
          @Override
          public void onFailure(Call call, IOException e) {
            heard.add(e.getClass().getName() + ": " + e.getMessage());
            throw new IllegalStateException("the application's own");
          }

          @Override
          public void onResponse(Call call, Response response) {
            heard.add(response.code() + "");
            response.close();
          }
        };
    retrier.enqueue(client.newCall(get("/wait")), throwing, client.dispatcher());
    awaitTheRetrysWait();

    client.dispatcher().executorService().shutdown(); // while the call waits for its retry

    // It leaves the thread that ran the retry as it leaves the caller of enqueue() in OkHttp.
    assertThatThrownBy(time::runHeldTasks).hasMessage("the application's own");
    assertThat(heard).containsExactly("java.io.InterruptedIOException: executor rejected");
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  /**
   * Enqueues {@code /wait}, shuts the client's dispatcher's executor down while the call waits for
   * its retry (the application shutting down), then lets the wait end.
   */
  private Heard enqueueThenShutDownDuringTheRetrysWait() throws Exception {
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/wait")), heard, client.dispatcher());
    awaitTheRetrysWait();
    client.dispatcher().executorService().shutdown();
    time.runHeldTasks();
    return heard;
  }

  /**
   * The retry's wait is held, and the first attempt's run is over: its response released for the
   * retry (the dispatcher counts a call running until its callback returns). A wait run while the
   * response was still being released would go on only once it was, scheduled anew (and held).
   */
  private void awaitTheRetrysWait() {
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> client.dispatcher().runningCallsCount() == 0);
  }

  /**
   * A 503 whose body (9 KiB) is over what the agent copies before releasing it for the retry: a
   * retry refused after the client's shutdown has nothing kept to give back, and the callback hears
   * OkHttp's refusal (docs/okhttp.md, Limits).
   */
  private static ScriptedHttpServer.Action uncopyable503() {
    return status(503).body("x".repeat(9 * 1024));
  }

  @Test
  void aRetryComingDueAfterTheClientShutDownEndsWithTheEarlierResponseAsWithoutTheAgent()
      throws Exception {
    // The application shut the dispatcher's executor down while the call waited for its retry:
    // OkHttp refused the retry's clone and the callback heard "executor rejected", where without
    // the agent the call had its 503. Now the copy kept as the 503 was released is given back, once
    // (on the agent's thread: the dispatcher has none left), and the retry goes back to the budget.
    configureWithOneRetryASecond(new OkHttpClient.Builder());
    server.enqueue(status(503).body("busy"), status(503), ok("retried"));
    Heard heard = enqueueThenShutDownDuringTheRetrysWait();

    assertThat(heard.await()).isEqualTo("503 busy");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.CANCELLED);

    client = client.newBuilder().dispatcher(new okhttp3.Dispatcher()).build();
    assertTheHostsNextCallGetsTheBudgetsOneRetry();
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @Test
  void aRetryComingDueAfterTheClientShutDownEndsWithTheEarlierFailureAsWithoutTheAgent()
      throws Exception {
    // As above, the attempt before the wait failed (the server closed the connection without an
    // answer): the callback heard "executor rejected"; now the failure OkHttp gave that attempt,
    // as plain OkHttp gives it for the same answer.
    OkHttpClient plain = new OkHttpClient.Builder().retryOnConnectionFailure(false).build();
    server.enqueue(closeWithoutResponse());
    Heard without = new Heard();
    plain.newCall(get("/wait")).enqueue(without);
    String expected = without.await();
    plain.dispatcher().executorService().shutdown();
    configureWithOneRetryASecond(new OkHttpClient.Builder().retryOnConnectionFailure(false));
    server.enqueue(closeWithoutResponse(), ok("never"));
    Heard heard = enqueueThenShutDownDuringTheRetrysWait();

    assertThat(heard.await()).isEqualTo(expected).startsWith("java.io.IOException: ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  /** The host's next call (its 503, then "200 retried") gets the budget's one retry. */
  private void assertTheHostsNextCallGetsTheBudgetsOneRetry() throws Exception {
    Heard next = new Heard();
    retrier.enqueue(client.newCall(get("/next")), next, client.dispatcher());
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> time.heldTasks() == 1 || next.outcome.isDone());
    time.runHeldTasks();
    assertThat(next.await()).as("the budget's one retry, given back").isEqualTo("200 retried");
  }

  @Test
  void aRetryThatTheShutDownDispatcherRefusesGivesItsRetryBackToTheHostsBudget() throws Exception {
    // The shut-down executor refused the retry's clone, which sent nothing, but the retry stayed
    // spent: with a budget of one retry, another client's call to the host got its 503 instead of
    // its retry's 200.
    configureWithOneRetryASecond(new OkHttpClient.Builder());
    server.enqueue(uncopyable503(), status(503), ok("retried"));
    Heard heard = enqueueThenShutDownDuringTheRetrysWait();
    assertThat(heard.await()).isEqualTo("java.io.InterruptedIOException: executor rejected");

    client = client.newBuilder().dispatcher(new okhttp3.Dispatcher()).build();
    assertTheHostsNextCallGetsTheBudgetsOneRetry();
    assertThat(server.requestCount()).isEqualTo(3);
  }

  /**
   * The application shuts the dispatcher's executor down while a 503 too long to copy is kept
   * through the retry's short wait on a rate-limited route: the call ends with that 503 and its
   * whole body, as without the agent (on the agent's thread: the dispatcher has none left), the
   * retry not made. Released at the decision, it ended with OkHttp's "executor rejected".
   */
  @Test
  void aShutDownDuringTheWaitA503IsKeptThroughEndsWithThat503() throws Exception {
    configureRateLimited(TestEngines.neverRefilled(2));
    server.enqueue(uncopyable503(), ok("never"));
    Heard heard = enqueueThenShutDownDuringTheRetrysWait();

    assertThat(heard.await()).isEqualTo("503 " + "x".repeat(9 * 1024));
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  @Test
  void aRetryThatTheShutDownDispatcherRefusesGivesItsRateLimitPermitBack() throws Exception {
    // The shut-down executor refused the retry's clone, which sent nothing, but the permit its
    // attempt took from the host's bucket stayed used: with two permits, the host's next call, on
    // another client, was refused as rate-limited. A wait of 2 s (Retry-After): before a shorter
    // one on a rate-limited route the 503 is kept, and given back when the dispatcher has shut
    // down (aRetryTheRateLimitRefusesAfterA503WithALargeBody...), so no clone is refused.
    configureRateLimited(TestEngines.neverRefilled(2));
    server.enqueue(uncopyable503().header("Retry-After", "2"), ok("next"));
    Heard heard = enqueueThenShutDownDuringTheRetrysWait();
    assertThat(heard.await()).isEqualTo("java.io.InterruptedIOException: executor rejected");

    client = client.newBuilder().dispatcher(new okhttp3.Dispatcher()).build();
    Heard next = new Heard();
    retrier.enqueue(client.newCall(get("/next")), next, client.dispatcher());
    assertThat(next.await()).as("the clone's permit, given back").isEqualTo("200 next");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  /**
   * A client whose event listener throws from {@code callStart} of its {@code n}th call (OkHttp
   * lets it out of {@code enqueue()}, having enqueued nothing): with {@code n = 2}, the retry's
   * clone.
   */
  private static OkHttpClient.Builder throwingFromCallStart(int n) {
    AtomicInteger starts = new AtomicInteger();
    return new OkHttpClient.Builder()
        .eventListener(
            new EventListener() {
              @Override
              public void callStart(Call call) {
                if (starts.incrementAndGet() == n) {
                  throw new IllegalStateException("the application's listener");
                }
              }
            });
  }

  /**
   * Retries every failure, with a budget of one retry a second for the host, whatever its calls: a
   * retry spent shows as the host's next 503 not retried.
   */
  private void configureWithOneRetryASecond(OkHttpClient.Builder builder) {
    configure(
        b -> b,
        builder,
        false,
        BudgetPolicy.builder().ratio(0).minPerSecond(1).window(Duration.ofSeconds(1)).build(),
        CircuitBreakerPolicy.defaults());
  }

  /**
   * A client whose event listener factory throws for its second call, the retry's clone (OkHttp
   * asks it as the call is made, in {@code clone()}).
   */
  private static OkHttpClient.Builder throwingForTheClone() {
    AtomicInteger made = new AtomicInteger();
    return new OkHttpClient.Builder()
        .eventListenerFactory(
            call -> {
              if (made.incrementAndGet() == 2) {
                throw new IllegalStateException("the application's listener factory");
              }
              return EventListener.NONE;
            });
  }

  /** Enqueues {@code /wait}, answered 503, then runs its retry, whose clone cannot be enqueued. */
  private void retryThatCannotBeEnqueued() throws Exception {
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/wait")), heard, client.dispatcher());
    awaitTheRetrysWait();
    time.runHeldTasks();
    assertThat(heard.await())
        .isEqualTo("java.io.IOException: retry-agent: could not enqueue a retry");
    assertThat(heard.reports).hasValue(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  @Test
  void aRetryWhoseCloneCannotBeEnqueuedGivesItsRetryBackToTheHostsBudget() throws Exception {
    // The application's event listener threw from the clone's callStart, inside OkHttp's enqueue,
    // before anything was enqueued: the callback heard of the call, but the retry, which sent
    // nothing, stayed spent: with a budget of one retry, the host's next call got its 503.
    configureWithOneRetryASecond(throwingFromCallStart(2));
    server.enqueue(status(503), status(503), ok("retried"));
    retryThatCannotBeEnqueued();

    assertTheHostsNextCallGetsTheBudgetsOneRetry();
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @Test
  void aRetryWhoseCloneCannotBeEnqueuedGivesItsRateLimitPermitBack() throws Exception {
    // As above: the permit the clone's attempt took from the host's bucket stayed used, and with
    // two permits the host's next call was refused as rate-limited.
    configureRateLimited(TestEngines.neverRefilled(2), time, throwingFromCallStart(2));
    server.enqueue(status(503), ok("next"));
    retryThatCannotBeEnqueued();

    Heard next = new Heard();
    retrier.enqueue(client.newCall(get("/next")), next, client.dispatcher());
    assertThat(next.await()).as("the clone's permit, given back").isEqualTo("200 next");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void aFirstAttemptThatOkHttpsEnqueueRefusesGivesItsRateLimitPermitBack() throws Exception {
    // The listener threw from the call's own callStart: enqueue() throws it to the application, as
    // without the agent, but the permit the attempt took stayed used though nothing was sent, and
    // with one permit the host's next call was refused as rate-limited.
    configureRateLimited(TestEngines.neverRefilled(1), time, throwingFromCallStart(1));
    server.enqueue(ok("next"));

    assertThatThrownBy(
            () -> retrier.enqueue(client.newCall(get("/first")), new Heard(), client.dispatcher()))
        .hasMessage("the application's listener");
    assertThat(retrier.running()).isZero();

    Heard next = new Heard();
    retrier.enqueue(client.newCall(get("/next")), next, client.dispatcher());
    assertThat(next.await()).as("the first call's permit, given back").isEqualTo("200 next");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aRetryWhoseCloneCannotBeMadeIsHeardOnceAndGivesItsRetryBack() throws Exception {
    // The application's event listener factory threw for the clone (OkHttp asks it in clone()),
    // on the scheduler's thread at the end of the wait: it left the agent there, the callback
    // never heard of the call, and the call stayed running with its retry spent.
    configureWithOneRetryASecond(throwingForTheClone());
    server.enqueue(status(503), status(503), ok("retried"));
    retryThatCannotBeEnqueued();

    assertTheHostsNextCallGetsTheBudgetsOneRetry();
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @Test
  void aRetriedCallWhoseOnResponseThrowsIsCancelledAsWithoutTheAgent() throws Exception {
    // OkHttp cancels the call it ran when the callback's onResponse throws anything but an
    // IOException, then lets it leave onto the dispatcher's thread. The retry's response came
    // from a clone, which OkHttp cancelled: the application's own call stayed not cancelled,
    // where without the agent it is (compared with plain OkHttp on the same dispatcher).
    UncaughtRecordingDispatcher threads = new UncaughtRecordingDispatcher();
    List<Throwable> uncaught = threads.uncaught;
    okhttp3.Dispatcher dispatcher = threads.dispatcher;
    try {
      OkHttpClient plain = new OkHttpClient.Builder().dispatcher(dispatcher).build();
      server.enqueue(ok("fine"));
      Call plainCall = plain.newCall(get("/items"));
      IllegalStateException plainBug = new IllegalStateException("the application's own");
      plainCall.enqueue(throwingOnResponse(plainBug));
      await().atMost(Duration.ofSeconds(10)).until(() -> uncaught.contains(plainBug));

      configure(b -> b, new OkHttpClient.Builder().dispatcher(dispatcher), false);
      server.enqueue(status(503), ok("retried"));
      time.holdTasks();
      Call call = client.newCall(get("/items"));
      IllegalStateException bug = new IllegalStateException("the application's own");
      retrier.enqueue(call, throwingOnResponse(bug), dispatcher);
      await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
      time.runHeldTasks();
      await().atMost(Duration.ofSeconds(10)).until(() -> uncaught.contains(bug));

      assertThat(plainCall.isCanceled()).isTrue();
      assertThat(call.isCanceled()).as("cancelled, as OkHttp cancels it").isTrue();
      assertThat(server.requestCount()).isEqualTo(3);
      assertThat(retrier.running()).isZero();
    } finally {
      threads.close();
    }
  }

  @Test
  void aCallbackWhoseOnFailureThrowsIsCalledOnceAsWithoutTheAgent() throws Exception {
    // What OkHttp does (docs/okhttp.md said it calls onFailure once more; it does not): the
    // exception leaves onto the dispatcher's thread, onFailure called once. The same with the
    // agent, compared with plain OkHttp on the same dispatcher and the same failure.
    try (UncaughtRecordingDispatcher threads = new UncaughtRecordingDispatcher()) {
      OkHttpClient plain =
          new OkHttpClient.Builder()
              .retryOnConnectionFailure(false)
              .dispatcher(threads.dispatcher)
              .build();
      server.enqueue(closeWithoutResponse());
      AtomicInteger plainFailures = new AtomicInteger();
      IllegalStateException plainBug = new IllegalStateException("the application's own");
      plain.newCall(get("/items")).enqueue(throwingOnFailure(plainFailures, plainBug));
      await().atMost(Duration.ofSeconds(10)).until(() -> threads.uncaught.contains(plainBug));

      configure(
          b -> b.maxAttempts(1),
          new OkHttpClient.Builder().retryOnConnectionFailure(false).dispatcher(threads.dispatcher),
          false);
      server.enqueue(closeWithoutResponse());
      AtomicInteger failures = new AtomicInteger();
      IllegalStateException bug = new IllegalStateException("the application's own");
      retrier.enqueue(
          client.newCall(get("/items")), throwingOnFailure(failures, bug), threads.dispatcher);
      await().atMost(Duration.ofSeconds(10)).until(() -> threads.uncaught.contains(bug));
      await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);

      assertThat(plainFailures).hasValue(1);
      assertThat(failures).hasValue(1);
      assertThat(threads.uncaught).hasSize(2);
      assertThat(server.requestCount()).isEqualTo(2);
    }
  }

  /** A callback whose onFailure counts the call and throws {@code bug}. */
  private static Callback throwingOnFailure(AtomicInteger failures, RuntimeException bug) {
    return new Callback() {
      @Override
      public void onFailure(Call call, IOException e) {
        failures.incrementAndGet();
        throw bug;
      }

      @Override
      public void onResponse(Call call, Response response) {
        response.close();
      }
    };
  }

  /** A callback whose onResponse closes the response and throws {@code bug}. */
  private static Callback throwingOnResponse(Throwable bug) {
    return new Callback() {
      @Override
      public void onFailure(Call call, IOException e) {}

      @Override
      public void onResponse(Call call, Response response) {
        response.close();
        throw AsyncRetrierTest.<RuntimeException>sneaky(bug);
      }
    };
  }

  /** Throws {@code t}, checked or not, as an application's Kotlin callback may. */
  @SuppressWarnings("unchecked")
  private static <T extends Throwable> T sneaky(Throwable t) throws T {
    throw (T) t;
  }

  @Test
  void aRetriedCallWhoseOnResponseThrowsAnInterruptedExceptionIsCancelledAsWithoutTheAgent()
      throws Exception {
    // As above, an InterruptedException thrown sneakily (OkHttp 5.2 on keeps it on its thread,
    // the interrupt flag set; before, it leaves): OkHttp cancels the clone it ran, and the
    // application's own call stayed not cancelled, where without the agent it is.
    UncaughtRecordingDispatcher threads = new UncaughtRecordingDispatcher();
    okhttp3.Dispatcher dispatcher = threads.dispatcher;
    try {
      OkHttpClient plain = new OkHttpClient.Builder().dispatcher(dispatcher).build();
      server.enqueue(ok("fine"));
      Call plainCall = plain.newCall(get("/items"));
      plainCall.enqueue(throwingOnResponse(new InterruptedException("the application's own")));
      await().atMost(Duration.ofSeconds(10)).until(plainCall::isCanceled);

      configure(b -> b, new OkHttpClient.Builder().dispatcher(dispatcher), false);
      server.enqueue(status(503), ok("retried"));
      time.holdTasks();
      Call call = client.newCall(get("/items"));
      retrier.enqueue(
          call, throwingOnResponse(new InterruptedException("the application's own")), dispatcher);
      await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
      time.runHeldTasks();

      await()
          .atMost(Duration.ofSeconds(10))
          .alias("cancelled, as OkHttp cancels it")
          .until(call::isCanceled);
      await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
      assertThat(server.requestCount()).isEqualTo(3);
    } finally {
      threads.close();
    }
  }

  @Test
  void aCallWhoseClientIsShutDownDuringItsAttemptHearsThatAttemptsOutcomeNotARefusedRetry()
      throws Exception {
    // The application shut the dispatcher's executor down while the call's attempt ran (as it
    // shuts an application down): OkHttp lets that attempt end and tells the callback its 503.
    // The agent decided a retry that the executor could only refuse, and the callback heard
    // "executor rejected" instead of the response it had without the agent.
    configure(
        b -> b,
        new OkHttpClient.Builder()
            .addInterceptor(
                chain -> {
                  Response r = chain.proceed(chain.request());
                  client.dispatcher().executorService().shutdown();
                  return r;
                }),
        false);
    server.enqueue(status(503).body("busy"), ok("never"));
    Heard heard = new Heard();

    retrier.enqueue(client.newCall(get("/items")), heard, client.dispatcher());

    assertThat(heard.await()).isEqualTo("503 busy");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  @Test
  void aRetrysWaitThatEndsPastTheCallTimeoutEndsTheCallAsOkHttpsTimeoutDoes() throws Exception {
    // (At the timeout itself, on okio's watchdog, as OkHttp's own timeout; the late wait's own end
    // looks at the timeout too, should the watchdog be behind: the test below, whose wait ended.)
    // OkHttp's callTimeout (real, 3 s) ran out while the retry waited on the agent's scheduler,
    // which ended the wait late (held here): the retry's clone was enqueued with its deadline
    // past, the application's interceptors saw it, it raced OkHttp's timeout to the wire, and the
    // callback could hear its answer after the call's timeout. Now the call ends as plain OkHttp
    // ends one its timeout ran out on: the same exception, on a dispatcher thread named as
    // OkHttp's, cancelled, nothing more sent or seen.
    AtomicInteger passes = new AtomicInteger();
    configure(
        b -> b,
        new OkHttpClient.Builder()
            .callTimeout(3, TimeUnit.SECONDS)
            .addInterceptor(
                chain -> {
                  passes.incrementAndGet();
                  return chain.proceed(chain.request());
                }),
        false);
    server.enqueue(status(503));
    server.otherwise(ok("retried"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    time.advance(TimeUnit.SECONDS.toNanos(4)); // the engine's clock, as real time will have moved

    Heard without = plainCallTimedOut(3); // begun after ours: ours has run out by now
    await()
        .atMost(Duration.ofSeconds(10))
        .alias("heard at the call's timeout, not when the late wait ends")
        .until(heard.outcome::isDone);
    assertThat(time.heldTasks()).as("the wait, still held").isEqualTo(1);
    time.runHeldTasks(); // the wait's task, cancelled: it does nothing

    assertEndedAsPlainOkHttpsTimedOutCall(heard, without, call);
    assertThat(passes).as("the application's interceptor saw the first attempt only").hasValue(1);
    assertThat(server.awaitRequests(2)).as("ours, then plain OkHttp's").isEqualTo(requests(2));
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.CALL_TIMEOUT);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  @Test
  void aResponseGivenBackAsTheCallTimeoutRunsOutIsHeardAsOkHttpsTimeout() throws Exception {
    // The retry's wait ended past the policy's deadline (40 s late), and the copy of the 503 kept
    // for it was on its way to the callback (the dispatcher's executor held it) when OkHttp's
    // callTimeout (real, 3 s) ran out: the callback heard the 503 after the call's timeout, which
    // OkHttp never tells (a response that comes after its timeout cancelled the call fails as
    // "timeout"). Now it hears that, as plain OkHttp's call that ran out, on a dispatcher thread.
    HoldingExecutor executor = new HoldingExecutor();
    configure(
        b -> b.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
        new OkHttpClient.Builder()
            .callTimeout(3, TimeUnit.SECONDS)
            .dispatcher(new okhttp3.Dispatcher(executor)),
        false);
    time.late(40_000_000_000L);
    server.enqueue(status(503).body("busy"));
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.hold.set(true);
    time.runHeldTasks(); // the wait ends past the deadline: the copy goes to a dispatcher thread
    await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);

    Heard without = plainCallTimedOut(3);
    executor.release();

    assertEndedAsPlainOkHttpsTimedOutCall(heard, without, call);
    assertThat(server.awaitRequests(2)).as("ours, then plain OkHttp's").isEqualTo(requests(2));
    assertThat(retrier.running()).isZero();
  }

  @Test
  void aCancelAsAResponseIsGivenBackAfterALateWaitIsHeardAsCanceled() throws Exception {
    // The retry's wait ended past the call's deadline (the engine's clock 40 s late: its
    // callTimeout of 30 s and the policy's 10 s both run out), so the call ends with the copy of
    // the 503 kept for it; the application cancelled the call while that copy was on its way to
    // the callback (the dispatcher's executor held it). Plain OkHttp fails a response that comes
    // after a cancel, before its callback hears it ("Canceled"); the callback heard the 503.
    HoldingExecutor executor = new HoldingExecutor();
    configure(
        b -> b.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .dispatcher(new okhttp3.Dispatcher(executor)),
        false);
    time.late(40_000_000_000L);
    server.enqueue(status(503).body("busy"));
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.hold.set(true);
    time.runHeldTasks(); // the wait ends past the deadline: the copy goes to a dispatcher thread
    await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);

    call.cancel();
    executor.release();

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CANCELLED);
    assertThat(plainCallCancelledBeforeItsCallbackHeard())
        .as("plain OkHttp, a call cancelled before its callback heard of it")
        .isEqualTo("java.io.IOException: Canceled");
    assertThat(server.requestCount()).as("the plain call sent nothing").isEqualTo(1);
  }

  @Test
  void aCancelAsAFailureIsToldAfterALateWaitIsHeardAsCanceled() throws Exception {
    // As above, for an attempt that failed (a reset): the call ends with that failure, told through
    // a clone OkHttp runs, which the dispatcher's executor held when the application cancelled.
    // The callback heard the reset; a call cancelled before its callback heard of it hears
    // "Canceled", as plain OkHttp tells a call cancelled before it ran.
    HoldingExecutor executor = new HoldingExecutor();
    configure(
        b -> b.deadline(Duration.ofSeconds(10)),
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false)
            .dispatcher(new okhttp3.Dispatcher(executor)),
        false);
    time.late(40_000_000_000L);
    server.enqueue(reset());
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.hold.set(true);
    time.runHeldTasks(); // the wait ends past the deadline: the failure's clone is enqueued
    await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);

    call.cancel();
    executor.release();

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CANCELLED);
    assertThat(plainCallCancelledBeforeItsCallbackHeard())
        .as("plain OkHttp, a call cancelled before its callback heard of it")
        .isEqualTo("java.io.IOException: Canceled");
    assertThat(server.requestCount()).as("the plain call sent nothing").isEqualTo(1);
  }

  /**
   * The call's give-up, as the listeners heard it (the dead letter and the counters take the same
   * reason), is {@code reason}: what its callback heard, told before it, once.
   */
  private void assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason reason) {
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(reason);
  }

  /**
   * What plain OkHttp's callback hears of a call the application cancels while the dispatcher's
   * executor holds it, before its callback heard of it.
   */
  private String plainCallCancelledBeforeItsCallbackHeard() throws Exception {
    HoldingExecutor executor = new HoldingExecutor();
    OkHttpClient plain =
        new OkHttpClient.Builder().dispatcher(new okhttp3.Dispatcher(executor)).build();
    try {
      executor.hold.set(true);
      Call call = plain.newCall(get("/plain"));
      Heard heard = new Heard();
      call.enqueue(heard);
      await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);
      call.cancel();
      executor.release();
      return heard.await();
    } finally {
      executor.shutdown();
    }
  }

  @Test
  void aLateWaitNotCancelledIsHeardAsTheEarlierResponseAndGivenUpAtTheDeadline() throws Exception {
    // As aCancelAsAResponseIsGivenBackAfterALateWaitIsHeardAsCanceled, with no cancel: the call
    // ends with the 503 of before the wait, given up at the deadline, as the callback hears it.
    HoldingExecutor executor = new HoldingExecutor();
    configure(
        b -> b.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .dispatcher(new okhttp3.Dispatcher(executor)),
        false);
    time.late(40_000_000_000L);
    server.enqueue(status(503).body("busy"));
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("503 busy");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.DEADLINE);
  }

  @Test
  void aLateWaitNotCancelledIsHeardAsTheEarlierFailureAndGivenUpAtTheDeadline() throws Exception {
    // As aCancelAsAFailureIsToldAfterALateWaitIsHeardAsCanceled, with no cancel: the reset.
    configure(
        b -> b.deadline(Duration.ofSeconds(10)),
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false),
        false);
    time.late(40_000_000_000L);
    server.enqueue(reset());
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    time.runHeldTasks();

    assertThat(heard.await()).startsWith("java.net.SocketException: ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.DEADLINE);
  }

  @Test
  void aLateWaitWhoseCloneCannotBeEnqueuedIsNotHeardAsACancel() throws Exception {
    // As aLateWaitNotCancelledIsHeardAsTheEarlierFailureAndGivenUpAtTheDeadline, and the
    // application's event listener threw from the callStart of the clone that tells the reset:
    // the call was abandoned (as cancelled) before its late end was decided, which then took it
    // for a cancel: the callback heard "Canceled", never cancelled, the listeners CANCELLED.
    configure(
        b -> b.deadline(Duration.ofSeconds(10)),
        throwingFromCallStart(2).callTimeout(30, TimeUnit.SECONDS).retryOnConnectionFailure(false),
        false);
    time.late(40_000_000_000L);
    server.enqueue(reset());
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    time.runHeldTasks();

    assertThat(heard.await())
        .isEqualTo("java.io.IOException: retry-agent: could not enqueue a retry");
    assertThat(heard.reports).hasValue(1);
    assertThat(call.isCanceled()).isFalse();
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.DEADLINE);
  }

  @ParameterizedTest(name = "cancelled after the call timeout: {0}")
  @ValueSource(booleans = {false, true})
  void aFailureOfBeforeALateWaitToldPastTheCallTimeoutIsHeardAsOkHttpsTimeout(boolean cancel)
      throws Exception {
    // The retry's wait ended past the policy's deadline (the engine's clock 40 s late), within the
    // call's timeout (real, 3 s); the reset of before the wait is told through a clone, which the
    // dispatcher's executor held until the call's timeout had run out (and the application
    // cancelled the call after that). Plain OkHttp tells a call its timeout ran out on "timeout"
    // (its watchdog cancels it then; a cancel after that changes nothing), as the copy of a
    // response is told here (tellGivenBack); the callback heard the reset, or "Canceled", past the
    // call's timeout.
    HoldingExecutor executor = new HoldingExecutor();
    configure(
        b -> b.deadline(Duration.ofSeconds(10)),
        new OkHttpClient.Builder()
            .callTimeout(3, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false)
            .dispatcher(new okhttp3.Dispatcher(executor)),
        false);
    time.late(40_000_000_000L);
    server.enqueue(reset());
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.hold.set(true);
    time.runHeldTasks(); // the wait ends past the deadline: the failure's clone is enqueued
    await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);
    assertThat(heard.outcome).as("nothing told within the call's timeout").isNotDone();

    Heard without = plainCallTimedOut(3);
    if (cancel) {
      call.cancel();
    }
    executor.release();

    assertEndedAsPlainOkHttpsTimedOutCall(heard, without, call);
    assertThat(server.awaitRequests(2)).as("ours, then plain OkHttp's").isEqualTo(requests(2));
    assertThat(retrier.running()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CALL_TIMEOUT);
  }

  @ParameterizedTest(name = "a failure before the wait: {0}")
  @ValueSource(booleans = {false, true})
  void aLateEndToldPastTheCallTimeoutIsHeardAsTheCancelThatCameBeforeIt(boolean failed)
      throws Exception {
    // As above, but the application cancelled the call within its timeout (real, 3 s), while the
    // late end (the reset's clone, the 503's copy) was held by the dispatcher's executor, which
    // let it go only past the timeout. Plain OkHttp ends a call at its cancel, "Canceled" (its
    // timeout that runs out later changes nothing); the callback heard "timeout", the listeners
    // the call timeout.
    HoldingExecutor executor = new HoldingExecutor();
    configure(
        b -> b.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
        new OkHttpClient.Builder()
            .callTimeout(3, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false)
            .dispatcher(new okhttp3.Dispatcher(executor)),
        false);
    time.late(40_000_000_000L);
    server.enqueue(failed ? reset() : status(503).body("busy"));
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.hold.set(true);
    time.runHeldTasks(); // the wait ends past the deadline: the clone, or the copy, is held
    await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);
    call.cancel(); // within the call's timeout

    // Plain OkHttp's call with the same timeout, cancelled as its run is held, let go with ours.
    HoldingExecutor plainExecutor = new HoldingExecutor();
    OkHttpClient plainClient =
        new OkHttpClient.Builder()
            .callTimeout(3, TimeUnit.SECONDS)
            .dispatcher(new okhttp3.Dispatcher(plainExecutor))
            .build();
    Heard without = new Heard();
    try {
      plainExecutor.hold.set(true);
      Call plainCall = plainClient.newCall(get("/plain"));
      plainCall.enqueue(without);
      await().atMost(Duration.ofSeconds(10)).until(() -> plainExecutor.held.size() == 1);
      plainCall.cancel();
      plainCallTimedOut(3); // past both calls' timeouts by now
      plainExecutor.release();
      executor.release();

      assertThat(without.await()).isEqualTo("java.io.IOException: Canceled");
      assertThat(heard.await()).isEqualTo(without.await());
    } finally {
      plainExecutor.shutdown();
    }
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(retrier.running()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CANCELLED);
  }

  @ParameterizedTest(name = "a failure before the wait: {0}")
  @ValueSource(booleans = {false, true})
  void aLateEndTheApplicationsExecutorDropsAtShutdownNowIsStillHeardOnce(boolean failed)
      throws Exception {
    // The retry's wait ended past the deadline (the engine's clock 40 s late): the reset's clone,
    // or the 503's copy, was handed to the application's dispatcher executor, which queued it,
    // and the application then shut it down with shutdownNow(), which drops what it never ran.
    // The callback was never told, the call never given up (counted running for ever). Plain
    // OkHttp told that attempt's outcome before the shutdown (no wait): told so still, once.
    OkHttpClient plain = new OkHttpClient.Builder().retryOnConnectionFailure(false).build();
    server.enqueue(failed ? reset() : status(503).body("busy"));
    Heard without = new Heard();
    plain.newCall(get("/wait")).enqueue(without);
    String expected = without.await();
    plain.dispatcher().executorService().shutdown();
    HoldingExecutor executor = new HoldingExecutor();
    configure(
        b -> b.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false)
            .dispatcher(new okhttp3.Dispatcher(executor)),
        false);
    time.late(40_000_000_000L);
    server.enqueue(failed ? reset() : status(503).body("busy"));
    server.otherwise(ok("never"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/retried")), heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.hold.set(true);
    time.runHeldTasks(); // the wait ends past the deadline: the clone, or the copy, is queued
    await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);

    assertThat(executor.shutdownNow()).as("dropped, never run").hasSize(1);
    await().atMost(Duration.ofSeconds(10)).until(executor::isTerminated);
    time.runHeldTasks(); // the agent's look at the hand-over, on its scheduler

    assertThat(heard.await()).isEqualTo(expected);
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("one request each, nothing more").isEqualTo(2);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.DEADLINE);
  }

  @ParameterizedTest(name = "a failure before the wait: {0}")
  @ValueSource(booleans = {false, true})
  void theWatchOfALateEndAnExecutorDiscardsEnds(boolean failed) throws Exception {
    // The late end (the retry's wait ended past the deadline) was handed to an application's
    // executor that silently discards what it accepts (a DiscardPolicy on a full queue) and never
    // terminates: the agent's look at that hand-over rescheduled itself every second for ever,
    // one task per call on the agent's scheduler holding the call, its clone and its response
    // copy. It now stops after its bound. Plain OkHttp, its call discarded by such an executor,
    // never tells its callback either, and counts it running for ever: so does the agent.
    HoldingExecutor plainExecutor = new HoldingExecutor();
    plainExecutor.discard.set(true);
    okhttp3.Dispatcher plainDispatcher = new okhttp3.Dispatcher(plainExecutor);
    OkHttpClient plain = new OkHttpClient.Builder().dispatcher(plainDispatcher).build();
    Heard without = new Heard();
    plain.newCall(get("/plain")).enqueue(without);
    assertThat(plainDispatcher.runningCallsCount()).isEqualTo(1);
    assertThat(without.reports).hasValue(0);

    HoldingExecutor executor = new HoldingExecutor();
    configure(
        b -> b.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false)
            .dispatcher(new okhttp3.Dispatcher(executor)),
        false);
    time.late(40_000_000_000L);
    server.enqueue(failed ? reset() : status(503).body("busy"));
    server.otherwise(ok("never"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/retried")), heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.discard.set(true);
    time.runHeldTasks(); // the wait ends past the deadline: the clone, or the copy, is discarded
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1); // the watch

    int looks = 0;
    while (time.heldTasks() > 0 && looks < 1_000) {
      time.runHeldTasks();
      looks++;
    }
    assertThat(time.heldTasks()).as("the watch stopped").isZero();
    assertThat(looks).as("after about a minute of looks").isBetween(50, 70);
    assertThat(heard.reports).as("discarded: never run, as plain OkHttp's").hasValue(0);
    assertThat(server.requestCount()).as("nothing sent again").isEqualTo(1);
    assertThat(engine.pendingAsyncRetries()).isZero();
    // Counted running, as plain OkHttp's dispatcher counts the call its executor discarded; the
    // watch, and the copy or clone it held, are gone.
    assertThat(retrier.running()).isEqualTo(1);
  }

  @ParameterizedTest(name = "before the wait: {0}")
  @ValueSource(strings = {"a failure", "a 503", "a 503 too long to copy"})
  void aRetryTheApplicationsExecutorDropsAtShutdownNowEndsWithTheAttemptBeforeIt(String before)
      throws Exception {
    // The retry's clone, enqueued after its backoff wait, was handed by OkHttp to the
    // application's dispatcher executor, which queued it, and the application then shut it down
    // with shutdownNow(), which drops what it never ran: the callback was never told (260c0e7f),
    // then told OkHttp's refusal, "executor rejected", a failure the call never had without the
    // agent (r37 #2). Now the call ends with the attempt before the retry, as plain OkHttp ends
    // it: its failure, or its 503 with its body; given up as cancelled, the retry back to the
    // budget, nothing sent again. A 503 released uncopied (over 8 KiB) cannot be given back: the
    // refusal, as when the executor is shut down before (docs/okhttp.md, Limits).
    boolean failed = before.equals("a failure");
    boolean uncopyable = before.endsWith("to copy");
    String expected;
    if (failed) {
      OkHttpClient plain = new OkHttpClient.Builder().retryOnConnectionFailure(false).build();
      server.enqueue(closeWithoutResponse());
      Heard without = new Heard();
      plain.newCall(get("/plain")).enqueue(without);
      expected = without.await();
      plain.dispatcher().executorService().shutdown();
      assertThat(expected).startsWith("java.io.IOException: ");
    } else if (uncopyable) {
      expected = plainCallRefusedByItsShutDownExecutor();
    } else {
      expected = "503 busy";
    }
    int plainRequests = server.requestCount();
    HoldingExecutor executor = new HoldingExecutor();
    configureWithOneRetryASecond(
        new OkHttpClient.Builder()
            .retryOnConnectionFailure(false)
            .dispatcher(new okhttp3.Dispatcher(executor)));
    server.enqueue(
        failed ? closeWithoutResponse() : uncopyable ? uncopyable503() : status(503).body("busy"),
        status(503),
        ok("retried"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/retried")), heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.hold.set(true);
    time.runHeldTasks(); // the wait ends: the retry's clone is handed to the executor, kept
    await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);

    List<Runnable> dropped = executor.shutdownNow();
    assertThat(dropped).as("dropped, never run").hasSize(1);
    await().atMost(Duration.ofSeconds(10)).until(executor::isTerminated);
    time.runHeldTasks(); // the agent's look at the hand-over, on its scheduler

    assertThat(heard.await()).isEqualTo(expected);
    assertThat(heard.reports).hasValue(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CANCELLED);
    // Given up with the outcome the callback heard (the response's status, or the failure); the
    // retry's attempt, counted as it started, stays the give-up's number (attemptRefused).
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(e -> e.attempt() + " " + e.outcome() + " " + e.status())
        .containsExactly(failed ? "2 RESET -1" : uncopyable ? "2 CANCELLED -1" : "2 RESPONSE 503");
    // The application runs what shutdownNow() gave it back: nothing is sent, nothing heard again.
    dropped.get(0).run();
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount() - plainRequests).as("the first attempt only").isEqualTo(1);
    // The retry never made goes back to the host's budget: its next call gets the one retry.
    client = client.newBuilder().dispatcher(new okhttp3.Dispatcher()).build();
    assertTheHostsNextCallGetsTheBudgetsOneRetry();
    assertThat(server.requestCount() - plainRequests).isEqualTo(3);
  }

  @ParameterizedTest(name = "before the wait: {0}")
  @ValueSource(booleans = {true, false})
  void aRetryTheApplicationsFullExecutorRefusesEndsWithTheAttemptBeforeIt(boolean failed)
      throws Exception {
    // The application's dispatcher executor, full (its AbortPolicy), refused the retry's clone:
    // the callback heard OkHttp's refusal, "executor rejected", where without the agent the call
    // had the attempt before the retry. Now that attempt's failure, or its 503 with its body.
    String expected = "503 busy";
    if (failed) {
      OkHttpClient plain = new OkHttpClient.Builder().retryOnConnectionFailure(false).build();
      server.enqueue(closeWithoutResponse());
      Heard without = new Heard();
      plain.newCall(get("/plain")).enqueue(without);
      expected = without.await();
      plain.dispatcher().executorService().shutdown();
      assertThat(expected).startsWith("java.io.IOException: ");
    }
    int plainRequests = server.requestCount();
    HoldingExecutor executor = new HoldingExecutor();
    configureWithOneRetryASecond(
        new OkHttpClient.Builder()
            .retryOnConnectionFailure(false)
            .dispatcher(new okhttp3.Dispatcher(executor)));
    server.enqueue(
        failed ? closeWithoutResponse() : status(503).body("busy"), status(503), ok("retried"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/retried")), heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.refuse.set(true);
    time.runHeldTasks(); // the wait ends: the executor refuses the retry's clone

    assertThat(heard.await()).isEqualTo(expected);
    assertThat(heard.reports).hasValue(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CANCELLED);
    assertThat(server.requestCount() - plainRequests).as("the first attempt only").isEqualTo(1);
    // The retry never made goes back to the host's budget: its next call gets the one retry.
    executor.refuse.set(false);
    assertTheHostsNextCallGetsTheBudgetsOneRetry();
    assertThat(server.requestCount() - plainRequests).isEqualTo(3);
    executor.shutdown();
  }

  @Test
  void aRetryAfterA503KeptThroughItsWaitThatTheExecutorDropsEndsWithThat503AndGivesItsPermitBack()
      throws Exception {
    // On a rate-limited route the 503 is kept unreleased through the retry's short wait (Kept),
    // released as the retry's permit is granted: without a wait for the permit it was released
    // uncopied, and a clone the application's executor then dropped at shutdownNow() was heard
    // as "executor rejected". Now copied as it is released, as at the decision: the 503 is heard,
    // and the dropped retry's permit goes back to the host's bucket (two, never refilled).
    HoldingExecutor executor = new HoldingExecutor();
    configureRateLimited(
        TestEngines.neverRefilled(2),
        time,
        new OkHttpClient.Builder().dispatcher(new okhttp3.Dispatcher(executor)));
    server.enqueue(status(503).body("busy"), ok("next"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/retried")), heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.hold.set(true);
    time.runHeldTasks(); // the wait ends: the retry's clone is handed to the executor, kept
    await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);
    assertThat(executor.shutdownNow()).as("dropped, never run").hasSize(1);
    await().atMost(Duration.ofSeconds(10)).until(executor::isTerminated);
    time.runHeldTasks(); // the agent's look at the hand-over

    assertThat(heard.await()).isEqualTo("503 busy");
    assertThat(heard.reports).hasValue(1);
    assertThat(retrier.running()).isZero();
    assertThat(server.requestCount()).isEqualTo(1);

    client = client.newBuilder().dispatcher(new okhttp3.Dispatcher()).build();
    Heard next = new Heard();
    retrier.enqueue(client.newCall(get("/next")), next, client.dispatcher());
    assertThat(next.await()).as("the dropped retry's permit, given back").isEqualTo("200 next");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @ParameterizedTest(name = "dropped at shutdownNow (else refused at shutdown): {0}")
  @ValueSource(booleans = {true, false})
  void aCancelDuringTheWaitTheApplicationsExecutorDropsIsHeardOnceAsARefusedCall(boolean dropped)
      throws Exception {
    // The application cancelled the call during its retry's wait: the clone that tells it so was
    // handed to the dispatcher's executor, which kept it and dropped it at shutdownNow(): never
    // told. Now told as when that executor refuses it (shut down before), OkHttp's refusal.
    String expected = plainCallRefusedByItsShutDownExecutor();
    HoldingExecutor executor = new HoldingExecutor();
    configure(
        b -> b, new OkHttpClient.Builder().dispatcher(new okhttp3.Dispatcher(executor)), false);
    server.enqueue(status(503));
    server.otherwise(ok("never"));
    time.holdTasks();
    Call call = client.newCall(get("/wait"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    if (dropped) {
      executor.hold.set(true);
    } else {
      executor.shutdown();
    }
    call.cancel();
    retrier.cancel(call);
    time.runHeldTasks(); // the clone that tells the cancel is handed over
    if (dropped) {
      await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);
      assertThat(executor.shutdownNow()).as("dropped, never run").hasSize(1);
      await().atMost(Duration.ofSeconds(10)).until(executor::isTerminated);
      time.runHeldTasks(); // the agent's look at the hand-over
    }

    assertThat(heard.await()).isEqualTo(expected);
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("the first attempt only").isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CANCELLED);
  }

  @Test
  void aCallTimeoutsEndDuringTheWaitTheApplicationsExecutorDropsIsHeardOnce() throws Exception {
    // The call's timeout (real, 1 s) ran out during its retry's wait: okio's watchdog hands the
    // call's end to the dispatcher's executor, which kept it and dropped it at shutdownNow():
    // the callback never heard, the call never ended. Now told as when the executor refuses that
    // hand-over: OkHttp's timeout, once, on the agent's thread.
    HoldingExecutor executor = new HoldingExecutor();
    configure(
        b -> b,
        new OkHttpClient.Builder()
            .callTimeout(1, TimeUnit.SECONDS)
            .dispatcher(new okhttp3.Dispatcher(executor)),
        false);
    server.enqueue(status(503));
    server.otherwise(ok("never"));
    time.holdTasks();
    Call call = client.newCall(get("/wait"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.hold.set(true);
    await()
        .atMost(Duration.ofSeconds(10))
        .alias("the timeout's end handed to the executor")
        .until(() -> executor.held.size() == 1);

    assertThat(executor.shutdownNow()).as("dropped, never run").hasSize(1);
    await().atMost(Duration.ofSeconds(10)).until(executor::isTerminated);
    time.runHeldTasks(); // the agent's look at the hand-over

    assertThat(heard.await()).isEqualTo("java.io.InterruptedIOException: timeout");
    assertThat(heard.reports).hasValue(1);
    assertThat(call.isCanceled()).isTrue();
    assertThat(server.requestCount()).as("the first attempt only").isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CALL_TIMEOUT);
  }

  @Test
  void anErrorOfOursAfterTheWaitWhoseTellingTheApplicationsExecutorDropsIsHeardOnce()
      throws Exception {
    // Our own failure as the retry went on (the engine's clock) ends the call and hands its
    // telling to the dispatcher's executor, which kept it and dropped it at shutdownNow(). The
    // watch of that hand-over stopped at its first look, the call ended already (finish() comes
    // before the hand-over): the callback never heard. Now told once, on the agent's thread.
    AtomicBoolean clockFails = new AtomicBoolean();
    HoldingExecutor executor = new HoldingExecutor();
    configureFaulty(
        clockFails, new OkHttpClient.Builder().dispatcher(new okhttp3.Dispatcher(executor)));
    server.enqueue(status(503), ok("never"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/wait")), heard, client.dispatcher());
    awaitTheRetrysWait();
    clockFails.set(true);
    executor.hold.set(true);
    Thread scheduler = runHeldTasksApart(); // the wait ends: our failure, its telling handed over
    scheduler.join(10_000);
    assertThat(executor.held).as("the telling, kept by the executor").hasSize(1);
    clockFails.set(false);

    assertThat(executor.shutdownNow()).as("dropped, never run").hasSize(1);
    await().atMost(Duration.ofSeconds(10)).until(executor::isTerminated);
    time.runHeldTasks(); // the agent's look at the hand-over

    assertThat(heard.await()).isEqualTo("java.io.IOException: retry-agent: internal error");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  @Test
  void aResponseGivenBackThroughACallerRunsPolicyWhoseOnResponseThrowsIsToldOnceAndLeaves()
      throws Exception {
    // A late wait's end gives the 503 of before the wait back through the dispatcher's executor,
    // a saturated pool whose CallerRunsPolicy runs it on the thread that hands it over. The
    // application's onResponse throws, which leaves the task on purpose (as it leaves OkHttp's
    // run of a call): it came out of execute(), was taken for the executor's refusal, and the
    // telling ran again unguarded (the copy released twice, "Canceled" delivered, the call ended
    // again); the application's exception was swallowed. Now told once, and it leaves onto the
    // thread that ran it, as with OkHttp's own run under that policy.
    CallerRunsExecutor executor = new CallerRunsExecutor();
    configure(
        b -> b.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .dispatcher(new okhttp3.Dispatcher(executor)),
        false);
    time.late(40_000_000_000L);
    server.enqueue(status(503).body("busy"));
    server.otherwise(ok("late"));
    time.holdTasks();
    AtomicInteger responses = new AtomicInteger();
    AtomicInteger failures = new AtomicInteger();
    RuntimeException bug = new IllegalStateException("the application's onResponse");
    Callback callback =
        new Callback() {
          @Override
          public void onFailure(Call call, IOException e) {
            failures.incrementAndGet();
          }

          @Override
          public void onResponse(Call call, Response response) {
            responses.incrementAndGet();
            response.close();
            throw bug;
          }
        };
    retrier.enqueue(client.newCall(get("/retried")), callback, client.dispatcher());
    awaitTheRetrysWait();
    executor.callerRuns.set(true);
    AtomicReference<Throwable> left = new AtomicReference<>();
    Thread scheduler = new Thread(time::runHeldTasks, "fake-scheduler");
    scheduler.setUncaughtExceptionHandler((t, e) -> left.set(e));
    scheduler.start();
    scheduler.join(10_000);

    assertThat(responses).hasValue(1);
    assertThat(failures).hasValue(0);
    assertThat(left.get()).as("left onto the thread that ran it").isSameAs(bug);
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.DEADLINE);
  }

  /**
   * A dispatcher's executor that, while {@link #callerRuns} is set, is saturated: its {@code
   * CallerRunsPolicy} runs each task on the thread that hands it over.
   */
  private static final class CallerRunsExecutor extends java.util.concurrent.ThreadPoolExecutor {
    final AtomicBoolean callerRuns = new AtomicBoolean();

    CallerRunsExecutor() {
      super(
          0,
          Integer.MAX_VALUE,
          60,
          TimeUnit.SECONDS,
          new java.util.concurrent.SynchronousQueue<>(),
          new java.util.concurrent.ThreadPoolExecutor.CallerRunsPolicy());
    }

    @Override
    public void execute(Runnable command) {
      if (callerRuns.get()) {
        getRejectedExecutionHandler().rejectedExecution(command, this);
      } else {
        super.execute(command);
      }
    }
  }

  /** What plain OkHttp's callback hears of a call enqueued on a client shut down. */
  private String plainCallRefusedByItsShutDownExecutor() throws Exception {
    OkHttpClient plain = new OkHttpClient.Builder().build();
    plain.dispatcher().executorService().shutdown();
    Heard heard = new Heard();
    plain.newCall(get("/plain")).enqueue(heard);
    assertThat(heard.reports).as("told on the enqueuing thread").hasValue(1);
    assertThat(server.requestCount()).as("plain: nothing sent").isZero();
    return heard.await();
  }

  @ParameterizedTest(name = "past the call timeout: {0}")
  @ValueSource(booleans = {false, true})
  void aFailureOfBeforeALateWaitQueuedBehindTheHostsSlotsIsHeardAsThroughItsRun(boolean timedOut)
      throws Exception {
    // As the two tests above, but the reset's clone waited in OkHttp's queue, the host's one slot
    // taken by another call of the application's (held by the executor), so the telling went to a
    // dispatcher thread (tellEndedInQueue), which the executor held too: a cancel meanwhile, or
    // the call's timeout (real, 3 s) running out. The callback heard the reset after its own
    // cancel (plain OkHttp: "Canceled"), or past its timeout (plain OkHttp: "timeout"), and the
    // listeners said the deadline.
    HoldingExecutor executor = new HoldingExecutor();
    okhttp3.Dispatcher dispatcher = new okhttp3.Dispatcher(executor);
    dispatcher.setMaxRequestsPerHost(1);
    configure(
        b -> b.deadline(Duration.ofSeconds(10)),
        new OkHttpClient.Builder()
            .callTimeout(timedOut ? 3 : 30, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false)
            .dispatcher(dispatcher),
        false);
    time.late(40_000_000_000L);
    server.enqueue(reset());
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    executor.hold.set(true);
    OkHttpClient other = new OkHttpClient.Builder().dispatcher(dispatcher).build();
    Heard otherHeard = new Heard();
    other.newCall(get("/other")).enqueue(otherHeard); // takes the host's slot, held
    await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 1);
    time.runHeldTasks(); // the wait ends past the deadline: the failure's clone is queued
    await().atMost(Duration.ofSeconds(10)).until(() -> executor.held.size() == 2);
    assertThat(dispatcher.queuedCallsCount()).as("the clone waits for the slot").isEqualTo(1);
    assertThat(heard.outcome).isNotDone();

    Heard without = timedOut ? plainCallTimedOut(3) : null;
    if (!timedOut) {
      call.cancel();
    }
    executor.release();

    if (timedOut) {
      assertEndedAsPlainOkHttpsTimedOutCall(heard, without, call);
      assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CALL_TIMEOUT);
    } else {
      assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
      assertThat(heard.thread).startsWith("OkHttp ");
      assertThat(heard.reports).hasValue(1);
      assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CANCELLED);
    }
    assertThat(otherHeard.await()).isEqualTo("200 late");
    await().atMost(Duration.ofSeconds(10)).until(() -> dispatcher.runningCallsCount() == 0);
    assertThat(dispatcher.queuedCallsCount()).isZero();
    assertThat(heard.reports).as("heard once, the clone's own run not heard").hasValue(1);
    assertThat(server.requestCount())
        .as("the first attempt, the other call, plain OkHttp's: the clone sent nothing")
        .isEqualTo(timedOut ? 3 : 2);
    assertThat(retrier.running()).isZero();
    if (!timedOut) {
      assertThat(plainCallCancelledBeforeItsCallbackHeard())
          .as("plain OkHttp, a call cancelled before its callback heard of it")
          .isEqualTo("java.io.IOException: Canceled");
    }
  }

  @ParameterizedTest(name = "a failure before the wait: {0}")
  @ValueSource(booleans = {false, true})
  void aListenerThrowingAsALateWaitsEndIsDecidedStillLetsTheCallbackHearIt(boolean failed)
      throws Exception {
    // The give-up of a call whose retry's wait ended late is decided where the callback hears of
    // it, on a dispatcher thread: a response's copy given back (tellGivenBack), a failure thrown
    // by the interceptor of a clone OkHttp runs (attempt). A listener's Error there (one the
    // listeners let through) left the task and the callback never heard of the call (the copy),
    // or it heard OkHttp's "canceled due to java.lang.InternalError" (the failure, OkHttp 4 on;
    // 3.12 catches only an IOException there, and it heard nothing).
    List<String> errors = new CopyOnWriteArrayList<>();
    engine =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                b -> b.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
                Policy.defaults().budget(),
                CircuitBreakerPolicy.defaults(),
                Policy.defaults().rateLimit())
            .errors(errors::add)
            .listener(
                new dev.retryagent.engine.RetryListener() {
                  @Override
                  public void onGiveUp(RetryEvent e) {
                    throw new InternalError("a listener's, injected");
                  }
                })
            .build();
    retrier = new AsyncRetrier(engine);
    client =
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false)
            .addInterceptor(retrier.interceptor())
            .build();
    time.late(40_000_000_000L);
    server.enqueue(failed ? reset() : status(503).body("busy"));
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    time.runHeldTasks();

    if (failed) {
      assertThat(heard.await()).startsWith("java.net.SocketException: ");
    } else {
      assertThat(heard.await()).isEqualTo("503 busy");
    }
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(errors).singleElement().asString().contains("after a late retry wait");
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
  }

  @Test
  void aCancelAfterALateWaitsEndWasDecidedLeavesItAsDecidedThoughAListenerThrows()
      throws Exception {
    // The late end of a reset is decided in the clone's run as the deadline's (the listeners'
    // give-up); the application cancels the call as it is told (from its listener, here), which
    // then throws. The callback heard "Canceled" (whether a cancel had come since was asked after
    // the throw), the listeners the deadline; plain OkHttp tells a call whose failure was decided
    // before the cancel that failure.
    List<String> errors = new CopyOnWriteArrayList<>();
    AtomicReference<Call> theCall = new AtomicReference<>();
    engine =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                r -> r.deadline(Duration.ofSeconds(10)),
                Policy.defaults().budget(),
                CircuitBreakerPolicy.defaults(),
                Policy.defaults().rateLimit())
            .errors(errors::add)
            .listener(TestEngines.recorder(events))
            .listener(
                new dev.retryagent.engine.RetryListener() {
                  @Override
                  public void onGiveUp(RetryEvent e) {
                    theCall.get().cancel();
                    throw new InternalError("a listener's, injected");
                  }
                })
            .build();
    retrier = new AsyncRetrier(engine);
    client =
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false)
            .addInterceptor(retrier.interceptor())
            .build();
    time.late(40_000_000_000L);
    server.enqueue(reset());
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    theCall.set(call);
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    time.runHeldTasks();

    assertThat(heard.await()).startsWith("java.net.SocketException: ");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.DEADLINE);
    assertThat(errors).singleElement().asString().contains("after a late retry wait");
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
  }

  @ParameterizedTest(name = "answered ahead: {0}, a listener throws: {1}")
  @CsvSource({"true,false", "true,true", "false,true"})
  void aCancelAsAnInterceptorAheadEndsALateWaitsCloneIsHeardAsTheListenersHearIt(
      boolean answered, boolean listenerThrows) throws Exception {
    // The retry's wait ended past the deadline (the engine's clock 40 s late): the reset of before
    // it is told through a clone, whose run an interceptor of the application's ahead of ours
    // ended without reaching ours, after it cancelled the call: it answered the clone itself (a
    // cache, say), or failed it. The late end is decided where the callback is told then
    // (deliverResponse, deliverFailure), as a cancel: the callback heard the interceptor's answer
    // (plain OkHttp fails a response that comes after a cancel, "Canceled"), or, a listener
    // throwing as the end was decided, the interceptor's failure (told by our own failure's
    // path); the listeners heard a cancel.
    List<String> errors = new CopyOnWriteArrayList<>();
    RetryEngine.Builder b =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                r -> r.deadline(Duration.ofSeconds(10)),
                Policy.defaults().budget(),
                CircuitBreakerPolicy.defaults(),
                Policy.defaults().rateLimit())
            .errors(errors::add)
            .listener(TestEngines.recorder(events));
    if (listenerThrows) {
      b.listener(
          new dev.retryagent.engine.RetryListener() {
            @Override
            public void onGiveUp(RetryEvent e) {
              throw new InternalError("a listener's, injected");
            }
          });
    }
    engine = b.build();
    retrier = new AsyncRetrier(engine);
    AtomicReference<Call> theCall = new AtomicReference<>();
    AtomicInteger passes = new AtomicInteger();
    client =
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false)
            .addInterceptor(
                chain -> {
                  if (passes.incrementAndGet() == 1) {
                    return chain.proceed(chain.request());
                  }
                  theCall.get().cancel(); // the application's cancel, as the clone runs
                  if (!answered) {
                    throw new IOException("the interceptor's own");
                  }
                  return new Response.Builder()
                      .request(chain.request())
                      .protocol(okhttp3.Protocol.HTTP_1_1)
                      .code(200)
                      .message("OK")
                      .body(aBodyThatOnClose("ahead", () -> {}))
                      .build();
                })
            .addInterceptor(retrier.interceptor())
            .build();
    time.late(40_000_000_000L);
    server.enqueue(reset());
    server.otherwise(ok("late"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    theCall.set(call);
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    awaitTheRetrysWait();
    time.runHeldTasks(); // the wait ends past the deadline: the reset's clone runs

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(passes).as("the clone ran").hasValue(2);
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
    assertTheListenersHeardWhatTheCallbackHeard(GiveUpReason.CANCELLED);
    if (listenerThrows) {
      assertThat(errors).singleElement().asString().contains("after a late retry wait");
    } else {
      assertThat(errors).isEmpty();
    }
  }

  @Test
  void aLateWaitEndingAfterTheClientShutDownEndsWithTheEarlierFailureAsWithoutTheAgent()
      throws Exception {
    // The retry's wait ended past the call's deadline (the engine's clock 40 s late) after the
    // application shut the dispatcher's executor down: the call ends with the attempt before the
    // wait, as without the agent, where plain OkHttp had told that attempt's failure before the
    // shutdown. It was told through a clone OkHttp's shut-down executor refused, and the callback
    // heard "executor rejected", a failure the call never had.
    OkHttpClient plain = new OkHttpClient.Builder().retryOnConnectionFailure(false).build();
    server.enqueue(reset());
    Heard without = new Heard();
    plain.newCall(get("/wait")).enqueue(without);
    String expected = without.await();
    plain.dispatcher().executorService().shutdown();
    assertThat(server.requestCount()).isEqualTo(1);
    configure(
        b -> b.deadline(Duration.ofSeconds(10)),
        new OkHttpClient.Builder().retryOnConnectionFailure(false),
        false);
    time.late(40_000_000_000L);
    server.enqueue(reset());
    server.otherwise(ok("never"));

    Heard heard = enqueueThenShutDownDuringTheRetrysWait();

    assertThat(heard.await()).isEqualTo(expected).startsWith("java.net.SocketException: ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("one request each, nothing more").isEqualTo(2);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  @Test
  void aLateWaitEndingAfterTheClientShutDownEndsWithTheEarlierResponseAsWithoutTheAgent()
      throws Exception {
    // As above, after a 503 whose copy was kept for the wait: plain OkHttp told the 503.
    OkHttpClient plain = new OkHttpClient.Builder().build();
    server.enqueue(status(503).body("busy"));
    Heard without = new Heard();
    plain.newCall(get("/wait")).enqueue(without);
    String expected = without.await();
    plain.dispatcher().executorService().shutdown();
    configure(
        b -> b.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
        new OkHttpClient.Builder(),
        false);
    time.late(40_000_000_000L);
    server.enqueue(status(503).body("busy"));
    server.otherwise(ok("never"));

    Heard heard = enqueueThenShutDownDuringTheRetrysWait();

    assertThat(heard.await()).isEqualTo(expected).isEqualTo("503 busy");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("one request each, nothing more").isEqualTo(2);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  @Test
  void aCallTimeoutDuringTheWaitOfAClientShutDownIsNeverToldOnOkiosWatchdog() throws Exception {
    // The application shut the dispatcher's executor down while the retry waited; its callTimeout
    // (real, 3 s) then ran out on okio's watchdog, whose hand-off to the refusing executor fell
    // back to the watchdog itself: the application's callback (and its EventListener's canceled)
    // ran on the thread that times out every OkHttp call of the JVM, which its callback could
    // block. Now the call ends on the agent's scheduler, as the other ends a shut-down dispatcher
    // refuses (here held: run on this thread).
    configure(b -> b, new OkHttpClient.Builder().callTimeout(3, TimeUnit.SECONDS), false);
    assertCallTimeoutNotToldOnTheWatchdog(true);
  }

  @Test
  void aCallTimeoutDuringTheWaitOfAClientWithADirectExecutorIsNeverToldOnOkiosWatchdog()
      throws Exception {
    // A dispatcher whose executor runs each task on the thread that hands it over (a direct
    // executor, as tests wire OkHttp): the watchdog's hand-off ran the call's end, the callback
    // included, on okio's watchdog. Now on the agent's scheduler (here held: run on this thread).
    configure(
        b -> b,
        new OkHttpClient.Builder()
            .callTimeout(3, TimeUnit.SECONDS)
            .dispatcher(new okhttp3.Dispatcher(new DirectExecutor())),
        false);
    assertCallTimeoutNotToldOnTheWatchdog(false);
  }

  /**
   * A call of {@link #client} (callTimeout 3 s) whose retry waits, held, until its timeout runs out
   * ({@code shutDown}: the dispatcher's executor shut down during the wait): its callback hears the
   * timeout once, from the task the timeout scheduled (run here), never on okio's watchdog.
   */
  private void assertCallTimeoutNotToldOnTheWatchdog(boolean shutDown) throws Exception {
    server.enqueue(status(503));
    server.otherwise(ok("retried"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    AtomicReference<Thread> toldOn = new AtomicReference<>();
    Callback callback =
        new Callback() {
          @Override
          public void onFailure(Call c, IOException e) {
            toldOn.set(Thread.currentThread());
            heard.onFailure(c, e);
          }

          @Override
          public void onResponse(Call c, Response r) throws IOException {
            toldOn.set(Thread.currentThread());
            heard.onResponse(c, r);
          }
        };
    retrier.enqueue(call, callback, client.dispatcher());
    awaitTheRetrysWait();
    if (shutDown) {
      client.dispatcher().executorService().shutdown();
    }
    await()
        .atMost(Duration.ofSeconds(20))
        .alias("the timeout's end, held, or the callback told on the watchdog")
        .until(() -> time.heldTasks() == 2 || heard.outcome.isDone());
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("java.io.InterruptedIOException: timeout");
    assertThat(toldOn.get()).as("the thread told").isSameAs(Thread.currentThread());
    assertThat(heard.reports).hasValue(1);
    assertThat(call.isCanceled()).isTrue();
    assertThat(server.requestCount()).as("the first attempt only").isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  @Test
  void whatLeavesTheCallsEndAtItsCallTimeoutOnOkiosWatchdogLeavesTheWatchdogRunning()
      throws Exception {
    // The dispatcher's executor shut down during the retry's wait and the agent's scheduler
    // refusing too: the call's end at its callTimeout (real, 3 s) has no thread but okio's
    // watchdog, and the application's onFailure threw there. It left timedOut() onto the
    // watchdog, whose thread it ended: okio starts no other while its queue holds timeouts, and
    // no OkHttp call of the JVM timed out any more. Now the callback's exception goes to the
    // thread's uncaught-exception handler, as it would leave a thread, and the watchdog lives on.
    configure(b -> b, new OkHttpClient.Builder().callTimeout(3, TimeUnit.SECONDS), false);
    server.enqueue(status(503));
    server.otherwise(ok("retried"));
    time.holdTasks();
    Call call = client.newCall(get("/retried"));
    CompletableFuture<String> heard = new CompletableFuture<>();
    AtomicInteger reports = new AtomicInteger();
    retrier.enqueue(
        call,
        new Callback() {
          @Override
          public void onFailure(Call c, IOException e) {
            reports.incrementAndGet();
            heard.complete(e.getClass().getName() + ": " + e.getMessage());
            throw new IllegalStateException("the application's own");
          }

          @Override
          public void onResponse(Call c, Response r) {
            reports.incrementAndGet();
            r.close();
            heard.complete("a response");
          }
        },
        client.dispatcher());
    awaitTheRetrysWait();
    client.dispatcher().executorService().shutdown();
    time.refuse(new java.util.concurrent.RejectedExecutionException("the scheduler shut down"));

    assertThat(heard.get(20, TimeUnit.SECONDS))
        .isEqualTo("java.io.InterruptedIOException: timeout");
    assertThat(call.isCanceled()).isTrue();
    Heard plain = plainCallTimedOut(1); // with the watchdog gone: not heard within 21 s
    assertThat(plain.await()).isEqualTo("java.io.InterruptedIOException: timeout");
    assertThat(reports).hasValue(1);
    assertThat(retrier.running()).isZero();
  }

  @ParameterizedTest(name = "during the retry''s {0}, an Error: {1}")
  @CsvSource({"wait, false", "wait, true", "attempt, false", "attempt, true"})
  void anEventListenerThatThrowsAsTheAgentCancelsAtTheCallTimeoutLeavesOnceTheCallbackHeard(
      String during, boolean error) throws Exception {
    // The call's callTimeout (real, 3 s) ran out during the retry's wait (the agent cancels the
    // call on a dispatcher thread) or during the retry's attempt (OkHttp cancels the clone, and
    // the agent the call itself as the attempt's failure is told), and the application's
    // EventListener.canceled threw there (OkHttp calls it from cancel()). It was said as the
    // agent's internal error and never seen; now the callback hears the timeout once, then the
    // listener's exception goes to the thread's uncaught-exception handler, as without the agent
    // it leaves OkHttp's timeout (okio's watchdog, whose thread it ends), and the watchdog serves
    // later calls. (The clone's own cancel on okio's watchdog is OkHttp's: its listener is left
    // quiet here, or it would end the watchdog of this JVM.)
    boolean inTheWait = during.equals("wait");
    Throwable thrown =
        error
            ? new AssertionError("the application's listener")
            : new IllegalStateException("the application's listener");
    AtomicReference<Call> throwsFor = new AtomicReference<>();
    try (UncaughtRecordingDispatcher threads = new UncaughtRecordingDispatcher()) {
      configure(
          b -> b,
          new OkHttpClient.Builder()
              .callTimeout(3, TimeUnit.SECONDS)
              .dispatcher(threads.dispatcher)
              .eventListener(throwingFromCanceled(throwsFor, thrown)),
          false);
      if (inTheWait) {
        server.enqueue(status(503));
        server.otherwise(ok("retried"));
        time.holdTasks();
      } else {
        server.enqueue(status(503), ok("too late").delay(60_000));
      }
      Call call = client.newCall(get("/retried"));
      throwsFor.set(call);
      Heard heard = new Heard();
      retrier.enqueue(call, heard, threads.dispatcher);
      if (inTheWait) {
        awaitTheRetrysWait();
      }

      assertThat(heard.outcome.get(30, TimeUnit.SECONDS))
          .isEqualTo("java.io.InterruptedIOException: timeout");
      await().atMost(Duration.ofSeconds(10)).until(() -> threads.uncaught.contains(thrown));
      assertThat(heard.thread).startsWith("OkHttp ");
      assertThat(call.isCanceled()).isTrue();
      assertThat(threads.uncaught).containsExactly(thrown);
      assertThat(plainCallTimedOut(1).await()).isEqualTo("java.io.InterruptedIOException: timeout");
      assertThat(heard.reports).hasValue(1);
      assertThat(server.awaitRequests(inTheWait ? 2 : 3))
          .as("ours, then plain OkHttp's")
          .isEqualTo(requests(inTheWait ? 2 : 3));
      assertThat(retrier.running()).isZero();
      assertThat(engine.pendingAsyncRetries()).isZero();
    }
  }

  @Test
  void anEventListenerThatThrowsAsTheAgentsHookCancelsTheCallOfACancelledRetryStaysOutOfTheHook()
      throws Exception {
    // OkHttp cancels a retry's clone (its call timeout, on okio's watchdog), and the agent's hook
    // at the start of the clone's cancel() cancels the call itself, where the application's
    // EventListener.canceled threw: out of the hook, it was said as the agent's internal error.
    // Now it leaves to the thread's uncaught-exception handler, as without the agent it leaves
    // OkHttp's timeout, and the clone's cancel goes on; the callback hears once. (As the hook,
    // then cancel()'s body, on a thread of the test's.)
    assumeTrue(listenersHearCancels(), "EventListener.canceled: OkHttp 4.3 on");
    IllegalStateException thrown = new IllegalStateException("the application's listener");
    AtomicReference<Call> throwsFor = new AtomicReference<>();
    List<Call> clones = new CopyOnWriteArrayList<>();
    configure(
        b -> b,
        new OkHttpClient.Builder()
            .eventListener(
                new EventListener() {
                  @Override
                  public void callStart(Call c) {
                    if (c != throwsFor.get()) {
                      clones.add(c);
                    }
                  }

                  // EventListener.canceled, OkHttp 4.3 on (no @Override: compiled against 3.14)
                  public void canceled(Call c) {
                    if (c == throwsFor.get()) {
                      throw thrown;
                    }
                  }
                }),
        false);
    server.enqueue(status(503), ok("too late").delay(60_000));
    Call call = client.newCall(get("/retried"));
    throwsFor.set(call);
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> server.requestCount() == 2);
    Call clone = clones.get(0);

    List<Throwable> uncaught = new CopyOnWriteArrayList<>();
    AtomicReference<Throwable> leftCancel = new AtomicReference<>();
    Thread canceller =
        new Thread(
            () -> {
              try {
                retrier.cancel(clone); // the agent's hook
                clone.cancel(); // cancel()'s own body
              } catch (RuntimeException | Error e) {
                leftCancel.set(e);
              }
            });
    canceller.setUncaughtExceptionHandler((t, e) -> uncaught.add(e));
    canceller.start();
    canceller.join(10_000);

    assertThat(leftCancel.get()).as("out of the hook").isNull();
    assertThat(uncaught).containsExactly(thrown);
    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.reports).hasValue(1);
    assertThat(call.isCanceled()).isTrue();
  }

  @Test
  void
      anEventListenerThatThrowsAsARetryQueuedAtTheCallTimeoutIsCancelledLeavesOnceTheCallbackHeard()
          throws Exception {
    // At the call's deadline the agent cancels the retry's clone queued behind the host's taken
    // slot, and the application's EventListener.canceled threw for it: the callback was told by
    // the path of the agent's own failure, the listener's exception said as the agent's internal
    // error. Now the callback hears the timeout once, and the listener's exception leaves to the
    // uncaught-exception handler of the thread that cancelled (the agent's scheduler's; here a
    // thread of the test's), which goes on.
    assumeTrue(listenersHearCancels(), "EventListener.canceled: OkHttp 4.3 on");
    IllegalStateException thrown = new IllegalStateException("the application's listener");
    AtomicReference<Call> quiet = new AtomicReference<>();
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    List<String> errors =
        configureFaulty(
            new AtomicBoolean(), // a clock that never fails
            holdingTheSlot(slotTaken, slotFree)
                .callTimeout(30, TimeUnit.SECONDS)
                .eventListener(throwingFromTheRetrysClone(quiet, thrown)));
    Call call = client.newCall(get("/retried"));
    quiet.set(call);
    Heard heard = new Heard();
    Heard slot = new Heard();
    List<Throwable> uncaught = new CopyOnWriteArrayList<>();
    try {
      enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken);
      time.runHeldTasks(); // the retry's wait ends: its clone waits in the queue for the slot
      await().atMost(Duration.ofSeconds(5)).until(() -> time.heldTasks() == 1); // the deadline
      Thread scheduler = new Thread(time::runHeldTasks, "fake-scheduler");
      scheduler.setUncaughtExceptionHandler((t, e) -> uncaught.add(e));
      scheduler.start();
      scheduler.join(10_000);

      assertThat(heard.await()).isEqualTo("java.io.InterruptedIOException: timeout");
      assertThat(heard.thread).startsWith("OkHttp ");
      assertThat(uncaught).containsExactly(thrown);
      assertThat(errors).as("not the agent's error").isEmpty();
      assertThat(call.isCanceled()).isTrue();
    } finally {
      slotFree.countDown();
    }
    assertTheQueuedCloneRanAtLastUnheardAndSentNothing(slot, heard);
  }

  /** Whether this OkHttp tells its event listeners of a cancel ({@code canceled}, 4.3 on). */
  private static boolean listenersHearCancels() {
    try {
      EventListener.class.getMethod("canceled", Call.class);
      return true;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  /**
   * An event listener whose {@code canceled} throws {@code thrown} for the call {@code of} holds.
   */
  private static EventListener throwingFromCanceled(AtomicReference<Call> of, Throwable thrown) {
    assumeTrue(listenersHearCancels(), "EventListener.canceled: OkHttp 4.3 on");
    return new EventListener() {
      // EventListener.canceled (no @Override: compiled against 3.14)
      public void canceled(Call c) {
        if (c == of.get()) {
          OkHttpCallbacks.<RuntimeException>unchecked(thrown);
        }
      }
    };
  }

  /**
   * An event listener whose {@code canceled} throws {@code thrown} for the clone a retry of {@code
   * /retried} runs on, not for the application's call {@code quiet} holds.
   */
  private static EventListener throwingFromTheRetrysClone(
      AtomicReference<Call> quiet, RuntimeException thrown) {
    return new EventListener() {
      // EventListener.canceled (no @Override: compiled against 3.14)
      public void canceled(Call c) {
        if (c != quiet.get() && c.request().url().encodedPath().equals("/retried")) {
          throw thrown; // the retry's clone
        }
      }
    };
  }

  /** Runs each task on the thread that hands it over. */
  private static final class DirectExecutor extends java.util.concurrent.AbstractExecutorService {
    private volatile boolean shutDown;

    @Override
    public void execute(Runnable command) {
      command.run();
    }

    @Override
    public void shutdown() {
      shutDown = true;
    }

    @Override
    public List<Runnable> shutdownNow() {
      shutDown = true;
      return new java.util.ArrayList<>();
    }

    @Override
    public boolean isShutdown() {
      return shutDown;
    }

    @Override
    public boolean isTerminated() {
      return shutDown;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
      return shutDown;
    }
  }

  @Test
  void aRetryThatRunsPastTheCallTimeoutEndsAsOkHttpsTimeoutEndsAPlainCall() throws Exception {
    // OkHttp's callTimeout (real, 3 s) runs out during the retry's attempt, which the server
    // answers only long after: on execute() and enqueue() the call ends as plain OkHttp's that the
    // server holds as long (the clone carries the call's deadline): the same exception, an
    // enqueued call's callback on a dispatcher thread named as OkHttp's, the call cancelled,
    // nothing more sent. Pinned (it held before).
    configure(b -> b, new OkHttpClient.Builder().callTimeout(3, TimeUnit.SECONDS), false);
    server.otherwise(ok("late"));

    server.enqueue(status(503), ok("too late").delay(60_000));
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    assertThat(heard.outcome.get(30, TimeUnit.SECONDS))
        .isEqualTo("java.io.InterruptedIOException: timeout");
    assertEndedAsPlainOkHttpsTimedOutCall(heard, plainCallTimedOut(3), call);

    server.enqueue(status(503), ok("too late").delay(60_000));
    Call executed = client.newCall(get("/retried"));
    Throwable failure = org.assertj.core.api.Assertions.catchThrowable(executed::execute);
    assertThat(failure).isInstanceOf(java.io.InterruptedIOException.class).hasMessage("timeout");
    assertThat(executed.isCanceled()).isTrue();
    // (The give-up's reason is read on the engine's clock, which the network's time never moves
    // here: not looked at.)
    assertThat(server.awaitRequests(5))
        .as("two of each of ours, plain OkHttp's")
        .isEqualTo(requests(5));
  }

  /**
   * {@code call}'s callback heard what plain OkHttp's call whose timeout ran out heard ({@code
   * without}), where it heard it, once, and the call says it is cancelled.
   */
  private static void assertEndedAsPlainOkHttpsTimedOutCall(Heard heard, Heard without, Call call)
      throws Exception {
    assertThat(heard.await())
        .isEqualTo(without.await())
        .isEqualTo("java.io.InterruptedIOException: timeout");
    assertThat(heard.thread).isEqualTo(without.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(call.isCanceled()).isTrue();
  }

  /**
   * A call of plain OkHttp (no agent) with a {@code callTimeout} of {@code seconds}, which the
   * server answers only long after it: what OkHttp tells a call its timeout ended, and where. Begun
   * after a call of ours with the same timeout, it has heard of its own once ours has run out.
   */
  private Heard plainCallTimedOut(long seconds) throws Exception {
    OkHttpClient plain = new OkHttpClient.Builder().callTimeout(seconds, TimeUnit.SECONDS).build();
    server.enqueue(ok("too late").delay(60_000));
    Heard without = new Heard();
    try {
      plain.newCall(get("/plain")).enqueue(without);
      without.outcome.get(seconds + 20, TimeUnit.SECONDS);
    } finally {
      plain.dispatcher().executorService().shutdown();
      plain.connectionPool().evictAll();
    }
    return without;
  }

  /** A dispatcher's executor that keeps the tasks handed to it while {@link #hold} is set. */
  private static final class HoldingExecutor extends java.util.concurrent.ThreadPoolExecutor {
    final AtomicBoolean hold = new AtomicBoolean();
    final List<Runnable> held = new CopyOnWriteArrayList<>();
    // Accepts and drops each task, as a DiscardPolicy on a full queue does, and never terminates.
    final AtomicBoolean discard = new AtomicBoolean();

    HoldingExecutor() {
      super(
          0,
          Integer.MAX_VALUE,
          60,
          TimeUnit.SECONDS,
          new java.util.concurrent.SynchronousQueue<>());
    }

    // Refuses each task, as a full executor's AbortPolicy does, though not shut down.
    final AtomicBoolean refuse = new AtomicBoolean();

    @Override
    public void execute(Runnable command) {
      if (refuse.get()) {
        throw new java.util.concurrent.RejectedExecutionException("full");
      }
      if (discard.get()) {
        return;
      }
      if (hold.get()) {
        held.add(command);
      } else {
        super.execute(command);
      }
    }

    /** Drops what it keeps, as an executor with a queue drops what it never ran. */
    @Override
    public List<Runnable> shutdownNow() {
      hold.set(false); // refuses from now on, as a shut-down executor does
      List<Runnable> dropped = new java.util.ArrayList<>(held);
      held.clear();
      dropped.addAll(super.shutdownNow());
      return dropped;
    }

    /** Runs what was kept, and every task from now on. */
    void release() {
      hold.set(false);
      for (Runnable r : held) {
        super.execute(r);
      }
    }
  }

  @Test
  void aRetryQueuedBehindTheHostsTakenSlotsEndsAtTheCallTimeoutAsOkHttpsTimeoutWould()
      throws Exception {
    // The retry's clone waited in the dispatcher's queue while the host's one slot was taken, and
    // OkHttp starts a call's timeout only when it runs: the application heard nothing until the
    // slot came free, long past its callTimeout (then "timeout" at once, and a breaker failure).
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    configure(
        b -> b,
        holdingTheSlot(slotTaken, slotFree).callTimeout(30, TimeUnit.SECONDS),
        false,
        // Opens on a second failure of three: the 503, and the clone's timeout were it counted.
        CircuitBreakerPolicy.builder().minimumCalls(3).failureRateThreshold(0.6).build());
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    Heard slot = new Heard();
    try {
      enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken);

      time.advance(TimeUnit.SECONDS.toNanos(1)); // the network's time, which the clock ignores
      // The retry's wait ends and its clone waits in the queue for the slot; then the call's
      // deadline, held meanwhile, comes.
      time.runHeldTasks();
      await().atMost(Duration.ofSeconds(5)).until(() -> time.heldTasks() == 1);
      time.runHeldTasks();

      await()
          .atMost(Duration.ofSeconds(5))
          .alias("the callback hears of the call by its deadline, the slot still taken")
          .until(heard.outcome::isDone);
      assertThat(heard.await()).isEqualTo("java.io.InterruptedIOException: timeout");
      assertThat(heard.thread).startsWith("OkHttp ");
      assertThat(call.isCanceled()).isTrue();
      assertThat(client.dispatcher().queuedCallsCount()).as("the clone").isEqualTo(1);
      List<Long> waits = time.waits();
      assertThat(waits.get(waits.size() - 1))
          .as("ended at the deadline, not before")
          .isGreaterThan(TimeUnit.SECONDS.toNanos(25));
      assertThat(events)
          .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
          .extracting(RetryEvent::reason)
          .containsExactly(GiveUpReason.CALL_TIMEOUT);
    } finally {
      slotFree.countDown();
    }

    assertTheQueuedCloneRanAtLastUnheardAndSentNothing(slot, heard);
    assertThat(engine.breakers())
        .as("nothing reached the server: no failure for the host's breaker")
        .singleElement()
        .satisfies(b -> assertThat(b.state()).isEqualTo(CircuitState.CLOSED));
  }

  @Test
  void aCancelOfARetryQueuedBehindTheHostsTakenSlotsIsHeardAtOnceNotWhenASlotFrees()
      throws Exception {
    // The retry's clone waited in the dispatcher's queue while the host's one slot was taken: the
    // cancel reached it, but OkHttp tells a queued call only when it runs, so the application
    // heard of its cancel when the slot came free, if ever (a long poll may hold it for hours).
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    configure(b -> b, holdingTheSlot(slotTaken, slotFree), false);
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    Heard slot = new Heard();
    try {
      enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken);
      time.runHeldTasks(); // the retry's wait ends: its clone waits in the queue for the slot
      assertThat(client.dispatcher().queuedCallsCount()).isEqualTo(1);

      call.cancel();
      retrier.cancel(call);

      assertTheCancelIsHeardWhileTheSlotIsTaken(heard);
      assertThat(client.dispatcher().queuedCallsCount()).as("the clone").isEqualTo(1);
    } finally {
      slotFree.countDown();
    }

    assertTheQueuedCloneRanAtLastUnheardAndSentNothing(slot, heard);
  }

  @Test
  void aCancelOfARetryQueuedBehindTheHostsTakenSlotsIsHeardAtOnceThoughItsEventListenerThrows()
      throws Exception {
    // The application cancels while the retry's clone waits in the dispatcher's queue, and its
    // EventListener.canceled throws for the clone: the exception left the agent's cancel before
    // the queued clone was ended, so the callback heard of the cancel only when the slot came free
    // (if ever), and the listener's exception was said as the agent's internal error. Now the
    // callback hears at once, and the exception goes to the cancelling thread's
    // uncaught-exception handler, which goes on, as for a cancel at the call's timeout.
    assumeTrue(listenersHearCancels(), "EventListener.canceled: OkHttp 4.3 on");
    IllegalStateException thrown = new IllegalStateException("the application's listener");
    AtomicReference<Call> quiet = new AtomicReference<>();
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    List<String> errors =
        configureFaulty(
            new AtomicBoolean(), // a clock that never fails
            holdingTheSlot(slotTaken, slotFree)
                .eventListener(throwingFromTheRetrysClone(quiet, thrown)));
    Call call = client.newCall(get("/retried"));
    quiet.set(call);
    Heard heard = new Heard();
    Heard slot = new Heard();
    List<Throwable> uncaught = new CopyOnWriteArrayList<>();
    try {
      enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken);
      time.runHeldTasks(); // the retry's wait ends: its clone waits in the queue for the slot
      assertThat(client.dispatcher().queuedCallsCount()).isEqualTo(1);

      Thread cancelling =
          new Thread(
              () -> {
                call.cancel();
                retrier.cancel(call);
              },
              "cancelling");
      cancelling.setUncaughtExceptionHandler((t, e) -> uncaught.add(e));
      cancelling.start();
      cancelling.join(10_000);

      await()
          .atMost(Duration.ofSeconds(5))
          .alias("the callback hears of the cancel, the slot still taken")
          .until(heard.outcome::isDone);
      assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
      assertThat(heard.thread).startsWith("OkHttp ");
      assertThat(uncaught).containsExactly(thrown);
      assertThat(errors).as("not the agent's error").isEmpty();
    } finally {
      slotFree.countDown();
    }
    assertTheQueuedCloneRanAtLastUnheardAndSentNothing(slot, heard);
  }

  @Test
  void aCancelDuringTheWaitIsHeardAtOnceThoughTheHostsSlotsAreTaken() throws Exception {
    // A cancel during the wait is told through a clone whose interceptor throws "Canceled",
    // sending nothing; with the host's slots taken, that clone waited in the dispatcher's queue,
    // and the application heard of its cancel only when a slot came free, if ever (a long poll
    // may hold it for hours). The same for the breaker's and the rate limit's refusals.
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    configure(b -> b, holdingTheSlot(slotTaken, slotFree), false);
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    Heard slot = new Heard();
    try {
      enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken);

      call.cancel(); // during the wait
      retrier.cancel(call);
      time.runHeldTasks(); // the wait, ended: its "Canceled" goes through a clone

      assertTheCancelIsHeardWhileTheSlotIsTaken(heard);
    } finally {
      slotFree.countDown();
    }

    assertTheQueuedCloneRanAtLastUnheardAndSentNothing(slot, heard);
  }

  @Test
  void aRetryEndedInTheQueueGivesItsRetryBackToTheHostsBudget() throws Exception {
    // The retry's clone, ended while it waited in the dispatcher's queue (a cancel here, the
    // call's timeout likewise), sent nothing, but the retry it was for stayed spent: with a
    // budget of one retry, the host's next call got its 503 instead of its retry's 200.
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    configureWithOneRetryASecond(holdingTheSlot(slotTaken, slotFree));
    cancelTheRetryQueuedBehindTheHostsOnlySlot(slotTaken, slotFree, status(503), ok("retried"));

    assertTheHostsNextCallGetsTheBudgetsOneRetry();
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.CANCELLED);
  }

  @Test
  void aRetryEndedInTheQueueGivesItsRateLimitPermitBack() throws Exception {
    // The retry's clone, ended while it waited in the dispatcher's queue (a cancel here, the
    // call's timeout likewise), sent nothing, but the permit its attempt took from the host's
    // bucket stayed used (its attempt had started): with three permits, the first attempt, the
    // call holding the slot and the clone's, the host's next call was refused as rate-limited.
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    configureRateLimited(TestEngines.neverRefilled(3), time, holdingTheSlot(slotTaken, slotFree));
    cancelTheRetryQueuedBehindTheHostsOnlySlot(slotTaken, slotFree, ok("next"));

    Heard next = new Heard();
    retrier.enqueue(client.newCall(get("/next")), next, client.dispatcher());
    assertThat(next.await()).as("the clone's permit, given back").isEqualTo("200 next");
    assertThat(server.requestCount()).isEqualTo(3);
  }

  /**
   * Enqueues {@code call}, answered 503 (its retry's wait then held), then a call to {@code /slot},
   * which takes the host's only slot until the test frees it.
   */
  private void enqueueThenTakeTheHostsOnlySlot(
      Call call, Heard heard, Heard slot, CountDownLatch slotTaken) throws Exception {
    enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken, ok("never"));
  }

  /** As above, the server answering {@code then} after the slot's call. */
  private void enqueueThenTakeTheHostsOnlySlot(
      Call call, Heard heard, Heard slot, CountDownLatch slotTaken, Action... then)
      throws Exception {
    client.dispatcher().setMaxRequestsPerHost(1);
    server.enqueue(status(503), ok("slot"));
    server.enqueue(then);
    time.holdTasks();
    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    client.newCall(get("/slot")).enqueue(slot);
    assertThat(slotTaken.await(10, TimeUnit.SECONDS)).isTrue();
  }

  /**
   * A call to {@code /retried} whose retry's clone waits in the queue behind the host's only slot,
   * cancelled there: its callback hears the cancel; then the slot is freed and the clone runs at
   * last, unheard, sending nothing. The server answers {@code then} after the slot's call.
   */
  private void cancelTheRetryQueuedBehindTheHostsOnlySlot(
      CountDownLatch slotTaken, CountDownLatch slotFree, Action... then) throws Exception {
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    Heard slot = new Heard();
    try {
      enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken, then);
      time.runHeldTasks(); // the retry's wait ends: its clone waits in the queue for the slot
      assertThat(client.dispatcher().queuedCallsCount()).isEqualTo(1);

      call.cancel();
      retrier.cancel(call);

      assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    } finally {
      slotFree.countDown();
    }
    assertTheQueuedCloneRanAtLastUnheardAndSentNothing(slot, heard);
  }

  /**
   * Once the slot is free: the call holding it got its answer, and the clone ended in the queue ran
   * at last without being heard (its callback heard once) or sending anything.
   */
  /**
   * The application's callback hears "Canceled" on OkHttp's thread, the host's slot still taken,
   * and the call gave up as cancelled.
   */
  private void assertTheCancelIsHeardWhileTheSlotIsTaken(Heard heard) throws Exception {
    await()
        .atMost(Duration.ofSeconds(5))
        .alias("the callback hears of the cancel, the slot still taken")
        .until(heard.outcome::isDone);
    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.CANCELLED);
  }

  private void assertTheQueuedCloneRanAtLastUnheardAndSentNothing(Heard slot, Heard heard)
      throws Exception {
    assertThat(slot.await()).isEqualTo("200 slot");
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () -> client.dispatcher().runningCallsCount() == 0 && retrier.attempts().size() == 0);
    assertThat(client.dispatcher().queuedCallsCount()).isZero();
    assertThat(heard.reports).as("the clone, run at last, is not heard").hasValue(1);
    assertThat(server.requestCount()).as("and it sent nothing").isEqualTo(2);
    assertThat(retrier.running()).isZero();
  }

  /** A client on which a call to {@code /slot} holds its host's slot until {@code free}. */
  private static OkHttpClient.Builder holdingTheSlot(CountDownLatch taken, CountDownLatch free) {
    return new OkHttpClient.Builder()
        .addInterceptor(
            chain -> {
              if (chain.request().url().encodedPath().equals("/slot")) {
                taken.countDown();
                try {
                  free.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  throw new java.io.InterruptedIOException();
                }
              }
              return chain.proceed(chain.request());
            });
  }

  /**
   * An engine whose clock throws once {@code clockFails}, as a class missing would, and a client
   * with its interceptor; the engine's errors are returned.
   */
  private List<String> configureFaulty(AtomicBoolean clockFails) {
    return configureFaulty(clockFails, new OkHttpClient.Builder());
  }

  /** As above, the retrier's interceptor last, after {@code before}. */
  private List<String> configureFaulty(AtomicBoolean clockFails, OkHttpClient.Builder before) {
    List<String> errors = new CopyOnWriteArrayList<>();
    dev.retryagent.engine.Clock clock =
        new dev.retryagent.engine.Clock() {
          @Override
          public long nanoTime() {
            if (clockFails.get()) {
              throw new NoClassDefFoundError("missing/Dependency");
            }
            return time.nanoTime();
          }

          @Override
          public long wallMillis() {
            return time.wallMillis();
          }
        };
    engine =
        RetryEngine.builder()
            .clock(clock)
            .sleeper(time)
            .scheduler(time)
            .errors(errors::add)
            .mode(Mode.ENFORCE)
            .policy(Policy.defaults())
            .build();
    retrier = new AsyncRetrier(engine);
    client = before.addInterceptor(retrier.interceptor()).build();
    return errors;
  }

  @Test
  void anErrorWhileReleasingAResponseForARetryLetsTheRetryGoOn() throws Exception {
    // The 503's body fails to close as the agent releases it for the retry it decided (an Error,
    // as a class missing). The retry was told and its budget spent: as in the engine's loops
    // (8b54b1f), the release's failure is said once and the retry goes on, so the retry told is
    // the retry made. Before, the callback heard 'IOException: retry-agent: internal error' at
    // once and the retry told was never made.
    List<String> errors = new CopyOnWriteArrayList<>();
    EventTypes events = new EventTypes();
    configureListened(events, errors);
    client =
        new OkHttpClient.Builder()
            .addInterceptor(retrier.interceptor())
            .addNetworkInterceptor(a503ThatFailsToClose())
            .build();
    server.enqueue(status(503), ok("second"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/503")), heard, client.dispatcher());

    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    assertThat(heard.outcome).isNotDone();
    time.runHeldTasks(); // the retry's wait ends

    assertThat(heard.await()).isEqualTo("200 second");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(2);
    await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
    assertThat(engine.pendingAsyncRetries()).isZero();
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> events.types.contains(RetryEvent.Type.CALL_COMPLETE));
    assertThat(events.types)
        .containsExactly(
            RetryEvent.Type.ATTEMPT,
            RetryEvent.Type.RETRY,
            RetryEvent.Type.ATTEMPT,
            RetryEvent.Type.CALL_COMPLETE);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains("while releasing a response for its retry (java.lang.NoClassDefFoundError at ")
        .contains("the retry goes on");
  }

  private void configureListened(dev.retryagent.engine.RetryListener listener) {
    configureListened(listener, new CopyOnWriteArrayList<>());
  }

  /**
   * Default policy on the fake time, {@code listener} told every event, our own failures' lines in
   * {@code errors}, the retrier last.
   */
  private void configureListened(
      dev.retryagent.engine.RetryListener listener, List<String> errors) {
    engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .errors(errors::add)
            .mode(Mode.ENFORCE)
            .policy(Policy.defaults())
            .listener(listener)
            .build();
    retrier = new AsyncRetrier(engine);
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
  }

  @Test
  void aCancelAsTheRetrysAttemptStartsAfterItsWaitIsHeardCanceledOnceOnADispatcherThread()
      throws Exception {
    // Race hunt: the retry's timer fired and its attempt is starting (told as it starts, on the
    // scheduler's thread) when the application cancels: the clone about to be enqueued must be
    // cancelled, and the callback hear Canceled once, from OkHttp's thread, nothing sent.
    AtomicReference<Call> call = new AtomicReference<>();
    List<String> seen = new CopyOnWriteArrayList<>();
    configureListened(
        new dev.retryagent.engine.RetryListener() {
          @Override
          public void onAttempt(RetryEvent e) {
            seen.add("ATTEMPT " + e.attempt());
            if (e.attempt() == 2) {
              retrier.cancel(call.get()); // the agent's hook on Call.cancel(), then OkHttp's
              call.get().cancel();
            }
          }

          @Override
          public void onCallComplete(RetryEvent e) {
            seen.add("CALL_COMPLETE " + e.reason());
          }
        });
    server.enqueue(status(503), ok("never"));
    time.holdTasks();
    call.set(client.newCall(get("/503")));
    Heard heard = new Heard();
    retrier.enqueue(call.get(), heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);

    time.runHeldTasks(); // the wait ends: the retry's attempt starts

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
    assertThat(engine.pendingAsyncRetries()).isZero();
    await().atMost(Duration.ofSeconds(10)).until(() -> seen.size() == 3);
    assertThat(seen).containsExactly("ATTEMPT 1", "ATTEMPT 2", "CALL_COMPLETE CANCELLED");
  }

  @Test
  void aCancelWhileAListenerBlocksOnTheRetryReturnsAndTheCallbackHearsCanceledOnce()
      throws Exception {
    // A listener stuck on I/O as the retry is decided, on OkHttp's thread: cancel() returns
    // meanwhile (EnqueuedCall.cancel never waits on the call), and once the listener returns the
    // callback hears Canceled once, no retry made, the events in order.
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    EventTypes seen = EventTypes.blockingOnRetry(entered, release);
    configureListened(seen);
    server.enqueue(status(503), ok("never"));
    Call call = client.newCall(get("/503"));
    Heard heard = new Heard();
    try {
      retrier.enqueue(call, heard, client.dispatcher());
      assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
      CompletableFuture<Void> cancelling =
          CompletableFuture.runAsync(
              () -> {
                retrier.cancel(call);
                call.cancel();
              });
      await().atMost(Duration.ofSeconds(10)).until(cancelling::isDone);
      assertThat(heard.outcome).isNotDone();
    } finally {
      release.countDown();
    }

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    await().atMost(Duration.ofSeconds(10)).until(() -> seen.types.size() == 4);
    assertThat(seen.types)
        .containsExactly(
            RetryEvent.Type.ATTEMPT,
            RetryEvent.Type.RETRY,
            RetryEvent.Type.GIVE_UP,
            RetryEvent.Type.CALL_COMPLETE);
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  /** A network interceptor whose 503s have a body that runs {@code onClose} once it is closed. */
  private static Interceptor a503ThatOnClose(Runnable onClose) {
    return chain -> {
      Response r = chain.proceed(chain.request());
      if (r.code() != 503) {
        return r;
      }
      return r.newBuilder().body(aBodyThatOnClose(r.body().string(), onClose)).build();
    };
  }

  /** A body of {@code text} that runs {@code onClose} once it is closed. */
  private static okhttp3.ResponseBody aBodyThatOnClose(String text, Runnable onClose) {
    okio.Buffer content = new okio.Buffer().writeUtf8(text);
    okio.BufferedSource source =
        okio.Okio.buffer(
            new okio.ForwardingSource(content) {
              @Override
              public void close() throws IOException {
                super.close();
                onClose.run();
              }
            });
    return okhttp3.ResponseBody.create(null, content.size(), source);
  }

  /** {@link #a503ThatOnClose}: the close throws an Error (a class missing). */
  private static Interceptor a503ThatFailsToClose() {
    return a503ThatOnClose(
        () -> {
          throw new NoClassDefFoundError("missing/Dependency");
        });
  }

  @Test
  void anErrorWhileReleasingALateAnswerToARetryEndedInTheQueueIsSaidOnceNotThrown()
      throws Exception {
    // A cancel during the retry's wait is told through a clone that waits in the dispatcher's
    // queue behind the host's taken slot; the callback hears it at once and the clone, ended
    // there (not cancelled: OkHttp would close its answer itself), runs once the slot frees, an
    // interceptor ahead of the agent's answering it (a 503 whose body's close() throws an Error).
    // The agent releases that late answer: unguarded, the Error left the clone's callback onto
    // the dispatcher thread, unsaid.
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    AtomicInteger retriedPasses = new AtomicInteger();
    List<String> errors =
        configureFaulty(
            new AtomicBoolean(), // a clock that never fails
            holdingTheSlot(slotTaken, slotFree)
                .addInterceptor(
                    chain -> {
                      if (chain.request().url().encodedPath().equals("/retried")
                          && retriedPasses.incrementAndGet() == 2) {
                        return new Response.Builder()
                            .request(chain.request())
                            .protocol(okhttp3.Protocol.HTTP_1_1)
                            .code(503)
                            .message("answered ahead of the agent")
                            .body(
                                aBodyThatOnClose(
                                    "late",
                                    () -> {
                                      throw new NoClassDefFoundError("missing/Dependency");
                                    }))
                            .build();
                      }
                      return chain.proceed(chain.request());
                    }));
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    Heard slot = new Heard();
    try {
      enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken);

      call.cancel(); // during the wait
      retrier.cancel(call);
      time.runHeldTasks(); // the wait, ended: its "Canceled" goes through a clone, queued

      assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
      assertThat(retriedPasses).as("the clone has not run").hasValue(1);
    } finally {
      slotFree.countDown();
    }

    assertTheQueuedCloneRanAtLastUnheardAndSentNothing(slot, heard);
    assertThat(retriedPasses).as("the clone ran, answered ahead of the agent").hasValue(2);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains(
            "while releasing a response the caller does not get (java.lang.NoClassDefFoundError"
                + " at ")
        .contains("the call goes on");
  }

  @Test
  void anErrorWhileReleasingAResponseTheBreakerRefusedToRetryStillTellsTheBreakersException()
      throws Exception {
    // The 503 opens the breaker, so the decision ends the call with CircuitBreakerOpenException
    // and releases the 503, whose body fails to close (an Error). Before, the callback heard
    // 'IOException: retry-agent: internal error' in place of the breaker's exception.
    engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            b -> b,
            CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build(),
            events);
    retrier = new AsyncRetrier(engine);
    client =
        new OkHttpClient.Builder()
            .addInterceptor(retrier.interceptor())
            .addNetworkInterceptor(a503ThatFailsToClose())
            .build();
    server.enqueue(status(503), ok("never"));
    Heard heard = new Heard();

    retrier.enqueue(client.newCall(get("/503")), heard, client.dispatcher());

    assertThat(heard.await()).startsWith(CircuitBreakerOpenException.class.getName());
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(1);
    await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
  }

  @Test
  void aRetrysWaitThatEndsWhileItsResponseIsReleasedGoesOnOnlyOnceItIs() throws Exception {
    // The retry's wait is scheduled before the 503 is released (a refused wait must still have the
    // response to end with): a wait that ends during the release must not start the retry there,
    // with the response half released on OkHttp's thread; it goes on after, on the scheduler.
    configureFaulty(new AtomicBoolean()); // a clock that never fails
    AtomicInteger callsWhileReleasing = new AtomicInteger(-1);
    client =
        new OkHttpClient.Builder()
            .addInterceptor(retrier.interceptor())
            .addNetworkInterceptor(
                a503ThatOnClose(
                    () -> {
                      time.runHeldTasks(); // the retry's wait ends here, mid-release
                      okhttp3.Dispatcher d = client.dispatcher();
                      callsWhileReleasing.set(d.runningCallsCount() + d.queuedCallsCount());
                    }))
            .build();
    server.enqueue(status(503), ok("second"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/503")), heard, client.dispatcher());

    await().atMost(Duration.ofSeconds(10)).until(() -> callsWhileReleasing.get() >= 0);
    assertThat(callsWhileReleasing).as("only the 503's call, no retry yet").hasValue(1);
    // Released: the wait's end goes on from the scheduler, as at any wait's end.
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    assertThat(server.requestCount()).isEqualTo(1);
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("200 second");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(engine.pendingAsyncRetries()).isZero();
  }

  @Test
  void anErrorOfOursAfterARetrysWaitEndsTheCallWithItFromADispatcherThread() throws Exception {
    // Before, what the engine threw as the retry went on (its clock, here) left the scheduler's
    // task: the callback was never called. The 503 was released for the retry: what is left to
    // tell is the failure itself.
    AtomicBoolean clockFails = new AtomicBoolean();
    List<String> errors = configureFaulty(clockFails);
    server.enqueue(status(503), ok("never"));
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/wait")), heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    clockFails.set(true);
    Thread scheduler = runHeldTasksApart();

    assertThat(heard.await()).isEqualTo("java.io.IOException: retry-agent: internal error");
    assertThat(heard.thread).startsWith("OkHttp ");
    scheduler.join(10_000);
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
    // The clock fails first as the retry starts (said, and the attempt would go without the
    // breaker), then as its timeout is read: that failure ends the call.
    assertThat(errors)
        .anySatisfy(
            line ->
                assertThat(line)
                    .contains("while going on after a wait (java.lang.NoClassDefFoundError at "));
  }

  /** Runs the held tasks on a thread of their own, whose uncaught failure is dropped. */
  private Thread runHeldTasksApart() {
    Thread scheduler = new Thread(time::runHeldTasks, "fake-scheduler");
    scheduler.setUncaughtExceptionHandler((t, e) -> {});
    scheduler.start();
    return scheduler;
  }

  @Test
  void anErrorOfOursAfterACancelEndedTheWaitStillTellsTheCallbackCanceledOnce() throws Exception {
    // The cancel during the retry's wait schedules the task that tells it: before, what the
    // engine threw there (its clock, as the call was abandoned) left the task and the callback
    // was never called.
    AtomicBoolean clockFails = new AtomicBoolean();
    List<String> errors = configureFaulty(clockFails);
    server.enqueue(status(503), ok("never"));
    time.holdTasks();
    Call call = client.newCall(get("/wait"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    clockFails.set(true);
    call.cancel();
    retrier.cancel(call);
    Thread scheduler = runHeldTasksApart();

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.thread).startsWith("OkHttp ");
    scheduler.join(10_000);
    assertThat(heard.reports).hasValue(1);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
    assertThat(errors)
        .singleElement()
        .asString()
        .contains("while going on after a cancel (java.lang.NoClassDefFoundError at ");
  }

  @Test
  void anErrorOfOursAsARetryQueuedBehindTheHostsSlotsIsEndedStillTellsTheCallbackOnce()
      throws Exception {
    // The cancel of a retry's clone that waits in the dispatcher's queue is told by a task on a
    // dispatcher thread: before, what the engine threw there (its clock, as the call was
    // abandoned) left the task and the callback was never called.
    AtomicBoolean clockFails = new AtomicBoolean();
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    List<String> errors = configureFaulty(clockFails, holdingTheSlot(slotTaken, slotFree));
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    Heard slot = new Heard();
    try {
      enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken);
      time.runHeldTasks(); // the retry's wait ends: its clone waits in the queue for the slot
      assertThat(client.dispatcher().queuedCallsCount()).isEqualTo(1);
      clockFails.set(true);

      call.cancel();
      retrier.cancel(call);

      await()
          .atMost(Duration.ofSeconds(5))
          .alias("the callback hears of the cancel, the slot still taken")
          .until(heard.outcome::isDone);
      assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
      assertThat(heard.thread).startsWith("OkHttp ");
    } finally {
      clockFails.set(false); // the call holding the slot goes through the agent too
      slotFree.countDown();
    }
    assertTheQueuedCloneRanAtLastUnheardAndSentNothing(slot, heard);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains(
            "while ending a retry queued in OkHttp's dispatcher (java.lang.NoClassDefFoundError"
                + " at ");
  }

  @Test
  void aRetryQueuedAtTheCallTimeoutWhoseEndFailsStillTellsTheCallbackTheTimeoutOnce()
      throws Exception {
    // At the call's deadline a task ends the retry's clone queued behind the host's taken slot;
    // its dispatcher's executor, out of threads, threw an Error as the task handed it the
    // callback's telling: before, the Error left the task and the callback was never called.
    AtomicBoolean refuse = new AtomicBoolean();
    java.util.concurrent.ExecutorService executor = outOfThreadsWhen(refuse);
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    List<String> errors =
        configureFaulty(
            new AtomicBoolean(), // a clock that never fails
            holdingTheSlot(slotTaken, slotFree)
                .dispatcher(new okhttp3.Dispatcher(executor))
                .callTimeout(30, TimeUnit.SECONDS));
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    Heard slot = new Heard();
    try {
      enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken);
      time.runHeldTasks(); // the retry's wait ends: its clone waits in the queue for the slot
      // The deadline, and the look at the clone's hand-over (an executor of the application's).
      await().atMost(Duration.ofSeconds(5)).until(() -> time.heldTasks() == 2);
      refuse.set(true);
      Thread scheduler = runHeldTasksApart();

      await()
          .atMost(Duration.ofSeconds(5))
          .alias("the callback hears of the call by its deadline, the slot still taken")
          .until(heard.outcome::isDone);
      scheduler.join(10_000);
      refuse.set(false);
      assertThat(heard.await()).isEqualTo("java.io.InterruptedIOException: timeout");
    } finally {
      refuse.set(false);
      slotFree.countDown();
    }
    assertTheQueuedCloneRanAtLastUnheardAndSentNothing(slot, heard);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains(
            "while ending a retry queued in OkHttp's dispatcher at the call's deadline"
                + " (java.lang.OutOfMemoryError at ");
  }

  /**
   * A dispatcher's executor that, while {@code refuse} is set, throws the Error of a JVM out of
   * native threads as a task is handed to it.
   */
  private static java.util.concurrent.ExecutorService outOfThreadsWhen(AtomicBoolean refuse) {
    return refusingWhen(
        refuse,
        () -> {
          throw new OutOfMemoryError("unable to create native thread");
        });
  }

  /**
   * A dispatcher's executor that runs {@code refusal} (which throws) while {@code refuse} is set.
   */
  private static java.util.concurrent.ExecutorService refusingWhen(
      AtomicBoolean refuse, Runnable refusal) {
    return new java.util.concurrent.ThreadPoolExecutor(
        0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS, new java.util.concurrent.SynchronousQueue<>()) {
      @Override
      public void execute(Runnable command) {
        if (refuse.get()) {
          refusal.run();
        }
        super.execute(command);
      }
    };
  }

  @Test
  void aCancelDuringTheWaitWithNoThreadToTellItNeverThrowsAndTheCallbackHearsCanceled()
      throws Exception {
    // The scheduler refuses and the dispatcher's executor is shut down: before, its
    // RejectedExecutionException left cancel(), which OkHttp's never does, and the callback was
    // never called. No thread is left: it hears Canceled on the cancelling one, once.
    List<String> errors = configureFaulty(new AtomicBoolean()); // a clock that never fails
    server.enqueue(status(503), ok("never"));
    time.holdTasks();
    Call call = client.newCall(get("/wait"));
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    time.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));
    client.dispatcher().executorService().shutdown();

    call.cancel();
    assertThatCode(() -> retrier.cancel(call)).doesNotThrowAnyException();

    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    assertThat(retrier.running()).isZero();
    assertThat(engine.pendingAsyncRetries()).isZero();
    assertThat(errors)
        .singleElement()
        .asString()
        .contains("while going on after a cancel (java.util.concurrent.RejectedExecutionException");
  }

  @Test
  void aCancelOfARetryQueuedBehindTheHostsSlotsWhoseEndFailsNeverThrowsAndIsHeardOnce()
      throws Exception {
    // The clone waits in the queue; as cancel() ends it there, the dispatcher's executor, out of
    // threads, throws an Error handing it the callback's telling: before, the Error left cancel().
    AtomicBoolean refuse = new AtomicBoolean();
    java.util.concurrent.ExecutorService executor = outOfThreadsWhen(refuse);
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    List<String> errors = configureFaultyHoldingTheSlot(executor, slotTaken, slotFree);
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    Heard slot = new Heard();
    try {
      enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken);
      time.runHeldTasks(); // the retry's wait ends: its clone waits in the queue for the slot
      assertThat(client.dispatcher().queuedCallsCount()).isEqualTo(1);
      refuse.set(true);

      call.cancel();
      assertThatCode(() -> retrier.cancel(call)).doesNotThrowAnyException();

      refuse.set(false);
      assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    } finally {
      refuse.set(false);
      slotFree.countDown();
    }
    assertTheQueuedCloneRanAtLastUnheardAndSentNothing(slot, heard);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains(
            "while ending a retry queued in OkHttp's dispatcher after a cancel"
                + " (java.lang.OutOfMemoryError at ");
  }

  @Test
  void aCancelDuringTheWaitQueuedBehindTheHostsSlotWithNoThreadToTellItIsHeardAsCanceled()
      throws Exception {
    // Cancelled during the retry's wait, the call's "Canceled" goes through a clone that OkHttp
    // queues behind the host's only slot, and is told at once from a thread of the dispatcher's:
    // its executor (one thread, the slot's call on it) refuses, as a saturated pool does, not shut
    // down, and the scheduler refuses too. Before, the scheduler's refusal left the agent's ending
    // of the queued clone, and the callback heard "retry-agent: could not enqueue a retry" with
    // the agent's internal error said; the plain call would have heard "Canceled". Now it is told
    // on the thread that ended the clone, as OkHttp tells a call its executor refused.
    AtomicBoolean refuse = new AtomicBoolean();
    java.util.concurrent.ExecutorService executor = saturatedWhen(refuse);
    CountDownLatch slotTaken = new CountDownLatch(1);
    CountDownLatch slotFree = new CountDownLatch(1);
    List<String> errors = configureFaultyHoldingTheSlot(executor, slotTaken, slotFree);
    Call call = client.newCall(get("/retried"));
    Heard heard = new Heard();
    Heard slot = new Heard();
    try {
      enqueueThenTakeTheHostsOnlySlot(call, heard, slot, slotTaken);
      call.cancel();
      retrier.cancel(call); // its going on is held: a task of the scheduler's
      refuse.set(true);
      time.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));

      assertThatCode(time::runHeldTasks).doesNotThrowAnyException();

      assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
      assertThat(heard.reports).hasValue(1);
    } finally {
      refuse.set(false);
      time.refuse(null);
      slotFree.countDown();
    }
    assertTheQueuedCloneRanAtLastUnheardAndSentNothing(slot, heard);
    assertThat(errors).as("a refusal, not the agent's error").isEmpty();
  }

  /**
   * {@link #configureFaulty} with a clock that never fails, on a client whose dispatcher runs on
   * {@code executor} and whose calls to {@code /slot} hold the host's slot.
   */
  private List<String> configureFaultyHoldingTheSlot(
      java.util.concurrent.ExecutorService executor, CountDownLatch taken, CountDownLatch free) {
    return configureFaulty(
        new AtomicBoolean(),
        holdingTheSlot(taken, free).dispatcher(new okhttp3.Dispatcher(executor)));
  }

  /**
   * A dispatcher's executor that, while {@code refuse} is set, refuses a task handed to it as a
   * saturated pool does (not shut down).
   */
  private static java.util.concurrent.ExecutorService saturatedWhen(AtomicBoolean refuse) {
    return refusingWhen(
        refuse,
        () -> {
          throw new java.util.concurrent.RejectedExecutionException("saturated");
        });
  }

  @Test
  void aCallContextOfAnothersThatThrowsNeverBecomesAnEnqueuedCallsOutcome() throws Exception {
    // EnqueuedCall entered, left and ended the call's context itself, trusting it: before, a
    // context whose enter or scope's close threw made enqueue() throw it (nothing sent), and one
    // whose end threw left the callback never told.
    for (String where : List.of("enter", "close", "end")) {
      List<String> errors = new CopyOnWriteArrayList<>();
      engine =
          RetryEngine.builder()
              .clock(time)
              .sleeper(time)
              .scheduler(time)
              .errors(errors::add)
              .mode(Mode.ENFORCE)
              .policy(Policy.defaults())
              .callContexts(call -> new FailingContext(where))
              .build();
      retrier = new AsyncRetrier(engine);
      client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
      server.enqueue(status(503), ok("retried"));
      time.holdTasks();
      Heard heard = new Heard();

      assertThatCode(() -> retrier.enqueue(client.newCall(get("/ctx")), heard, client.dispatcher()))
          .as(where)
          .doesNotThrowAnyException();
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> time.heldTasks() == 1 || heard.outcome.isDone());
      time.runHeldTasks();

      assertThat(heard.await()).as(where).isEqualTo("200 retried");
      assertThat(heard.reports).as(where).hasValue(1);
      assertThat(errors).as(where).isNotEmpty().allMatch(e -> e.contains(" a call's context ("));
      assertThat(errors).as(where).noneMatch(e -> e.contains("tracer:"));
    }
  }

  /** A tracer of another's (RetryEngine.Builder.callContexts) that fails at {@code where}. */
  private static final class FailingContext implements dev.retryagent.engine.CallContext {
    private final String where;

    FailingContext(String where) {
      this.where = where;
    }

    @Override
    public Scope enter() {
      if (where.equals("enter")) {
        throw new IllegalStateException("tracer: enter");
      }
      return () -> {
        if (where.equals("close")) {
          throw new NoClassDefFoundError("tracer/Scope");
        }
      };
    }

    @Override
    public void end() {
      if (where.equals("end")) {
        throw new IllegalStateException("tracer: end");
      }
    }
  }
}
