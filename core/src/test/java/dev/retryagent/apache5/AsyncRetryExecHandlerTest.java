package dev.retryagent.apache5;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.apache.hc.client5.http.async.methods.SimpleHttpRequest;
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse;
import org.apache.hc.client5.http.async.methods.SimpleRequestBuilder;
import org.apache.hc.client5.http.async.methods.SimpleRequestProducer;
import org.apache.hc.client5.http.async.methods.SimpleResponseConsumer;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.HttpAsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManager;
import org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManagerBuilder;
import org.apache.hc.core5.concurrent.FutureCallback;
import org.apache.hc.core5.http.ConnectionClosedException;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.EntityDetails;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpResponse;
import org.apache.hc.core5.http.nio.AsyncEntityProducer;
import org.apache.hc.core5.http.nio.AsyncResponseConsumer;
import org.apache.hc.core5.http.nio.CapacityChannel;
import org.apache.hc.core5.http.nio.DataStreamChannel;
import org.apache.hc.core5.http.nio.entity.StringAsyncEntityProducer;
import org.apache.hc.core5.http.nio.support.BasicRequestProducer;
import org.apache.hc.core5.http.protocol.HttpContext;
import org.apache.hc.core5.io.CloseMode;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.VersionInfo;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The async client's handler on a real HttpClient 5.1 async client and a loopback server that
 * counts requests; waits on fake time (at once, or held until the test lets them run).
 */
class AsyncRetryExecHandlerTest {
  private static final Duration LONG = Duration.ofSeconds(30);

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final List<CloseableHttpAsyncClient> clients = new ArrayList<>();
  private PoolingAsyncClientConnectionManager pool; // the last oneConnection()'s

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    for (CloseableHttpAsyncClient c : clients) {
      c.close(CloseMode.IMMEDIATE);
    }
    server.close();
    // A call a failed test left running (its held wait never run) must not fail each test after it
    // that asserts RUNNING empty: the failure is that test's alone.
    AsyncRetryExecHandler.RUNNING.clear();
  }

  /** As {@link TestEngines#engine}, with the calls' ends recorded too. */
  private RetryEngine engine(UnaryOperator<RetryPolicy.Builder> retry) {
    return engine(retry, Policy.defaults().rateLimit());
  }

  /** As {@link #engine(UnaryOperator)}, with {@code rateLimit}. */
  private RetryEngine engine(
      UnaryOperator<RetryPolicy.Builder> retry, dev.retryagent.policy.RateLimitPolicy rateLimit) {
    return engine(retry, rateLimit, new RetryListener() {});
  }

  /**
   * As {@link #engine(UnaryOperator, dev.retryagent.policy.RateLimitPolicy)}, with {@code also}.
   */
  private RetryEngine engine(
      UnaryOperator<RetryPolicy.Builder> retry,
      dev.retryagent.policy.RateLimitPolicy rateLimit,
      RetryListener also) {
    return TestEngines.builder(
            time,
            Mode.ENFORCE,
            retry,
            Policy.defaults().budget(),
            CircuitBreakerPolicy.defaults(),
            rateLimit)
        .listener(TestEngines.recorder(events))
        .listener(
            new RetryListener() {
              @Override
              public void onCallComplete(RetryEvent e) {
                events.add(e);
              }
            })
        .listener(also)
        .build();
  }

  /** A client of at most one connection ({@link #pool}), HttpClient's own retries off. */
  private HttpAsyncClientBuilder oneConnection() {
    pool =
        PoolingAsyncClientConnectionManagerBuilder.create()
            .setMaxConnPerRoute(1)
            .setMaxConnTotal(1)
            .build();
    return HttpAsyncClients.custom().disableAutomaticRetries().setConnectionManager(pool);
  }

  /**
   * Waits until the exchange of the response the retry's wait is held after is over, its body read
   * and its connection back in {@link #pool}. The wait is held as soon as the loop judges that
   * response's head, on the I/O thread, before the thread reads its body: a close before that read
   * is over would end that exchange too (another case: {@link
   * #closingTheClientWhileARetriedBodyIsReadGivesTheFailureOfThatExchange}).
   */
  private void awaitRetriedExchangeOver() {
    await().atMost(LONG).until(() -> pool.getTotalStats().getLeased() == 0);
  }

  private CloseableHttpAsyncClient started(HttpAsyncClientBuilder b) {
    CloseableHttpAsyncClient c = b.build();
    clients.add(c);
    c.start();
    return c;
  }

  private CloseableHttpAsyncClient withHandler(UnaryOperator<RetryPolicy.Builder> retry) {
    return started(AsyncRetryExecHandler.addTo(oneConnection(), engine(retry)));
  }

  private long ofType(RetryEvent.Type type) {
    return events.stream().filter(e -> e.type() == type).count();
  }

  /** What the application's callback heard, on which thread, and how often. */
  private static final class Heard implements FutureCallback<SimpleHttpResponse> {
    final CompletableFuture<String> outcome = new CompletableFuture<>();
    final java.util.concurrent.atomic.AtomicInteger times =
        new java.util.concurrent.atomic.AtomicInteger();
    volatile String thread;
    volatile Exception failure;

    private void heard(String what) {
      thread = Thread.currentThread().getName();
      times.incrementAndGet();
      outcome.complete(what);
    }

    @Override
    public void completed(SimpleHttpResponse r) {
      heard(r.getCode() + " " + r.getBodyText());
    }

    @Override
    public void failed(Exception e) {
      failure = e;
      heard("failed " + e.getClass().getSimpleName());
    }

    @Override
    public void cancelled() {
      heard("cancelled");
    }

    String await() throws Exception {
      return outcome.get(LONG.getSeconds(), TimeUnit.SECONDS);
    }
  }

  private static Heard call(CloseableHttpAsyncClient c, SimpleHttpRequest request) {
    Heard heard = new Heard();
    c.execute(request, heard);
    return heard;
  }

  @Test
  void runsOnTheHttpClientItIsMeantFor() {
    // The apache56 execution runs this class on the newest 5.x, the others on the 5.1 of the build.
    String expected = System.getProperty("expected.httpclient5", "5.1.3");
    VersionInfo v =
        VersionInfo.loadVersionInfo(
            "org.apache.hc.client5", HttpAsyncClients.class.getClassLoader());
    assertThat(v == null ? null : v.getRelease()).isEqualTo(expected);
  }

  @Test
  void a503IsRetriedUntilTheServerAnswers200OnTheClientsOwnThread() throws Exception {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    server.enqueue(status(503), status(503).body("busy"), ok("done"));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());

    assertThat(heard.await()).isEqualTo("200 done");
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(ofType(RetryEvent.Type.RETRY)).isEqualTo(2);
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty(); // let go of as the response was handed up
    // Where HttpClient completes its calls without us: its I/O dispatcher.
    assertThat(heard.thread).startsWith("httpclient-dispatch");
  }

  @Test
  void aFleetLimitsRetryPermitAskedOnTheIoThreadSaysItMustNotBlock() throws Exception {
    // The permit of the retry decided on the 503's head is asked there, on the I/O reactor's
    // thread, which serves every exchange of the client: a fleet limit must not hold it for a
    // connect to Redis or a connection another call holds (it asks with mayBlock false).
    List<String> asks = new CopyOnWriteArrayList<>();
    dev.retryagent.engine.PermitLimiter recording =
        new dev.retryagent.engine.PermitLimiter() {
          @Override
          public long reserve(long now, long maxPermitWait, long maxTotalWait) {
            return reserve(now, maxPermitWait, maxTotalWait, true);
          }

          @Override
          public long reserve(long now, long maxPermitWait, long maxTotalWait, boolean mayBlock) {
            asks.add(Thread.currentThread().getName().replaceAll("-[0-9]+$", "") + " " + mayBlock);
            return 0;
          }

          @Override
          public void pause(long now, long pauseNanos) {}

          @Override
          public long pauseRemainingNanos(long now) {
            return 0;
          }
        };
    RetryEngine e =
        engine(
            r -> r.maxAttempts(2),
            dev.retryagent.policy.RateLimitPolicy.builder()
                .enabled(true)
                .perSecond(100)
                .burst(10)
                .scope(dev.retryagent.policy.RateLimitPolicy.Scope.FLEET)
                .build());
    e.useFleet(
        new dev.retryagent.engine.FleetLimits() {
          @Override
          public dev.retryagent.engine.PermitLimiter limiter(
              String route, dev.retryagent.policy.RateLimitPolicy limit, Duration max) {
            return recording;
          }

          @Override
          public List<dev.retryagent.engine.FleetRouteCounters> counters() {
            return List.of();
          }

          @Override
          public boolean shared() {
            return true;
          }
        });
    CloseableHttpAsyncClient c = started(AsyncRetryExecHandler.addTo(oneConnection(), e));
    server.enqueue(status(503).body("busy"), ok("done"));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());

    assertThat(heard.await()).isEqualTo("200 done");
    // The first attempt's on the caller's thread may block; the retry's, at the decision on the
    // I/O thread, may not (the retry then takes that permit, asking no more).
    assertThat(asks)
        .containsExactly(Thread.currentThread().getName() + " true", "httpclient-dispatch false");
  }

  @Test
  void aCallNotRetriedSendsWhatTheClientSendsWithoutTheHandler() throws Exception {
    CloseableHttpAsyncClient plain = started(oneConnection());
    CloseableHttpAsyncClient ours = withHandler(r -> r.maxAttempts(3));
    server.otherwise(ok("fine"));

    Heard without =
        call(
            plain,
            SimpleRequestBuilder.put(server.url("/a?x=1"))
                .setBody("{}", ContentType.APPLICATION_JSON)
                .build());
    assertThat(without.await()).isEqualTo("200 fine");
    Heard with =
        call(
            ours,
            SimpleRequestBuilder.put(server.url("/a?x=1"))
                .setBody("{}", ContentType.APPLICATION_JSON)
                .build());
    assertThat(with.await()).isEqualTo("200 fine");

    List<ScriptedHttpServer.Recorded> got = server.requests();
    assertThat(got).hasSize(2);
    assertThat(got.get(1).method).isEqualTo(got.get(0).method);
    assertThat(got.get(1).path).isEqualTo(got.get(0).path);
    assertThat(got.get(1).body).isEqualTo(got.get(0).body);
    assertThat(got.get(1).headers).isEqualTo(got.get(0).headers);
    assertThat(with.thread).startsWith("httpclient-dispatch");
    assertThat(without.thread).startsWith("httpclient-dispatch");
  }

  @Test
  void aRetriedPutSendsItsWholeBodyAgain() throws Exception {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    server.enqueue(status(503).body("busy"), status(503), ok("stored"));

    Heard heard =
        call(
            c,
            SimpleRequestBuilder.put(server.url("/items/1"))
                .setBody("{\"n\":1}", ContentType.APPLICATION_JSON)
                .build());

    assertThat(heard.await()).isEqualTo("200 stored");
    assertThat(server.requests())
        .hasSize(3)
        .allSatisfy(
            r -> {
              assertThat(r.method).isEqualTo("PUT");
              assertThat(r.body).isEqualTo("{\"n\":1}");
              assertThat(r.header("Content-Length")).isEqualTo("7");
            });
  }

  @Test
  void aGetWhoseConnectionIsResetIsRetriedOnANewConnection() throws Exception {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    server.enqueue(ScriptedHttpServer.Action.reset(), ok("done"));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());

    assertThat(heard.await()).isEqualTo("200 done");
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(server.connectionCount()).isEqualTo(2);
    assertThat(ofType(RetryEvent.Type.RETRY)).isEqualTo(1);
  }

  /**
   * A failure that comes on the client's own thread before {@code execute} returned to the
   * application (a refused connection, fast on loopback) reaches the callback on that thread, as
   * without the handler, not on the application's thread that called {@code execute}. Here an
   * element below the handler fails the exchange on a thread of its own and waits for it.
   */
  @Test
  void aFailureBeforeExecuteReturnedIsDeliveredOnTheThreadItCameOn() throws Exception {
    // One attempt: the call ends with the first failure, inside execute.
    HttpAsyncClientBuilder b =
        AsyncRetryExecHandler.addTo(oneConnection(), engine(r -> r.maxAttempts(1)));
    b.addExecInterceptorAfter(
        AsyncRetryExecHandler.NAME,
        "fails-elsewhere",
        (request, producer, scope, chain, callback) -> {
          Thread t =
              new Thread(
                  () -> callback.failed(new java.net.ConnectException("refused")), "client-io");
          t.start();
          try {
            t.join(LONG.toMillis());
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    CloseableHttpAsyncClient c = started(b);

    Heard heard =
        call(
            c,
            SimpleRequestBuilder.post(server.url("/charges"))
                .setBody("{}", ContentType.APPLICATION_JSON)
                .build());

    assertThat(heard.await()).isEqualTo("failed ConnectException");
    assertThat(heard.thread).isEqualTo("client-io");
    assertThat(server.awaitRequests(0)).isEqualTo(requests(0));
  }

  @Test
  void aPostWithoutIdempotencyKeyIsNeverReplayed() throws Exception {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    server.enqueue(status(503).body("busy"), ok("charged twice"));

    Heard heard =
        call(
            c,
            SimpleRequestBuilder.post(server.url("/charges"))
                .setBody("{}", ContentType.APPLICATION_JSON)
                .build());

    assertThat(heard.await()).isEqualTo("503 busy");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aRequestWhoseProducerIsNotRepeatableIsNeverResent() throws Exception {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    server.enqueue(status(503).body("busy"), ok("twice"));
    CompletableFuture<String> outcome = new CompletableFuture<>();

    c.execute(
        new BasicRequestProducer(
            SimpleRequestBuilder.put(server.url("/items/1")).build(),
            new OneShot(new StringAsyncEntityProducer("{}", ContentType.APPLICATION_JSON))),
        SimpleResponseConsumer.create(),
        new FutureCallback<SimpleHttpResponse>() {
          @Override
          public void completed(SimpleHttpResponse r) {
            outcome.complete(r.getCode() + " " + r.getBodyText());
          }

          @Override
          public void failed(Exception e) {
            outcome.complete("failed " + e);
          }

          @Override
          public void cancelled() {
            outcome.complete("cancelled");
          }
        });

    assertThat(outcome.get(LONG.getSeconds(), TimeUnit.SECONDS)).isEqualTo("503 busy");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void theConnectionGoesBackToThePoolForTheWait() throws Exception {
    // One connection in the pool: a second call gets it while the first waits for its retry.
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    time.holdTasks();
    server.enqueue(status(503).header("Retry-After", "5").body("busy"), ok("second"), ok("first"));

    Heard first = call(c, SimpleRequestBuilder.get(server.url("/first")).build());
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    Heard second = call(c, SimpleRequestBuilder.get(server.url("/second")).build());

    assertThat(second.await()).isEqualTo("200 second");
    assertThat(first.outcome).isNotDone();
    time.runHeldTasks();
    assertThat(first.await()).isEqualTo("200 first");
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @Test
  void aRetriedResponsesLongBodyClosesItsConnectionAndTheRetryGoesOn() throws Exception {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    server.enqueue(status(503).body(repeat('x', 200_000)), ok("done"));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());

    assertThat(heard.await()).isEqualTo("200 done");
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(server.connectionCount()).isEqualTo(2);
  }

  @Test
  void cancellingTheFutureEndsTheWaitAndNothingIsSentAfterIt() throws Exception {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    time.holdTasks();
    server.enqueue(status(503).header("Retry-After", "5").body("busy"), ok("too late"));

    Heard heard = new Heard();
    Future<SimpleHttpResponse> f =
        c.execute(SimpleRequestBuilder.get(server.url("/items")).build(), heard);
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    String cancelling = Thread.currentThread().getName();
    f.cancel(true);

    assertThat(heard.await()).isEqualTo("cancelled");
    assertThat(heard.thread).isEqualTo(cancelling); // as HttpClient tells it without us
    // The wait ended at once (a task at 0 now), and the call with it, sending nothing. Waited
    // for: a cancel that came as the wait was being scheduled, before the wait was set as the
    // future's dependency, reaches it when it is set (the future cancels it at once, on the I/O
    // thread), after the callback was told here.
    await()
        .atMost(LONG)
        .until(() -> !time.waits().isEmpty() && time.waits().get(time.waits().size() - 1) == 0L);
    time.runHeldTasks();
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    // Abandoned at the attempt it reached: no attempt 2 counted, none having gone out. Before, the
    // retry was started after the wait and counted (GIVE_UP and CALL_COMPLETE at attempt 2).
    assertEndedCancelledAtTheFirstAttempt();
    assertThat(heard.times.get()).isEqualTo(1);
  }

  /** The call's events: its retry told, then given up as cancelled at attempt 1, and ended so. */
  private void assertEndedCancelledAtTheFirstAttempt() {
    assertThat(events)
        .extracting(e -> e.type() + " " + e.attempt())
        .containsExactly("RETRY 1", "GIVE_UP 1", "CALL_COMPLETE 1");
    assertThat(events.get(1).reason()).isEqualTo(GiveUpReason.CANCELLED);
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
  }

  @Test
  void aCancelFromTheRetrysListenerAfterTheDecisionEndsTheCallWithoutASecondAttempt()
      throws Exception {
    // The application cancels its future from onRetry, on the I/O thread, after the retry is
    // decided and before its wait starts: the wait ends at once, and the call with it, as
    // abandoned at attempt 1. Before, attempt 2 was counted (GIVE_UP and CALL_COMPLETE at 2, the
    // listeners told of it) while nothing was sent.
    CompletableFuture<Future<SimpleHttpResponse>> future = new CompletableFuture<>();
    RetryEngine engine =
        engine(
            r -> r.maxAttempts(3),
            Policy.defaults().rateLimit(),
            new RetryListener() {
              @Override
              public void onRetry(RetryEvent e) {
                try {
                  future.get(30, TimeUnit.SECONDS).cancel(true);
                } catch (Exception x) {
                  throw new AssertionError(x);
                }
              }
            });
    CloseableHttpAsyncClient c = started(AsyncRetryExecHandler.addTo(oneConnection(), engine));
    server.enqueue(status(503).body("busy"), ok("never asked"));

    Heard heard = new Heard();
    future.complete(c.execute(SimpleRequestBuilder.get(server.url("/items")).build(), heard));

    assertThat(heard.await()).isEqualTo("cancelled");
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertEndedCancelledAtTheFirstAttempt();
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    assertThat(heard.times.get()).isEqualTo(1);
  }

  @Test
  void cancellingTheFutureDuringAnAttemptEndsTheCallAndLetsGoOfIt() throws Exception {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    server.enqueue(ok("slow").delay(20_000));

    Heard heard = new Heard();
    Future<SimpleHttpResponse> f =
        c.execute(SimpleRequestBuilder.get(server.url("/items")).build(), heard);
    await().atMost(LONG).until(() -> server.requestCount() == 1);
    f.cancel(true);

    assertThat(heard.await()).isEqualTo("cancelled");
    // The attempt's exchange, cancelled by HttpClient, ends the call: nothing of it is kept.
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
    assertThat(ofType(RetryEvent.Type.RETRY)).isZero();
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  /**
   * Where the application's cancel of the client's future comes as a 503's head arrives: before
   * HttpClient hands the head up the chain (its response interceptor: HttpClient's cancel of the
   * exchange fails it, before its head), or once it has, before the agent's handler judges it (an
   * exec handler of the application's below the agent's), the cancel of the exchange not there yet.
   */
  enum CancelAt {
    BEFORE_HTTPCLIENT_HANDS_UP_THE_HEAD,
    AT_THE_HEAD
  }

  @ParameterizedTest
  @EnumSource(CancelAt.class)
  void aCallCancelledAsItsHeadComesEndsAsACancelledAttemptNotAsThe503(CancelAt at)
      throws Exception {
    // The cancel comes before the agent judges the 503's head, wherever: the call ends as one
    // cancelled while its attempt was in flight (AsyncRetryLoop's cancel check, onAbandoned), the
    // same at both points: a cancelled attempt, given up as cancelled, no retry told, nothing of
    // the 503 recorded (the breaker's permit back without an outcome). Before, at the head, the
    // 503 was judged: recorded as the host's failure and given up with (outcome 503).
    java.util.concurrent.atomic.AtomicBoolean once =
        new java.util.concurrent.atomic.AtomicBoolean();
    HttpAsyncClientBuilder b =
        AsyncRetryExecHandler.addTo(oneConnection(), engine(r -> r.maxAttempts(3)));
    if (at == CancelAt.BEFORE_HTTPCLIENT_HANDS_UP_THE_HEAD) {
      b.addResponseInterceptorFirst(
          (response, details, context) -> {
            if (once.compareAndSet(false, true)) {
              ((org.apache.hc.client5.http.protocol.HttpClientContext) context)
                  .getAttribute("test.cancel", Runnable.class)
                  .run();
            }
          });
    }
    b.addExecInterceptorAfter(
        AsyncRetryExecHandler.NAME,
        "cancels-at-the-head",
        (request, producer, scope, chain, callback) -> {
          scope.clientContext.setAttribute(
              "test.cancel", (Runnable) () -> scope.cancellableDependency.cancel());
          chain.proceed(
              request,
              producer,
              scope,
              new org.apache.hc.client5.http.async.AsyncExecCallback() {
                @Override
                public org.apache.hc.core5.http.nio.AsyncDataConsumer handleResponse(
                    HttpResponse response, EntityDetails details)
                    throws org.apache.hc.core5.http.HttpException, IOException {
                  if (at == CancelAt.AT_THE_HEAD && once.compareAndSet(false, true)) {
                    // The application's cancel on another thread, as the head came: its future is
                    // cancelled, and its cancel of the exchange has yet to reach it (here, never:
                    // done, it would fail the exchange before its head, as above).
                    scope.cancellableDependency.setDependency(() -> true);
                    scope.cancellableDependency.cancel();
                  }
                  return callback.handleResponse(response, details);
                }

                @Override
                public void handleInformationResponse(HttpResponse response)
                    throws org.apache.hc.core5.http.HttpException, IOException {
                  callback.handleInformationResponse(response);
                }

                @Override
                public void completed() {
                  callback.completed();
                }

                @Override
                public void failed(Exception cause) {
                  callback.failed(cause);
                }
              });
        });
    CloseableHttpAsyncClient c = started(b);
    server.enqueue(status(503).body("busy"));
    server.otherwise(ok("sent again"));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());

    assertThat(heard.await()).isEqualTo("cancelled");
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    await().atMost(LONG).until(() -> AsyncRetryExecHandler.RUNNING.isEmpty());
    assertThat(ofType(RetryEvent.Type.RETRY)).isZero();
    assertThat(events)
        .filteredOn(e -> e.type() != RetryEvent.Type.CALL_COMPLETE)
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.type()).isEqualTo(RetryEvent.Type.GIVE_UP);
              assertThat(e.reason()).isEqualTo(GiveUpReason.CANCELLED);
              assertThat(e.attempt()).isEqualTo(1);
              assertThat(e.outcome()).isEqualTo(dev.retryagent.engine.Outcome.CANCELLED);
            });
    assertThat(time.waits()).isEmpty(); // no retry waited for
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  /** The three ways an application closes its client. */
  enum Close {
    IMMEDIATE,
    GRACEFUL,
    PLAIN;

    void close(CloseableHttpAsyncClient c) throws IOException {
      if (this == PLAIN) {
        c.close();
      } else {
        c.close(CloseMode.valueOf(name()));
      }
    }
  }

  /**
   * Runs held tasks until {@code outcome} is in (after a close, the call's grace for an exchange
   * HttpCore loses runs on the shared scheduler, in real time, not here).
   */
  private void runHeldTasksUntil(CompletableFuture<?> outcome) {
    await()
        .atMost(LONG)
        .until(
            () -> {
              time.runHeldTasks();
              return outcome.isDone();
            });
  }

  /**
   * A call whose 503 is retried, the body of that 503 held after 4 bytes (never released), and its
   * retry's wait held; the application's callback is {@code heard}.
   */
  private CloseableHttpAsyncClient retriedBodyHeld(FutureCallback<SimpleHttpResponse> heard) {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    time.holdTasks();
    server.enqueue(
        status(503).body("busy busy busy").heldAfter(4, new java.util.concurrent.CountDownLatch(1)),
        ok("too late"));
    c.execute(SimpleRequestBuilder.get(server.url("/items")).build(), heard);
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    return c;
  }

  @ParameterizedTest
  @EnumSource(Close.class)
  void closingTheClientDuringAWaitEndsItAtOnceWithTheEarlierResponse(Close how) throws Exception {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    time.holdTasks();
    server.enqueue(status(503).header("Retry-After", "5").body("busy"), ok("too late"));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    awaitRetriedExchangeOver();
    how.close(c);
    // The wait ended at once (a task at 0 now); the 5 s one never runs.
    assertThat(time.waits()).endsWith(0L);
    time.runHeldTasks();

    // What the application had without the agent: the 503 (HttpClient's own retry of it is
    // refused by the closed client), not a failure of the agent's retry after the close.
    assertThat(heard.await()).isEqualTo("503 busy");
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Close.class)
  void closingTheClientDuringAWaitAfterAFailureEndsItWithThatFailure(Close how) throws Exception {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    time.holdTasks();
    server.enqueue(ScriptedHttpServer.Action.closeWithoutResponse(), ok("too late"));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    how.close(c);
    time.runHeldTasks();

    assertThat(heard.await()).startsWith("failed ").doesNotContain("Rejected");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aFailureTheCloseCausesDuringAnAttemptEndsTheCallWithNothingMoreSent() throws Exception {
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    time.holdTasks();
    server.enqueue(status(503).body("busy"), ok("slow").delay(20_000));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    time.runHeldTasks(); // the retry: its request hangs
    await().atMost(LONG).until(() -> server.requestCount() == 2);
    c.close(CloseMode.IMMEDIATE);
    // HttpClient fails the exchange on its I/O thread inside its reactor's close, before the
    // client closes the agent's closeable: the call sees its reactor shutting down and takes the
    // failure as the close's. (Where HttpCore loses the exchange, the call tells it after its
    // grace, on the shared scheduler.)
    runHeldTasksUntil(heard.outcome);

    assertThat(heard.await()).isEqualTo("failed ConnectionClosedException");
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertThat(ofType(RetryEvent.Type.RETRY)).isEqualTo(1); // the 503's; the close's failure: none
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
  }

  @Test
  void aFailureWhileTheClientsReactorShutsDownIsTheClosesAndNotRetried() throws Exception {
    // HttpClient fails an exchange its close ends inside its reactor's close, before it closes the
    // agent's closeable. Here an element below ours does just that: the reactor shutting down
    // (initiateShutdown), the attempt failed as the close fails it, on this thread.
    java.util.concurrent.atomic.AtomicReference<CloseableHttpAsyncClient> client =
        new java.util.concurrent.atomic.AtomicReference<>();
    HttpAsyncClientBuilder b =
        AsyncRetryExecHandler.addTo(oneConnection(), engine(r -> r.maxAttempts(3)));
    b.addExecInterceptorAfter(
        AsyncRetryExecHandler.NAME,
        "closing",
        (request, producer, scope, chain, callback) -> {
          client.get().initiateShutdown();
          callback.failed(new ConnectionClosedException("Connection is closed"));
        });
    client.set(started(b));

    Heard heard = call(client.get(), SimpleRequestBuilder.get(server.url("/items")).build());

    assertThat(heard.await()).isEqualTo("failed ConnectionClosedException");
    assertThat(heard.thread).isEqualTo(Thread.currentThread().getName()); // where it failed
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertThat(ofType(RetryEvent.Type.RETRY)).isZero();
  }

  @Test
  void anAttemptHttpClientNeverTellsOfTheCloseIsEndedByTheCall() throws Exception {
    // HttpCore 5.1.3 loses an exchange now and then at close(IMMEDIATE) (a session closed by the
    // closing thread is never reported disconnected): the same with or without the agent, the
    // application then waits for good. Here an element below ours stands for it, swallowing the
    // retry's attempt; the call tells it after its grace. That grace is real time, on the agent's
    // shared scheduler, whatever the engine's: on the engine's (here a test's, driven by hand and
    // not run after the close, as a library user's may be), the lost exchange was never told and
    // the application waited for good.
    java.util.concurrent.atomic.AtomicReference<org.apache.hc.client5.http.async.AsyncExecCallback>
        lost = new java.util.concurrent.atomic.AtomicReference<>();
    CloseableHttpAsyncClient c = started(retryHeldBelowOurs(lost));
    Heard heard = retryHeld(c, lost);
    int waits = time.waits().size();
    c.close(CloseMode.IMMEDIATE);

    assertThat(heard.await()).isEqualTo("failed ConnectionClosedException");
    assertThat(time.heldTasks()).as("the grace, on the engine's scheduler").isZero();
    assertThat(time.waits()).hasSize(waits);
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertThat(ofType(RetryEvent.Type.RETRY)).isEqualTo(1);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void theClosesFallbackIsCancelledWhenHttpClientTellsTheAttemptInTime() throws Exception {
    // HttpClient tells the attempt in flight of the close after the agent's closeable heard it
    // (here an element below ours holds the retry's attempt and fails it then). The fallback for
    // an attempt never told stayed scheduled: it held the exchange (its response, the bytes kept
    // of a retried body) for its whole 2 s grace, to do nothing.
    List<java.util.concurrent.atomic.AtomicBoolean> fallbacks =
        new java.util.concurrent.CopyOnWriteArrayList<>();
    AsyncCall.closeSchedulerForTests =
        (task, delayNanos) -> {
          java.util.concurrent.atomic.AtomicBoolean cancelled =
              new java.util.concurrent.atomic.AtomicBoolean();
          fallbacks.add(cancelled);
          return () -> !cancelled.getAndSet(true);
        };
    try {
      java.util.concurrent.atomic.AtomicReference<
              org.apache.hc.client5.http.async.AsyncExecCallback>
          held = new java.util.concurrent.atomic.AtomicReference<>();
      CloseableHttpAsyncClient c = started(retryHeldBelowOurs(held));
      Heard heard = retryHeld(c, held);
      c.close(CloseMode.IMMEDIATE);
      assertThat(fallbacks).as("the fallback scheduled at the close").hasSize(1);
      assertThat(fallbacks.get(0)).isFalse();

      held.get().failed(new ConnectionClosedException("Connection is closed"));

      assertThat(heard.await()).isEqualTo("failed ConnectionClosedException");
      assertThat(fallbacks.get(0)).as("the fallback cancelled").isTrue();
      assertThat(server.requestCount()).isEqualTo(1);
    } finally {
      AsyncCall.closeSchedulerForTests = null;
    }
  }

  /**
   * A client where an element below ours passes the first attempt and holds every later one, its
   * callback kept in {@code held}: HttpClient never tells it unless the test does.
   */
  private HttpAsyncClientBuilder retryHeldBelowOurs(
      java.util.concurrent.atomic.AtomicReference<
              org.apache.hc.client5.http.async.AsyncExecCallback>
          held) {
    HttpAsyncClientBuilder b =
        AsyncRetryExecHandler.addTo(oneConnection(), engine(r -> r.maxAttempts(3)));
    java.util.concurrent.atomic.AtomicInteger passed =
        new java.util.concurrent.atomic.AtomicInteger();
    b.addExecInterceptorAfter(
        AsyncRetryExecHandler.NAME,
        "held",
        (request, producer, scope, chain, callback) -> {
          if (passed.incrementAndGet() == 1) {
            chain.proceed(request, producer, scope, callback);
          } else {
            held.set(callback);
          }
        });
    return b;
  }

  /** A call on {@code c} whose first attempt gets a 503 and whose retry is held below ours. */
  private Heard retryHeld(
      CloseableHttpAsyncClient c,
      java.util.concurrent.atomic.AtomicReference<
              org.apache.hc.client5.http.async.AsyncExecCallback>
          held)
      throws Exception {
    time.holdTasks();
    server.enqueue(status(503).body("busy"));
    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    time.runHeldTasks(); // the wait ends: the retry goes down the chain, and is held
    await().atMost(LONG).until(() -> held.get() != null);
    return heard;
  }

  /** A client whose rate limit gives one permit now and the next a second later. */
  private CloseableHttpAsyncClient onePermitASecond() {
    return started(
        AsyncRetryExecHandler.addTo(
            oneConnection(),
            engine(
                r -> r.maxAttempts(3),
                dev.retryagent.policy.RateLimitPolicy.builder()
                    .enabled(true)
                    .perSecond(1)
                    .burst(1)
                    .maxWait(Duration.ofSeconds(10))
                    .build())));
  }

  @ParameterizedTest
  @EnumSource(Close.class)
  void closingTheClientWhileTheRetryWaitsForAPermitEndsItWithTheEarlierResponse(Close how)
      throws Exception {
    // The rate limit makes the retry wait a second for its permit, and the client closes then:
    // nothing more is sent, the application gets the 503, as a close during the retry's own wait
    // gives it. The permit is reserved at the decision on the 503's head, so the retry's one wait
    // is the longer of its backoff and the permit's (here the permit's second); before, the permit
    // was asked for after the backoff, in a wait of its own, which the close ended the same way.
    CloseableHttpAsyncClient c = onePermitASecond();
    time.holdTasks();
    server.enqueue(status(503).body("busy"), ok("too late"));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    awaitRetriedExchangeOver();
    // The wait held is the permit's (a token a second, the one of the burst taken by the 503's
    // attempt), longer than any backoff of the default policy.
    assertThat(time.waits()).last().isEqualTo(Duration.ofSeconds(1).toNanos());
    how.close(c);
    assertThat(time.waits()).endsWith(0L); // ended at once
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("503 busy");
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aFutureCancelledWhileTheFirstAttemptWaitsForItsPermitIsToldAsARefusedFirstAttempt()
      throws Exception {
    // The caller gives up (Future.cancel) while the first attempt waits for its permit: nothing is
    // sent, the callback hears cancelled() once on the cancelling thread, as HttpClient tells a
    // cancel, and the call is told as a first attempt the client refused (0 attempts), the permit
    // back.
    dev.retryagent.testing.EventLines told = new dev.retryagent.testing.EventLines();
    CloseableHttpAsyncClient c =
        started(
            AsyncRetryExecHandler.addTo(
                oneConnection(),
                engine(
                    r -> r.maxAttempts(3),
                    dev.retryagent.policy.RateLimitPolicy.builder()
                        .enabled(true)
                        .perSecond(1)
                        .burst(1)
                        .maxWait(Duration.ofSeconds(10))
                        .build(),
                    told)));
    server.otherwise(ok("fine"));
    long first = time.nanoTime();
    assertThat(call(c, SimpleRequestBuilder.get(server.url("/a")).build()).await())
        .isEqualTo("200 fine"); // the one permit
    told.lines.clear();
    time.holdTasks();

    Heard heard = new Heard();
    Future<SimpleHttpResponse> f =
        c.execute(SimpleRequestBuilder.get(server.url("/b")).build(), heard);
    await().atMost(LONG).until(() -> time.heldTasks() == 1); // its permit's wait
    String cancelling = Thread.currentThread().getName();
    f.cancel(true);
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("cancelled");
    assertThat(heard.thread).isEqualTo(cancelling);
    await().atMost(LONG).until(() -> told.lines.stream().anyMatch(l -> l.startsWith("CALL_")));
    assertThat(told.lines)
        .containsExactly(
            "RATE_LIMITED 0", "ATTEMPT 1", "GIVE_UP 0 CANCELLED", "CALL_COMPLETE 0 CANCELLED");
    assertThat(heard.times).hasValue(1);
    assertThat(server.requests()).extracting(r -> r.path).containsExactly("/a");
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
    // The permit reserved for it (due 1 s after the first call's) went back: the next call's is
    // due then, not 1 s later.
    time.runHeldTasks();
    Heard next = call(c, SimpleRequestBuilder.get(server.url("/c")).build());
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    assertThat(time.waits())
        .last()
        .isEqualTo(first + Duration.ofSeconds(1).toNanos() - time.nanoTime());
    time.runHeldTasks();
    assertThat(next.await()).isEqualTo("200 fine");
  }

  @ParameterizedTest
  @EnumSource(Close.class)
  void aFirstAttemptWaitingForItsPermitWhenTheClientClosesFailsAsACallMadeAfterTheClose(Close how)
      throws Exception {
    // Without the agent the request went out at execute; with it the first attempt waits for its
    // permit, and the close ends that wait. There is no earlier outcome to end with: the attempt
    // goes to the client, which refuses it as it refuses a call made after its close (5.1.3 and
    // 5.6.5 alike), nothing sent, heard once, where the wait ended.
    CloseableHttpAsyncClient plain = started(oneConnection());
    how.close(plain);
    Heard afterClose = call(plain, SimpleRequestBuilder.get(server.url("/items")).build());
    CloseableHttpAsyncClient c = onePermitASecond();
    server.otherwise(ok("fine"));
    assertThat(call(c, SimpleRequestBuilder.get(server.url("/a")).build()).await())
        .isEqualTo("200 fine"); // the one permit
    time.holdTasks();

    Heard waiting = call(c, SimpleRequestBuilder.get(server.url("/b")).build());
    await().atMost(LONG).until(() -> time.heldTasks() == 1); // its permit's wait
    how.close(c);
    assertThat(time.waits()).endsWith(0L); // ended at once
    // The wait's task, on this thread: what it threw would fail the test here.
    time.runHeldTasks();

    assertThat(waiting.await())
        .isEqualTo(afterClose.await())
        .isEqualTo("failed IllegalStateException");
    assertThat(waiting.failure).hasMessage(afterClose.failure.getMessage());
    assertThat(waiting.thread).isEqualTo(Thread.currentThread().getName());
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 2);
    assertThat(waiting.times).hasValue(1);
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
    assertThat(pool.getTotalStats().getLeased() + pool.getTotalStats().getPending()).isZero();
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aRetryWhoseWaitEndsWhileTheClientsReactorShutsDownIsNotSent() throws Exception {
    // HttpClient 5.1's close(GRACEFUL) shuts its reactor down and waits for it (up to 5 s) before
    // it closes the agent's closeable: a wait ending then sends nothing into the closing client.
    // Here the shutdown is begun (initiateShutdown) and the client not closed at all.
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    time.holdTasks();
    server.enqueue(status(503).body("busy"), ok("too late"));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    awaitRetriedExchangeOver();
    c.initiateShutdown();
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("503 busy");
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertThat(ofType(RetryEvent.Type.RETRY)).isEqualTo(1);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void closingTheClientWhileARetriedBodyIsReadGivesTheFailureOfThatExchange() throws Exception {
    // The 503's body is still coming when the client closes: it cannot be given back. Without
    // the agent the application's consumer was reading it, and the close failed that exchange:
    // the application gets that failure, not a word of a wait that ended late.
    Got got = new Got();
    retriedBodyHeld(got).close(CloseMode.IMMEDIATE);
    // Where HttpCore loses the exchange at the close, the call tells it after its grace.
    runHeldTasksUntil(got.outcome);

    assertThat(got.await())
        .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.THROWABLE)
        .isInstanceOf(ConnectionClosedException.class)
        .hasMessageNotContaining("deadline");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  /**
   * {@code http://user:pa@ss@h.example/}: HttpClient takes {@code ss@h.example}, part of the
   * password, as the host; the agent's own failure named it as it was.
   */
  @Test
  void closingTheClientDuringAWaitAfterALongBodyNamesTheHostWithoutThePasswordPartInIt()
      throws Exception {
    org.apache.hc.client5.http.DnsResolver loopback =
        new org.apache.hc.client5.http.DnsResolver() {
          @Override
          public java.net.InetAddress[] resolve(String host) {
            return new java.net.InetAddress[] {java.net.InetAddress.getLoopbackAddress()};
          }

          @Override
          public String resolveCanonicalHostname(String host) {
            return host;
          }
        };
    pool =
        PoolingAsyncClientConnectionManagerBuilder.create()
            .setMaxConnPerRoute(1)
            .setMaxConnTotal(1)
            .setDnsResolver(loopback)
            .build();
    CloseableHttpAsyncClient c =
        started(
            AsyncRetryExecHandler.addTo(
                HttpAsyncClients.custom().disableAutomaticRetries().setConnectionManager(pool),
                engine(r -> r.maxAttempts(3))));
    time.holdTasks();
    server.enqueue(status(503).body(repeat('y', 9000)), ok("too late"));

    Got got = new Got();
    c.execute(
        SimpleRequestBuilder.get()
            .setHttpHost(
                new org.apache.hc.core5.http.HttpHost("http", "ss@h.example", server.port()))
            .setPath("/items")
            .build(),
        got);
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    awaitRetriedExchangeOver();
    c.close(CloseMode.GRACEFUL);
    time.runHeldTasks();

    assertThat(got.await())
        .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.THROWABLE)
        .isInstanceOf(IOException.class)
        .hasMessageContaining(
            "the client closed during the wait to retry GET http://<redacted>@h.example:"
                + server.port())
        .hasMessageNotContaining("ss@");
  }

  @Test
  void closingTheClientDuringAWaitAfterALongBodySaysTheClientClosed() throws Exception {
    // A body over 8 KiB is not kept for a give-back: the failure says what happened.
    CloseableHttpAsyncClient c = withHandler(r -> r.maxAttempts(3));
    time.holdTasks();
    server.enqueue(status(503).body(repeat('y', 9000)), ok("too late"));

    Got got = new Got();
    c.execute(SimpleRequestBuilder.get(server.url("/items")).build(), got);
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    awaitRetriedExchangeOver();
    c.close(CloseMode.GRACEFUL);
    time.runHeldTasks();

    assertThat(got.await())
        .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.THROWABLE)
        .isInstanceOf(IOException.class)
        .hasMessageContaining("the client closed during the wait to retry GET")
        .hasMessageNotContaining("deadline");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aRetryWaitingForTheRetriedBodysEndWhenTheClientClosesIsNotSent() throws Exception {
    // The retry's wait is over before the 503's body has all come: the retry waits for that
    // exchange's end, which the close brings. Nothing more goes out; the call ends as the close
    // ends the exchange whose body was read.
    Heard heard = new Heard();
    CloseableHttpAsyncClient c = retriedBodyHeld(heard);
    time.runHeldTasks(); // the wait ends: the retry waits for the body's end
    c.close(CloseMode.IMMEDIATE);
    // Where HttpCore loses the exchange at the close, the call tells it after its grace.
    runHeldTasksUntil(heard.outcome);

    assertThat(heard.await()).isEqualTo("failed ConnectionClosedException");
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void httpClientsOwnStrategyNeverResendsWhatThePolicyRetries() throws Exception {
    HttpAsyncClientBuilder b =
        HttpAsyncClients.custom()
            .setRetryStrategy(new DefaultHttpRequestRetryStrategy(1, TimeValue.ZERO_MILLISECONDS));
    CloseableHttpAsyncClient c =
        started(AsyncRetryExecHandler.addTo(b, engine(r -> r.maxAttempts(3))));
    server.otherwise(status(503));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());

    assertThat(heard.await()).startsWith("503");
    // maxAttempts on the wire: our two retries, no resend of HttpClient's in between.
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(ofType(RetryEvent.Type.RETRY)).isEqualTo(2);
  }

  @Test
  void httpClientsOwnResendOfAStatusThePolicyLeavesAloneIsCountedAsAnAttempt() throws Exception {
    HttpAsyncClientBuilder b =
        HttpAsyncClients.custom()
            .setRetryStrategy(new DefaultHttpRequestRetryStrategy(1, TimeValue.ZERO_MILLISECONDS));
    CloseableHttpAsyncClient c =
        started(
            AsyncRetryExecHandler.addTo(
                b,
                engine(
                    r ->
                        r.maxAttempts(3)
                            .retryOnStatuses(dev.retryagent.policy.StatusSet.of("502")))));
    server.enqueue(status(429), ok("done"));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());

    assertThat(heard.await()).isEqualTo("200 done");
    assertThat(server.requestCount()).isEqualTo(2);
    await().atMost(LONG).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    RetryEvent done =
        events.stream().filter(e -> e.type() == RetryEvent.Type.CALL_COMPLETE).findFirst().get();
    assertThat(done.attempt()).isEqualTo(2);
  }

  /** What the application's consumer got, field by field, and on which thread. */
  private static final class Got implements FutureCallback<SimpleHttpResponse> {
    final CompletableFuture<Object> outcome = new CompletableFuture<>();
    volatile String thread;

    @Override
    public void completed(SimpleHttpResponse r) {
      thread = Thread.currentThread().getName();
      List<String> headers = new ArrayList<>();
      for (Header h : r.getHeaders()) {
        if (!h.getName().equalsIgnoreCase("Date")) {
          headers.add(h.getName() + ": " + h.getValue());
        }
      }
      outcome.complete(
          List.of(
              r.getCode(),
              String.valueOf(r.getReasonPhrase()),
              String.valueOf(r.getVersion()),
              headers,
              String.valueOf(r.getContentType()),
              r.getBodyText()));
    }

    @Override
    public void failed(Exception e) {
      thread = Thread.currentThread().getName();
      outcome.complete(e);
    }

    @Override
    public void cancelled() {
      outcome.complete("cancelled");
    }

    Object await() throws Exception {
      return outcome.get(LONG.getSeconds(), TimeUnit.SECONDS);
    }
  }

  private CloseableHttpAsyncClient lateDeadline() {
    // Each wait ends 40 s late (a paused JVM), past the 1 s deadline.
    time.late(40_000_000_000L);
    return withHandler(
        r -> r.maxAttempts(3).deadline(Duration.ofSeconds(1)).retryAfterMax(Duration.ofSeconds(1)));
  }

  @Test
  void aRetrysWaitThatEndsPastTheDeadlineGivesBackTheResponseAsWithoutTheHandler()
      throws Exception {
    // No retry goes out; the application's consumer and callback get the 503 they get without the
    // handler, from the copy kept as its body was read for the retry.
    String page = repeat('x', 6000);
    server.enqueue(
        status(503).header("X-Shard", "7").body(page),
        status(503).header("X-Shard", "7").body(page));
    server.otherwise(ok("late"));
    Got without = new Got();
    started(oneConnection())
        .execute(SimpleRequestBuilder.get(server.url("/items")).build(), without);
    Object expected = without.await();

    Got with = new Got();
    lateDeadline().execute(SimpleRequestBuilder.get(server.url("/items")).build(), with);

    assertThat(with.await()).isEqualTo(expected);
    assertThat(((List<?>) expected).get(0)).isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(2);
    // Heard where the later of the wait's end and the retried body's end came: the engine's
    // scheduler thread or the client's I/O thread (a documented limit).
    assertThat(with.thread).matches("fake-time-scheduler|httpclient-dispatch-\\d+");
  }

  @Test
  void anInterceptorBeforeTheHandlerSeesOnlyTheRequestsTheApplicationMade() throws Exception {
    // The late end is delivered where it ends, not brought back through the chain, where an
    // application's interceptor before ours would see an execution that is not a request.
    time.late(40_000_000_000L);
    java.util.concurrent.atomic.AtomicInteger seen =
        new java.util.concurrent.atomic.AtomicInteger();
    HttpAsyncClientBuilder b =
        AsyncRetryExecHandler.addTo(
            oneConnection(),
            engine(
                r ->
                    r.maxAttempts(3)
                        .deadline(Duration.ofSeconds(1))
                        .retryAfterMax(Duration.ofSeconds(1))));
    b.addExecInterceptorFirst(
        "app",
        (request, producer, scope, chain, callback) -> {
          seen.incrementAndGet();
          chain.proceed(request, producer, scope, callback);
        });
    server.enqueue(status(503).body("busy"));
    server.otherwise(ok("late"));

    assertThat(call(started(b), SimpleRequestBuilder.get(server.url("/items")).build()).await())
        .isEqualTo("503 busy");
    assertThat(seen).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aRetrysWaitThatEndsPastTheDeadlineAfterALongBodyFailsWithNothingSent() throws Exception {
    // A body over 8 KiB is not kept: the engine says why, heard where the later of the wait's end
    // and the body's end came, and nothing more is sent.
    server.enqueue(status(503).body(repeat('y', 9000)));
    server.otherwise(ok("late"));
    Got got = new Got();

    lateDeadline().execute(SimpleRequestBuilder.get(server.url("/items")).build(), got);

    assertThat(got.await())
        .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.THROWABLE)
        .isInstanceOf(IOException.class)
        .hasMessageContaining("ended past the call's deadline");
    assertThat(got.thread).matches("fake-time-scheduler|httpclient-dispatch-\\d+");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aGivenBackBodyIsFedWithinTheCapacityTheConsumerGives() throws Exception {
    // As HttpCore feeds a consumer: no more than the capacity it gave; the rest once it asks.
    server.enqueue(status(503).body(repeat('z', 6000)));
    server.otherwise(ok("late"));
    Capped consumer = new Capped();
    CompletableFuture<String> body = new CompletableFuture<>();

    lateDeadline()
        .execute(
            SimpleRequestProducer.create(SimpleRequestBuilder.get(server.url("/items")).build()),
            consumer,
            new FutureCallback<String>() {
              @Override
              public void completed(String r) {
                body.complete(r);
              }

              @Override
              public void failed(Exception e) {
                body.completeExceptionally(e);
              }

              @Override
              public void cancelled() {
                body.cancel(false);
              }
            });

    await().atMost(LONG).until(() -> !consumer.chunks.isEmpty());
    assertThat(consumer.chunks).containsExactly(1000);
    assertThat(body).isNotDone();
    consumer.channel.update(100_000);

    assertThat(body.get(LONG.getSeconds(), TimeUnit.SECONDS)).isEqualTo(repeat('z', 6000));
    assertThat(consumer.code).isEqualTo(503);
    assertThat(consumer.chunks.stream().mapToInt(Integer::intValue).sum()).isEqualTo(6000);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  /** A consumer that gives 1000 bytes of capacity, then waits to be given more. */
  private static final class Capped implements AsyncResponseConsumer<String> {
    final List<Integer> chunks = new CopyOnWriteArrayList<>();
    private final StringBuilder text = new StringBuilder();
    volatile CapacityChannel channel;
    volatile int code;
    private FutureCallback<String> result;

    @Override
    public void consumeResponse(
        HttpResponse response,
        EntityDetails details,
        HttpContext context,
        FutureCallback<String> resultCallback) {
      code = response.getCode();
      result = resultCallback;
    }

    @Override
    public void informationResponse(HttpResponse response, HttpContext context) {}

    @Override
    public void updateCapacity(CapacityChannel c) throws IOException {
      if (channel == null) {
        channel = c;
        c.update(1000);
      }
    }

    @Override
    public void consume(ByteBuffer src) {
      chunks.add(src.remaining());
      while (src.hasRemaining()) {
        text.append((char) src.get());
      }
    }

    @Override
    public void streamEnd(List<? extends Header> trailers) {
      result.completed(text.toString());
    }

    @Override
    public void failed(Exception cause) {
      if (result != null) {
        result.failed(cause);
      }
    }

    @Override
    public void releaseResources() {}
  }

  @Test
  void aGiveBackAfterTheHookWasSwitchedOffIsStillDeliveredAndNotSent() throws Exception {
    // A reload switches the agent's hook off during the wait (the agent's Apache5Glue then proceeds
    // down the chain, as this one does): the call that waited still ends with its give-back, never
    // sent again.
    time.late(40_000_000_000L);
    time.holdTasks();
    AsyncRetryExecHandler retries =
        new AsyncRetryExecHandler(
            engine(
                r ->
                    r.maxAttempts(3)
                        .deadline(Duration.ofSeconds(1))
                        .retryAfterMax(Duration.ofSeconds(1))));
    java.util.concurrent.atomic.AtomicBoolean on =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    CloseableHttpAsyncClient c =
        started(
            AsyncRetryExecHandler.install(
                oneConnection(),
                (request, producer, scope, chain, callback) -> {
                  if (on.get()) {
                    retries.execute(request, producer, scope, chain, callback);
                  } else {
                    chain.proceed(request, producer, scope, callback);
                  }
                }));
    server.enqueue(status(503).body("busy"));
    server.otherwise(ok("sent again"));

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/items")).build());
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    on.set(false);
    time.runHeldTasks();

    assertThat(heard.await()).isEqualTo("503 busy");
    // The wait ends on this thread (held fake time), or the body's end came later on the I/O
    // thread.
    assertThat(heard.thread)
        .matches(Thread.currentThread().getName() + "|httpclient-dispatch-\\d+");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  /** Two attempts; a breaker that two failed calls open for a minute. */
  private CloseableHttpAsyncClient withBreaker() {
    return started(
        AsyncRetryExecHandler.addTo(
            oneConnection(),
            TestEngines.engine(
                time,
                Mode.ENFORCE,
                r -> r.maxAttempts(2),
                CircuitBreakerPolicy.builder()
                    .countWindow(2)
                    .minimumCalls(2)
                    .openFor(Duration.ofMinutes(1))
                    .build(),
                events)));
  }

  @Test
  void anOpenBreakerRefusesTheNextCallWithNothingSent() throws Exception {
    CloseableHttpAsyncClient c = withBreaker();
    server.otherwise(status(503));

    assertThat(call(c, SimpleRequestBuilder.get(server.url("/a")).build()).await())
        .startsWith("503");
    Heard refused = call(c, SimpleRequestBuilder.get(server.url("/b")).build());

    assertThat(refused.await()).isEqualTo("failed CircuitBreakerOpenException");
    // Refused before anything of the call reached the client: on the thread that called execute.
    assertThat(refused.thread).isEqualTo(Thread.currentThread().getName());
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void aBreakerThatOpensDuringTheWaitRefusesTheRetryWithNothingSent() throws Exception {
    // A second call's 503 opens the breaker while the first waits: the first's retry is refused
    // at its wait's end, and the application hears that where the wait ended (the engine's thread).
    CloseableHttpAsyncClient c = withBreaker();
    time.holdTasks();
    server.enqueue(status(503).body("busy"), status(503).body("busy too"));
    server.otherwise(ok("sent again"));

    Heard waiting = call(c, SimpleRequestBuilder.get(server.url("/a")).build());
    await().atMost(LONG).until(() -> time.heldTasks() == 1);
    Heard opening = call(c, SimpleRequestBuilder.get(server.url("/b")).build());
    assertThat(opening.await()).isEqualTo("failed CircuitBreakerOpenException");
    time.runHeldTasks();

    assertThat(waiting.await()).isEqualTo("failed CircuitBreakerOpenException");
    // Under held fake time the wait ends on this thread.
    assertThat(waiting.thread).isEqualTo(Thread.currentThread().getName());
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void aCallTheRateLimitGivesNoPermitIsRefusedWithNothingSent() throws Exception {
    CloseableHttpAsyncClient c =
        started(
            AsyncRetryExecHandler.addTo(
                oneConnection(), TestEngines.rateLimitedTo(1, time, events)));
    server.otherwise(ok("fine"));

    assertThat(call(c, SimpleRequestBuilder.get(server.url("/a")).build()).await())
        .isEqualTo("200 fine");
    Heard refused = call(c, SimpleRequestBuilder.get(server.url("/b")).build());

    assertThat(refused.await()).isEqualTo("failed RateLimitedException");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  /** A 503's body: a short one, and one over the 8 KiB a copy kept for a give-back holds. */
  enum Body {
    SHORT("busy"),
    OVER_8_KIB("busy ".repeat(4 * 1024)); // 20 KiB

    final String text;

    Body(String text) {
      this.text = text;
    }
  }

  @ParameterizedTest
  @EnumSource(Body.class)
  void aRetryTheRateLimitGivesNoPermitIsNotMadeAndTheResponseGoesBackAsWithoutTheHandler(Body body)
      throws Exception {
    // One permit, never refilled (maxWait 0): the first attempt takes it, its 503 is retried, and
    // the retry's permit, asked for at the decision on the 503's head, is refused. The retry is not
    // made, nothing more is sent, and the application's consumer gets the 503 itself, body whole,
    // as without the handler, whatever the body's size, and with no wait. Before, the permit was
    // asked for after the retry's wait, once the body had been read away for the retry: a short
    // body came back from the copy kept of it, a 20 KiB one was gone and the application got
    // RateLimitedException.
    server.enqueue(status(503).header("X-Shard", "7").body(body.text));
    server.otherwise(ok("sent again"));
    Got without = new Got();
    started(oneConnection()).execute(SimpleRequestBuilder.get(server.url("/a")).build(), without);
    Object expected = without.await();
    assertThat(((List<?>) expected).get(0)).isEqualTo(503);
    assertThat(((List<?>) expected).get(5)).isEqualTo(body.text);

    CloseableHttpAsyncClient c =
        started(
            AsyncRetryExecHandler.addTo(
                oneConnection(), TestEngines.rateLimitedTo(1, time, events)));
    server.enqueue(status(503).header("X-Shard", "7").body(body.text));
    Got with = new Got();
    c.execute(SimpleRequestBuilder.get(server.url("/a")).build(), with);

    assertThat(with.await()).isEqualTo(expected);
    assertThat(time.waits()).isEmpty(); // refused at the decision: no wait
    assertThat(server.requestCount()).isEqualTo(2); // one without the handler, one with it
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .singleElement()
        .extracting(RetryEvent::reason)
        .isEqualTo(GiveUpReason.RATE_LIMITED);
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
  }

  @Test
  void aRetrysPermitReservedAtTheDecisionGoesBackOnceWhenTheCallIsCancelledDuringTheWait()
      throws Exception {
    // Two permits, never refilled: the first attempt takes one, the retry of its 503 the other, at
    // the decision. The application cancels during the retry's wait: the retry's permit goes back,
    // once. The next call gets it; the one after is refused (back twice, it would go too; never
    // back, the next would be refused).
    CloseableHttpAsyncClient c =
        started(
            AsyncRetryExecHandler.addTo(
                oneConnection(), TestEngines.rateLimitedTo(2, time, events)));
    time.holdTasks();
    server.enqueue(status(503).body("busy ".repeat(4 * 1024)));
    server.otherwise(ok("fine"));

    Heard cancelled = new Heard();
    java.util.concurrent.Future<SimpleHttpResponse> f =
        c.execute(SimpleRequestBuilder.get(server.url("/a")).build(), cancelled);
    await().atMost(LONG).until(() -> time.heldTasks() == 1); // the retry waits, permit reserved
    awaitRetriedExchangeOver();
    f.cancel(true);
    time.runHeldTasks();
    assertThat(cancelled.await()).isEqualTo("cancelled");
    await().atMost(LONG).until(() -> AsyncRetryExecHandler.RUNNING.isEmpty());

    assertThat(call(c, SimpleRequestBuilder.get(server.url("/b")).build()).await())
        .isEqualTo("200 fine");
    assertThat(call(c, SimpleRequestBuilder.get(server.url("/c")).build()).await())
        .isEqualTo("failed RateLimitedException");
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
  }

  @Test
  void theAgentsInstallGovernsHttpClientsDefaultStrategy() throws Exception {
    // As the agent's hook does it, on a builder just made: HttpClient's default strategy, which
    // would resend a 503 once after 1 s, is governed; the policy's retries take its place.
    CloseableHttpAsyncClient c =
        started(
            AsyncRetryExecHandler.install(
                HttpAsyncClients.custom(),
                new AsyncRetryExecHandler(engine(r -> r.maxAttempts(3)))));
    server.otherwise(status(503));

    assertThat(call(c, SimpleRequestBuilder.get(server.url("/items")).build()).await())
        .startsWith("503");
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(ofType(RetryEvent.Type.RETRY)).isEqualTo(2);
  }

  @Test
  void addToSetsAsideAHandlerOfOursTheBuilderHasAlready() throws Exception {
    // As beside the agent: its hook installed a handler of its own (5 attempts, another engine)
    // when the builder was made, then the application adds the library's (3 attempts).
    List<RetryEvent> agents = new CopyOnWriteArrayList<>();
    HttpAsyncClientBuilder b =
        AsyncRetryExecHandler.install(
            oneConnection(),
            new AsyncRetryExecHandler(
                TestEngines.engine(
                    time,
                    Mode.ENFORCE,
                    r -> r.maxAttempts(5),
                    CircuitBreakerPolicy.defaults(),
                    agents)));
    CloseableHttpAsyncClient c =
        started(AsyncRetryExecHandler.addTo(b, engine(r -> r.maxAttempts(3))));
    server.otherwise(status(503));

    assertThat(call(c, SimpleRequestBuilder.get(server.url("/items")).build()).await())
        .startsWith("503");
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(agents).isEmpty();
  }

  private static String repeat(char ch, int n) {
    char[] a = new char[n];
    java.util.Arrays.fill(a, ch);
    return new String(a);
  }

  /** A producer that cannot produce its body twice, around one that could. */
  private static final class OneShot implements AsyncEntityProducer {
    private final AsyncEntityProducer own;

    OneShot(AsyncEntityProducer own) {
      this.own = own;
    }

    @Override
    public boolean isRepeatable() {
      return false;
    }

    @Override
    public void failed(Exception cause) {
      own.failed(cause);
    }

    @Override
    public long getContentLength() {
      return own.getContentLength();
    }

    @Override
    public String getContentType() {
      return own.getContentType();
    }

    @Override
    public String getContentEncoding() {
      return own.getContentEncoding();
    }

    @Override
    public boolean isChunked() {
      return own.isChunked();
    }

    @Override
    public Set<String> getTrailerNames() {
      return own.getTrailerNames();
    }

    @Override
    public int available() {
      return own.available();
    }

    @Override
    public void produce(DataStreamChannel channel) throws IOException {
      own.produce(channel);
    }

    @Override
    public void releaseResources() {
      own.releaseResources();
    }
  }

  @Test
  void eachAttemptSendsWhatHttpCoresOwnCopyOfTheRequestWouldBe() {
    // AsyncCall.copyOf makes BasicRequestBuilder.copy(request).build() without the builder (issue
    // 13): the same method, scheme, authority, path with its query, version and headers in their
    // order, on this execution's HttpCore (5.1, and the latest on apache56), and a new object, so
    // that what the chain below adds is not on the application's request.
    SimpleHttpRequest plain = SimpleRequestBuilder.get("http://localhost:8080/items").build();
    SimpleHttpRequest full =
        SimpleRequestBuilder.put("https://api.example:8443/a/b?x=1&y=%20z")
            .setVersion(org.apache.hc.core5.http.HttpVersion.HTTP_1_0)
            .addHeader("X-One", "1")
            .addHeader("Accept", "text/plain")
            .addHeader("X-One", "again")
            .setBody("{}", ContentType.APPLICATION_JSON)
            .build();
    // Absolute on the wire (no getter in 5.1: getRequestUri() shows it); neither copy keeps it.
    org.apache.hc.core5.http.message.BasicHttpRequest absolute =
        new org.apache.hc.core5.http.message.BasicHttpRequest(
            "POST", new org.apache.hc.core5.http.HttpHost("https", "h.example", 443), "/p?q");
    absolute.setAbsoluteRequestUri(true);
    absolute.addHeader("Host", "h.example");
    for (org.apache.hc.core5.http.HttpRequest original :
        new org.apache.hc.core5.http.HttpRequest[] {plain, full, absolute}) {
      org.apache.hc.core5.http.HttpRequest ours = AsyncCall.copyOf(original);
      org.apache.hc.core5.http.HttpRequest httpCores =
          org.apache.hc.core5.http.support.BasicRequestBuilder.copy(original).build();
      assertThat(ours).isNotSameAs(original).hasSameClassAs(httpCores);
      assertThat(described(ours)).isEqualTo(described(httpCores));
      ours.addHeader("Content-Length", "2");
      assertThat(original.containsHeader("Content-Length")).isFalse();
    }
  }

  @ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(
      strings = {
        "org.apache.hc.core5.http.ProtocolException",
        "org.apache.hc.core5.http.HttpException",
        "java.lang.Exception"
      })
  void aProtocolFailureIsNeverRetriedWhateverRetryOnExceptionsNames(String named) throws Exception {
    // Redirected past maxRedirects: the async redirect step, below the handler, fails the exchange
    // with RedirectException (a ProtocolException, an HttpException): deterministic, as in the
    // classic client (GovernedRetryStrategyTest), so never retried, whatever retryOn.exceptions
    // names; the application hears that failure after the same 2 requests as without the agent.
    CloseableHttpAsyncClient c =
        withHandler(r -> r.maxAttempts(3).retryOnExceptions(List.of(named)));
    server.otherwise(status(302).header("Location", "/again"));
    SimpleHttpRequest get = SimpleRequestBuilder.get(server.url("/items")).build();
    get.setConfig(
        org.apache.hc.client5.http.config.RequestConfig.custom().setMaxRedirects(1).build());

    Heard heard = call(c, get);

    assertThat(heard.await()).isEqualTo("failed RedirectException");
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
    assertThat(ofType(RetryEvent.Type.RETRY)).isZero();
    await().atMost(LONG).until(AsyncRetryExecHandler.RUNNING::isEmpty);
  }

  private static String described(org.apache.hc.core5.http.HttpRequest r) {
    StringBuilder b =
        new StringBuilder()
            .append(r.getMethod())
            .append(' ')
            .append(r.getScheme())
            .append(' ')
            .append(r.getAuthority())
            .append(' ')
            .append(r.getPath())
            .append(' ')
            .append(r.getVersion())
            .append(' ')
            .append(r.getRequestUri());
    for (Header h : r.getHeaders()) {
      b.append('|').append(h.getName()).append(": ").append(h.getValue());
    }
    return b.toString();
  }
}
