package dev.retryagent.jdk;

import static dev.retryagent.testing.ScriptedHttpServer.Action.closeWithoutResponse;
import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.reset;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retryagent.engine.CircuitBreakerOpenException;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.internal.jdk.JdkRetrying;
import dev.retryagent.internal.jdk.JdkTransport;
import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Jitter;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.Bodiless;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The decorating client against a real loopback server, through {@code send} and {@code sendAsync};
 * the server counts what really arrived.
 */
class RetryingHttpClientTest {
  enum Way {
    SEND,
    SEND_ASYNC
  }

  private ScriptedHttpServer server;
  private FakeTime time;
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final HttpClient real =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    time = new FakeTime();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  private HttpClient client(UnaryOperator<RetryPolicy.Builder> retry) {
    return client(Mode.ENFORCE, retry, CircuitBreakerPolicy.defaults());
  }

  private HttpClient client(
      Mode mode, UnaryOperator<RetryPolicy.Builder> retry, CircuitBreakerPolicy breaker) {
    RetryEngine engine = TestEngines.engine(time, mode, retry, breaker, events);
    return RetryingHttpClient.wrap(real, engine);
  }

  private static HttpResponse<String> call(Way way, HttpClient client, HttpRequest request)
      throws Exception {
    if (way == Way.SEND) {
      return client.send(request, HttpResponse.BodyHandlers.ofString());
    }
    try {
      return client
          .sendAsync(request, HttpResponse.BodyHandlers.ofString())
          .get(20, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof Exception) {
        throw (Exception) e.getCause();
      }
      throw e;
    }
  }

  private HttpRequest get(String path) {
    return HttpRequest.newBuilder(URI.create(server.url(path))).build();
  }

  private HttpRequest post(String path, String body, String idempotencyKey) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(server.url(path)))
            .POST(HttpRequest.BodyPublishers.ofString(body));
    if (idempotencyKey != null) {
      b.header("Idempotency-Key", idempotencyKey);
    }
    return b.build();
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aRetrysWaitThatEndsPastTheDeadlineEndsTheCallWithTheAttemptsOutcome(Way way)
      throws Exception {
    // Each wait before a retry ends 40 s late (a paused JVM, a timer held up), past the 1 s
    // deadline: the retry went anyway with a request timeout of 1 ns, the server got a request
    // nobody waited for, and the application an HttpTimeoutException instead of its outcome. (A
    // reset the JDK resends itself at once, without a wait: the engine's tests take failures.)
    HttpClient client =
        client(b -> b.deadline(Duration.ofSeconds(1)).retryAfterMax(Duration.ofSeconds(1)));
    time.late(40_000_000_000L);
    server.otherwise(ok("late"));

    // The 503 released for the retry is given back (its body kept by the agent's subscriber:
    // GiveBackAfterALateWaitTest), not retried past the deadline.
    server.enqueue(status(503));
    HttpResponse<String> r = call(way, client, get("/v1/items"));
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.body()).isEqualTo("status 503");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aRetriedResponseGivesItsConnectionBackForTheRetry(Way way) throws Exception {
    // The body of each retried 503 (a short one, and one larger than a socket's buffers, within
    // Discards.LIMIT) is read to its end by the agent's subscriber, so its HTTP/1.1 connection goes
    // back to the JDK's pool for the retry: 10 calls, 20 requests, one connection. A subscriber
    // that dropped the body
    // (cancelled it) would cost a connection per retry; one that never read it, a hung call.
    HttpClient client =
        client(Mode.ENFORCE, b -> b, CircuitBreakerPolicy.builder().enabled(false).build());
    String large = "x".repeat(60_000);
    for (int i = 0; i < 10; i++) {
      server.enqueue(status(503).body(i % 2 == 0 ? large : "busy"), ok("fine"));
      assertThat(call(way, client, get("/v1/items")).body()).isEqualTo("fine");
    }
    assertThat(server.requestCount()).isEqualTo(20);
    assertThat(server.connectionCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Bodiless.class)
  void aRetriedResponseWithoutABodyLeavesItsConnectionToTheNextAttempt(Bodiless c) {
    // Side by side, send and sendAsync: nothing to read of the retried response, so the retry
    // goes out on its connection at once, as the plain client's next call does.
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(server.url("/r")))
            .method(c.method, HttpRequest.BodyPublishers.noBody())
            .build();
    for (Way way : Way.values()) {
      HttpClient ours =
          RetryingHttpClient.wrap(
              HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(),
              TestEngines.engine(
                  time,
                  Mode.ENFORCE,
                  c::policy,
                  CircuitBreakerPolicy.builder().enabled(false).build(),
                  events));
      c.sideBySide(
          server,
          () -> answer(real.send(request, HttpResponse.BodyHandlers.ofString())),
          () -> answer(call(way, ours, request)),
          true,
          way.name());
    }
  }

  private static String answer(HttpResponse<String> r) {
    return r.statusCode() + " " + r.body();
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aRetriedResponseWhoseBodyIsHeldIsLetGoWithoutWaitingForTheRest(Way way) throws Exception {
    // The 503's head and 4 bytes of its body arrive, the rest only when the test releases it (the
    // server's own bound: 10 s). Side by side: the plain client gives an application that streams
    // the body the 503 at its head. Through us the retry waited for the rest of a body nobody
    // reads (java.net.http has no read timeout) as long as the server held it, and then went out
    // on the same connection. Now the body is waited for only as long as the retry's backoff
    // (DiscardedBody.grace), then its subscription is cancelled: the retry goes out on a
    // connection of its own.
    CountDownLatch plainRelease = new CountDownLatch(1);
    server.enqueue(status(503).body("busy busy busy").heldAfter(4, plainRelease));
    try {
      HttpResponse<java.io.InputStream> plain =
          real.send(get("/plain"), HttpResponse.BodyHandlers.ofInputStream());
      assertThat(plain.statusCode()).isEqualTo(503);
      plain.body().close();
    } finally {
      plainRelease.countDown();
    }
    org.awaitility.Awaitility.await().until(() -> server.isDoneWith(0));
    CountDownLatch release = new CountDownLatch(1);
    server.enqueue(status(503).body("busy busy busy").heldAfter(4, release), ok("done"));
    try {
      HttpClient client =
          client(Mode.ENFORCE, b -> b, CircuitBreakerPolicy.builder().enabled(false).build());
      HttpResponse<String> r = call(way, client, get("/retried"));
      assertThat(r.body()).isEqualTo("done");
      assertThat(server.requestCount()).isEqualTo(3);
      assertThat(server.connectionCount()).as("the retry did not wait for the 503's").isEqualTo(3);
    } finally {
      release.countDown();
    }
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aRetriedResponseWithAnEndlessBodyHasItsConnectionClosedNotReadToItsEnd(Way way)
      throws Exception {
    // Side by side: the plain client gives an application that streams the body the 503 as its
    // head arrives. Through us the retry comes at once, on a connection of its own, the 503's
    // closed past Discards.LIMIT (its subscription cancelled), never read to its end (1 GiB, sent
    // until the client goes), where the JDK's discarding subscriber read every byte first.
    server.enqueue(status(503).endless());
    HttpResponse<java.io.InputStream> plain =
        real.send(get("/plain"), HttpResponse.BodyHandlers.ofInputStream());
    assertThat(plain.statusCode()).isEqualTo(503);
    plain.body().close();
    HttpClient client =
        client(Mode.ENFORCE, b -> b, CircuitBreakerPolicy.builder().enabled(false).build());
    server.enqueue(status(503).endless(), ok("fine"));
    HttpResponse<String> r =
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
            Duration.ofSeconds(10), () -> call(way, client, get("/retried")));
    assertThat(r.body()).isEqualTo("fine");
    org.awaitility.Awaitility.await().until(() -> server.isDoneWith(1));
    assertThat(server.connectionCount()).isEqualTo(3);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void retries503TwiceThenReturnsThe200(Way way) throws Exception {
    server.enqueue(status(503), status(503), ok("done"));

    HttpResponse<String> r = call(way, client(b -> b), get("/v1/items"));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).isEqualTo("done");
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(time.waits()).hasSize(2);
  }

  /**
   * A retry the rate limit gives no permit is not made: the caller gets the 503 it gets without the
   * agent, as when the retry could not start before the deadline. Before, it got the rate limit's
   * RateLimitedException in its place. (The first attempt's refusal stays that exception:
   * aPublisherOfTheWrongLength...)
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aRetryTheRateLimitRefusesEndsWithThe503AsWithoutTheAgent(Way way) throws Exception {
    assertThat(aRetryTheRateLimitRefusesAfterA503(way, "busy").body()).isEqualTo("busy");
  }

  /**
   * A 503 with {@code body}, then a retry the rate limit refuses: the caller's response, compared
   * with the plain client's.
   */
  private HttpResponse<String> aRetryTheRateLimitRefusesAfterA503(Way way, String body)
      throws Exception {
    server.enqueue(status(503).header("X-Shard", "7").body(body));
    HttpResponse<String> without = call(way, real, get("/v1/items"));
    server.enqueue(status(503).header("X-Shard", "7").body(body), ok("never"));

    HttpResponse<String> r = call(way, rateLimitedToOne(), get("/v1/items"));

    assertThat(r.statusCode()).isEqualTo(503).isEqualTo(without.statusCode());
    assertThat(r.body()).isEqualTo(without.body());
    assertThat(r.headers().firstValue("X-Shard")).hasValue("7");
    assertThat(r.request().uri()).isEqualTo(without.request().uri());
    assertThat(server.requestCount()).isEqualTo(2); // one without the agent, one with it
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .singleElement()
        .extracting(RetryEvent::reason)
        .isEqualTo(dev.retryagent.engine.GiveUpReason.RATE_LIMITED);
    return r;
  }

  /**
   * As {@link #aRetryTheRateLimitRefusesEndsWithThe503AsWithoutTheAgent}, for a 503 whose body is
   * over the 8 KiB the agent keeps of a retried body: the retry's permit is asked for at the
   * decision, before the body is read away, and the refusal hands the response to the application's
   * own handler, body unread. Before, the body was read and dropped for the retry, and the refusal
   * after the wait ended the call with RateLimitedException.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aRetryTheRateLimitRefusesAfterA503WithABodyOver8KiBEndsWithThat503Whole(Way way)
      throws Exception {
    String large = "busy ".repeat(4 * 1024); // 20 KiB
    assertThat(aRetryTheRateLimitRefusesAfterA503(way, large).body())
        .hasSize(20 * 1024)
        .isEqualTo(large);
  }

  /**
   * The retry's permit, reserved at the decision, goes back to the bucket once when the caller
   * cancels during the retry's wait: the next call gets it, the one after is refused (twice back,
   * it would go too; never back, the next would be refused).
   */
  @Test
  void aRetrysPermitReservedAtTheDecisionGoesBackOnceWhenTheCallIsCancelledDuringTheWait()
      throws Exception {
    HttpClient client = RetryingHttpClient.wrap(real, TestEngines.rateLimitedTo(2, time, events));
    time.holdTasks();
    server.enqueue(status(503).body("busy ".repeat(4 * 1024)));
    java.util.concurrent.CompletableFuture<HttpResponse<String>> f =
        client.sendAsync(get("/v1/items"), HttpResponse.BodyHandlers.ofString());
    org.awaitility.Awaitility.await()
        .atMost(10, TimeUnit.SECONDS)
        .until(() -> time.heldTasks() == 1); // the retry waits, its permit reserved

    f.cancel(true);
    time.runHeldTasks();

    server.otherwise(ok("fine"));
    assertThat(call(Way.SEND, client, get("/v1/other")).statusCode()).isEqualTo(200);
    assertThatThrownBy(() -> call(Way.SEND, client, get("/v1/other")))
        .isInstanceOf(dev.retryagent.engine.RateLimitedException.class);
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
  }

  /**
   * A retry of {@code send} whose permit was reserved at the decision (aa3e7ae), while another
   * caller's 429 pauses the host during the retry's backoff: the retry gives that permit back and
   * waits out the pause for one (2 s more, not its backoff again), and the permit goes back once:
   * the bucket (3 permits, never refilled) is empty after the three requests. Twice back, the call
   * after would be let through; never back, the retry would be refused with the 503 kept. That 2 s
   * wait is told as a RATE_LIMITED event, as when the retry asked after its backoff: the
   * reservation, due within the backoff, told none, and the wait went untold.
   */
  @Test
  void aSendsRetryWithAPermitReservedAtTheDecisionWaitsOutAPauseAnotherCallers429BeganMeanwhile()
      throws Exception {
    java.util.concurrent.atomic.AtomicReference<HttpClient> client =
        new java.util.concurrent.atomic.AtomicReference<>();
    java.util.concurrent.atomic.AtomicReference<Object> other =
        new java.util.concurrent.atomic.AtomicReference<>();
    // The other caller's POST is not retried: its 429 only pauses the host, for 3 s.
    dev.retryagent.engine.Sleeper duringTheBackoff =
        time.withOtherCallerAtFirstWait(
            () -> call(Way.SEND, client.get(), post("/v1/other", "{}", null)).statusCode(), other);
    dev.retryagent.policy.RateLimitPolicy limit =
        TestEngines.neverRefilled(3).toBuilder().maxWait(Duration.ofSeconds(10)).build();
    List<RetryEvent> rateLimited = new CopyOnWriteArrayList<>();
    RetryEngine engine =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                b -> b,
                dev.retryagent.policy.Policy.defaults().budget(),
                CircuitBreakerPolicy.defaults(),
                limit)
            .sleeper(duringTheBackoff)
            .listener(TestEngines.recorder(events))
            .listener(
                new dev.retryagent.engine.RetryListener() {
                  @Override
                  public void onRateLimited(RetryEvent e) {
                    rateLimited.add(e);
                  }
                })
            .build();
    client.set(RetryingHttpClient.wrap(real, engine));
    server.enqueue(
        status(503).header("Retry-After", "1"), status(429).header("Retry-After", "3"), ok("done"));

    HttpResponse<String> r = call(Way.SEND, client.get(), get("/v1/items"));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).isEqualTo("done");
    assertThat(other.get()).as("the other caller's status").isEqualTo(429);
    // The backoff (Retry-After: 1), then what is left of the other caller's 3 s pause.
    assertThat(time.waits()).containsExactly(1_000_000_000L, 2_000_000_000L);
    // That wait for the permit is the rate limit's, told once, as when the retry asked after its
    // backoff: the reservation at the decision, within the backoff, told none.
    assertThat(rateLimited)
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.path()).isEqualTo("/v1/items");
              assertThat(e.delayNanos()).isEqualTo(2_000_000_000L);
              assertThat(e.reason()).isNull();
            });
    assertThat(server.requestCount()).isEqualTo(3);
    server.otherwise(ok("fine"));
    assertThatThrownBy(() -> call(Way.SEND, client.get(), get("/v1/after")))
        .isInstanceOf(dev.retryagent.engine.RateLimitedException.class);
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void neverRetriesAPostWithoutIdempotencyKey(Way way) throws Exception {
    server.enqueue(status(503), ok("charged"));

    HttpResponse<String> r = call(way, client(b -> b), post("/v1/charges", "{}", null));

    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void retriesAPostWithIdempotencyKeyWithTheSameKeyAndBody(Way way) throws Exception {
    server.enqueue(status(503), ok("charged"));

    HttpResponse<String> r =
        call(
            way,
            client(b -> b.unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY)),
            post("/v1/charges", "{\"amount\":42}", "order-7"));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(server.requests())
        .hasSize(2)
        .allSatisfy(
            req -> {
              assertThat(req.header("Idempotency-Key")).isEqualTo("order-7");
              assertThat(req.body).isEqualTo("{\"amount\":42}");
            });
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void doesNotRetryA404(Way way) throws Exception {
    server.enqueue(status(404), ok("never"));

    HttpResponse<String> r = call(way, client(b -> b), get("/missing"));

    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void waitsAtLeastWhatRetryAfterAsks(Way way) throws Exception {
    server.enqueue(status(429).header("Retry-After", "1"), ok("done"));

    HttpResponse<String> r = call(way, client(b -> b), get("/v1/summarise"));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(time.waits())
        .singleElement()
        .satisfies(w -> assertThat(w).isGreaterThanOrEqualTo(1_000_000_000L));
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void returnsThe429AtOnceWhenRetryAfterIsTooLong(Way way) throws Exception {
    server.enqueue(status(429).header("Retry-After", "120").body("slow down"), ok("never"));

    HttpResponse<String> r = call(way, client(b -> b), get("/v1/summarise"));

    assertThat(r.statusCode()).isEqualTo(429);
    assertThat(r.body()).isEqualTo("slow down");
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(time.waits()).isEmpty();
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void retriesAConnectionReset(Way way) throws Exception {
    server.enqueue(reset(), ok("after reset"));

    HttpResponse<String> r = call(way, client(b -> b), get("/v1/items"));

    assertThat(r.body()).isEqualTo("after reset");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void retriesAConnectionClosedWithoutResponse(Way way) throws Exception {
    server.enqueue(closeWithoutResponse(), ok("after eof"));

    HttpResponse<String> r = call(way, client(b -> b), get("/v1/items"));

    assertThat(r.body()).isEqualTo("after eof");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void makesExactlyMaxAttemptsAgainstAServerThatAlwaysFails(Way way) throws Exception {
    server.otherwise(status(503));

    HttpResponse<String> r = call(way, client(b -> b.maxAttempts(4)), get("/v1/items"));

    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(4);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void openBreakerFailsFastWithoutARequest(Way way) throws Exception {
    server.otherwise(status(503));
    CircuitBreakerPolicy breaker =
        CircuitBreakerPolicy.builder().countWindow(4).minimumCalls(4).build();
    HttpClient client = client(Mode.ENFORCE, b -> b.maxAttempts(1), breaker);
    for (int i = 0; i < 4; i++) {
      assertThat(call(way, client, get("/v1/items")).statusCode()).isEqualTo(503);
    }

    assertThatThrownBy(() -> call(way, client, get("/v1/items")))
        .isInstanceOf(CircuitBreakerOpenException.class)
        .hasMessageContaining("http://127.0.0.1:" + server.port())
        .hasMessageContaining("tried again at");
    assertThat(server.requestCount()).isEqualTo(4);
  }

  /**
   * A body publisher that fails on its own (an input stream whose read fails: "disk"; a publisher
   * of the application's that signals onError, here a reset of a socket it copies from) is the
   * application's mistake, not the host's failure: the call ends as the JDK alone ends it, with as
   * many requests. Counted as the host's failure, it opened a breaker that opens on one failure,
   * and the host's next call was refused.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aBodyPublisherThatFailsOnItsOwnEndsTheCallAsWithoutUsNotAsTheHostsFailure(Way way)
      throws Exception {
    // Connection: close, so that each call has a connection of its own, which the server is done
    // with (assertFailsAsWithoutUs) before the requests it counted are compared.
    server.otherwise(ok("stored").header("Connection", "close"));
    CircuitBreakerPolicy breaker =
        CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build();
    HttpClient client = client(Mode.ENFORCE, b -> b, breaker);
    List<java.util.function.Supplier<HttpRequest.BodyPublisher>> bodies =
        List.of(
            () ->
                HttpRequest.BodyPublishers.ofInputStream(
                    () ->
                        new java.io.InputStream() {
                          private int read;

                          @Override
                          public int read() throws IOException {
                            if (read++ < 8) {
                              return 'a';
                            }
                            throw new IOException("disk");
                          }
                        }),
            () ->
                new HttpRequest.BodyPublisher() {
                  @Override
                  public long contentLength() {
                    return -1;
                  }

                  @Override
                  public void subscribe(
                      java.util.concurrent.Flow.Subscriber<? super java.nio.ByteBuffer> s) {
                    s.onSubscribe(
                        new java.util.concurrent.Flow.Subscription() {
                          private boolean done;

                          @Override
                          public void request(long n) {
                            if (!done) {
                              done = true;
                              s.onError(new java.net.SocketException("Connection reset"));
                            }
                          }

                          @Override
                          public void cancel() {
                            done = true;
                          }
                        });
                  }
                });
    // Each counted once the server is done with the call's connection (assertFailsAsWithoutUs): a
    // count read as soon as the call failed could miss a request the server was still reading, and
    // give it to the other side.
    // The stream that fails after 8 bytes meets a race of the JDK's own (PullPublisher asks the
    // iterator once more outside its try: the JDK may end the body as whole, send the 8 bytes as a
    // complete request and then fail, with the stream's exception or one of its own), with or
    // without the agent: only what never depends on it is compared (FailingBodyPublisherTest has
    // that race's every case, and that the cut body is never sent again).
    assertFailsAsWithoutUs(way, client, "a stream that fails after 8 bytes", bodies.get(0), false);
    assertFailsAsWithoutUs(way, client, "a publisher that fails at once", bodies.get(1));
    assertThat(time.waits()).isEmpty();
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
  }

  /**
   * The JDK's own publishers whose failure the tee's subscriber does not see: a file deleted after
   * its publisher was made (ofFile, which the agent does not tee: the JDK reads it again itself), a
   * stream supplier that throws (ofInputStream: out of subscribe, not through onError), an iterable
   * whose iterator() throws (ofByteArrays: out of subscribe too), a publisher of the application's
   * whose subscribe throws (fromPublisher). Each is the application's, and ends the call as the JDK
   * alone ends it, with as many requests; counted as the host's failure, it opened a breaker that
   * opens on one failure, and the host's next call was refused.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aJdkPublisherThatFailsOutsideTheTeesSubscriberEndsTheCallAsWithoutUs(
      Way way, @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    server.otherwise(ok("stored").header("Connection", "close"));
    CircuitBreakerPolicy breaker =
        CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build();
    HttpClient client = client(Mode.ENFORCE, b -> b, breaker);
    Map<String, java.util.function.Supplier<HttpRequest.BodyPublisher>> bodies =
        new java.util.LinkedHashMap<>();
    bodies.put(
        "ofFile of a file deleted since",
        () -> {
          try {
            java.nio.file.Path file = dir.resolve("upload");
            java.nio.file.Files.write(file, "stored".getBytes(StandardCharsets.UTF_8));
            HttpRequest.BodyPublisher p = HttpRequest.BodyPublishers.ofFile(file);
            java.nio.file.Files.delete(file);
            return p;
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        });
    bodies.put(
        "ofInputStream whose supplier throws",
        () ->
            HttpRequest.BodyPublishers.ofInputStream(
                () -> {
                  throw new java.io.UncheckedIOException(new IOException("disk"));
                }));
    bodies.put(
        "ofByteArrays whose iterator() throws",
        () ->
            HttpRequest.BodyPublishers.ofByteArrays(
                () -> {
                  throw new java.io.UncheckedIOException(new IOException("disk"));
                }));
    bodies.put(
        "fromPublisher whose subscribe throws",
        () ->
            HttpRequest.BodyPublishers.fromPublisher(
                s -> {
                  throw new IllegalStateException("source closed");
                }));
    for (Map.Entry<String, java.util.function.Supplier<HttpRequest.BodyPublisher>> body :
        bodies.entrySet()) {
      assertFailsAsWithoutUs(way, client, body.getKey(), body.getValue());
    }
    assertThat(time.waits()).isEmpty();
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
  }

  /**
   * A publisher of the application's ({@code fromPublisher(publisher, contentLength)}) that
   * delivers fewer bytes than it declared, or more, is the application's mistake: the JDK fails the
   * attempt with an IOException of its own ("Too few bytes returned by the publisher", "Too many
   * bytes in request body"), which the tee's subscriber never sees, and the call ends with it as
   * the JDK alone ends it, with as many requests, neither retried nor the host's failure. Before, a
   * breaker that opens on one failure opened, and the host's next call was refused; with
   * IOException among the exceptions to retry, the PUT was retried from the tee's copy, sent with
   * the copy's length: a request the application never made. So too for a file that changed length
   * since its publisher was made.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aPublisherOfTheWrongLengthEndsTheCallAsWithoutUs(
      Way way, @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    server.otherwise(ok("stored").header("Connection", "close"));
    CircuitBreakerPolicy breaker =
        CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build();
    HttpClient client =
        client(Mode.ENFORCE, b -> b.retryOnExceptions(List.of("java.io.IOException")), breaker);
    assertFailsAsWithoutUs(way, client, "too few bytes", () -> ofWrongLength(20, 8, 1));
    assertFailsAsWithoutUs(way, client, "too many bytes", () -> ofWrongLength(4, 12, 1));
    assertFailsAsWithoutUs(way, client, "too many, in parts", () -> ofWrongLength(10, 6, 3));
    for (int grows : new int[] {-4, 10}) {
      // ofFile, which the JDK reads again itself (watched, not teed), of a file that changed
      // length since its publisher was made
      assertFailsAsWithoutUs(
          way,
          client,
          "a file " + (grows < 0 ? "shorter" : "longer") + " since",
          () -> {
            try {
              java.nio.file.Path file = dir.resolve("upload");
              java.nio.file.Files.write(file, new byte[6]);
              HttpRequest.BodyPublisher p = HttpRequest.BodyPublishers.ofFile(file);
              java.nio.file.Files.write(file, new byte[6 + grows]);
              return p;
            } catch (IOException e) {
              throw new java.io.UncheckedIOException(e);
            }
          });
    }
    assertThat(time.waits()).isEmpty();
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
  }

  /**
   * The one rule for the rate-limit permit of an attempt the application's own failure ended
   * (RetryCall.endedByApplication): it stays spent when the host may have received a whole request
   * it may act on, and goes back when the request was cut. A publisher that delivers its whole
   * declared length and then more: the JDK sends the whole request (the server reads it, with or
   * without the agent) before it refuses the buffer past it; one that delivers short, or passes its
   * length inside a buffer, is cut. Before, every one gave the permit back, and after a whole
   * request the host got one more than its bucket allows.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aPublisherOfTheWrongLengthKeepsItsPermitOnlyWhenItsRequestWentOutWhole(Way way)
      throws Exception {
    server.otherwise(ok("stored"));
    // Whole, then more: the server reads the request, with or without the agent.
    for (HttpClient c : List.of(real, rateLimitedToOne())) {
      int before = server.requestCount();
      HttpRequest put =
          HttpRequest.newBuilder(URI.create(server.url("/v1/files/7")))
              .PUT(ofWrongLength(4, 4, 2))
              .build();
      assertThatThrownBy(() -> call(way, c, put)).hasStackTraceContaining("Too many bytes");
      org.awaitility.Awaitility.await()
          .atMost(10, TimeUnit.SECONDS)
          .untilAsserted(() -> assertThat(server.requestCount() - before).isEqualTo(1));
      if (c != real) {
        assertThatThrownBy(() -> call(way, c, get("/v1/items")))
            .as("the permit of a whole request, kept")
            .isInstanceOf(dev.retryagent.engine.RateLimitedException.class);
      }
    }
    // Cut: short, or past its length inside a buffer: the permit goes back.
    for (java.util.function.Supplier<HttpRequest.BodyPublisher> cut :
        List.<java.util.function.Supplier<HttpRequest.BodyPublisher>>of(
            () -> ofWrongLength(20, 8, 1), () -> ofWrongLength(10, 6, 3))) {
      HttpClient c = rateLimitedToOne();
      HttpRequest put =
          HttpRequest.newBuilder(URI.create(server.url("/v1/files/7"))).PUT(cut.get()).build();
      assertThatThrownBy(() -> call(way, c, put)).isNotNull();
      assertThat(call(way, c, get("/v1/items")).body()).isEqualTo("stored");
    }
  }

  /** A client whose host's bucket holds one permit, never refilled. */
  private HttpClient rateLimitedToOne() {
    return RetryingHttpClient.wrap(real, TestEngines.rateLimitedTo(1, time, events));
  }

  /**
   * {@code fromPublisher} of a publisher that says it is {@code declared} bytes long and sends
   * {@code parts} buffers of {@code size} bytes, one a request, then completes.
   */
  private static HttpRequest.BodyPublisher ofWrongLength(long declared, int size, int parts) {
    return HttpRequest.BodyPublishers.fromPublisher(
        s ->
            s.onSubscribe(
                new java.util.concurrent.Flow.Subscription() {
                  private int sent;
                  private boolean done;

                  @Override
                  public synchronized void request(long n) {
                    for (long i = 0; i < n && !done; i++) {
                      if (sent < parts) {
                        sent++;
                        s.onNext(java.nio.ByteBuffer.wrap(new byte[size]));
                      } else {
                        done = true;
                        s.onComplete();
                      }
                    }
                  }

                  @Override
                  public synchronized void cancel() {
                    done = true;
                  }
                }),
        declared);
  }

  /**
   * A file deleted between attempts (the JDK reads the file again for the agent's retry): the
   * retry's failure is the application's, and ends the call with the JDK's exception for the file,
   * neither retried again nor the host's failure. Before, it counted as the host's failure (a
   * breaker that opens on one failure opened, and the host's next call was refused).
   */
  @Test
  void aFileDeletedBetweenAttemptsEndsTheCallAsTheApplicationsFailure(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    server.enqueue(status(503));
    server.otherwise(ok("stored"));
    CircuitBreakerPolicy breaker =
        CircuitBreakerPolicy.builder()
            .countWindow(1)
            .minimumCalls(1)
            .failOnStatuses(dev.retryagent.policy.StatusSet.none())
            .build();
    HttpClient client = client(Mode.ENFORCE, b -> b, breaker);
    java.nio.file.Path file = dir.resolve("upload");
    java.nio.file.Files.write(file, "stored".getBytes(StandardCharsets.UTF_8));
    HttpRequest put =
        HttpRequest.newBuilder(URI.create(server.url("/v1/files/7")))
            .PUT(HttpRequest.BodyPublishers.ofFile(file))
            .build();
    time.holdTasks();

    java.util.concurrent.CompletableFuture<HttpResponse<String>> f =
        client.sendAsync(put, HttpResponse.BodyHandlers.ofString());
    org.awaitility.Awaitility.await()
        .atMost(10, TimeUnit.SECONDS)
        .until(() -> time.heldTasks() == 1);
    java.nio.file.Files.delete(file);
    time.runHeldTasks();

    assertThatThrownBy(() -> f.get(20, TimeUnit.SECONDS))
        .hasCauseInstanceOf(java.io.FileNotFoundException.class);
    assertThat(time.waits()).hasSize(1); // the one retry after the 503, no other
    // The breaker, which one failure opens, stays closed: the host's next call goes through.
    time.runHeldTasks();
    assertThat(call(Way.SEND, client, get("/v1/items")).body()).isEqualTo("stored");
  }

  /**
   * A PUT of {@code body} fails through {@code client} as through the JDK alone (the same exception
   * chain, as many requests at the server), and the host's next call then goes through.
   */
  private void assertFailsAsWithoutUs(
      Way way,
      HttpClient client,
      String what,
      java.util.function.Supplier<HttpRequest.BodyPublisher> body)
      throws Exception {
    assertFailsAsWithoutUs(way, client, what, body, true);
  }

  /**
   * As above; with {@code exactly} false, a body that meets a race of the JDK's own: each side
   * fails, with at most one request at the server, whole or cut; the exception chains and counts
   * are not compared.
   */
  private void assertFailsAsWithoutUs(
      Way way,
      HttpClient client,
      String what,
      java.util.function.Supplier<HttpRequest.BodyPublisher> body,
      boolean exactly)
      throws Exception {
    List<String> seen = new java.util.ArrayList<>();
    List<Integer> requests = new java.util.ArrayList<>();
    for (HttpClient c : List.of(real, client)) {
      int before = server.requestCount();
      int startedBefore = server.requestsStarted();
      int from = server.connectionCount();
      HttpRequest put =
          HttpRequest.newBuilder(URI.create(server.url("/v1/files/7"))).PUT(body.get()).build();
      Throwable thrown = null;
      try {
        call(way, c, put);
      } catch (Exception e) {
        thrown = e;
      }
      // The JDK closes the connection it failed on, if it opened one (no connection is pooled:
      // every answer says Connection: close); once the server is done with it, what it counted is
      // all it will count (the head of the request, with what came of its body, is one). A count
      // of open connections could pass before the server had even accepted it.
      server.awaitDoneWithConnectionsFrom(from);
      assertThat(thrown)
          .as(what + (c == real ? ": the JDK alone" : ": through the agent"))
          .isNotNull();
      StringBuilder chain = new StringBuilder();
      for (Throwable t = thrown; t != null; t = t.getCause()) {
        chain.append(withoutConnection(String.valueOf(t))).append(" / ");
      }
      seen.add(chain.toString());
      requests.add(server.requestCount() - before);
      // And the ones begun, whole or cut off in their body: at most the one, no resend of it cut
      // short. Not compared between the two: whether the JDK's head goes out before a body that
      // fails at once or early has failed is the JDK's own race, with or without the agent (either
      // way in runs of the same test, on both sides).
      assertThat(server.requestsStarted() - startedBefore)
          .as(what + (c == real ? ": the JDK alone" : ": through the agent") + ", begun")
          .isBetween(requests.get(requests.size() - 1), 1);
    }
    if (exactly) {
      assertThat(seen.get(1)).as(what).isEqualTo(seen.get(0));
      assertThat(requests.get(1)).as(what).isEqualTo(requests.get(0));
    }
    // The breaker, which one failure opens, stays closed: the host's next call goes through.
    assertThat(call(way, client, get("/v1/items")).body()).as(what).isEqualTo("stored");
  }

  /**
   * {@code failure} without what the JDK puts in some of its messages of the connection and thread
   * it failed on ("PlainHttpConnection(...) [HttpClient-1-Worker-0] Too few bytes ..."), which
   * differ between two calls of any client.
   */
  private static String withoutConnection(String failure) {
    return failure.replaceFirst(": \\S.*? \\[[^\\]]*\\] ", ": ");
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void theRefusalsOfAClosedClientDoNotOpenTheHostsBreakerForOtherClients(Way way) throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.close() is Java 21's");
    server.otherwise(ok("fine"));
    CircuitBreakerPolicy breaker =
        CircuitBreakerPolicy.builder().countWindow(4).minimumCalls(4).build();
    RetryEngine engine = TestEngines.engine(time, Mode.ENFORCE, b -> b, breaker, events);
    HttpClient closed = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpClient.class.getMethod("close").invoke(closed);
    HttpClient refusing = RetryingHttpClient.wrap(closed, engine);
    for (int i = 0; i < 4; i++) {
      assertThatThrownBy(() -> call(way, refusing, get("/v1/items")))
          .isInstanceOf(IOException.class)
          .hasMessage("closed");
    }

    // The closed client sent nothing: another client's call reaches the host, as without retries.
    HttpResponse<String> r = call(way, RetryingHttpClient.wrap(real, engine), get("/v1/items"));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void deadlineCutsRetries(Way way) throws Exception {
    server.otherwise(status(503));
    BackoffPolicy constant =
        BackoffPolicy.builder()
            .initial(Duration.ofMillis(600))
            .max(Duration.ofSeconds(5))
            .multiplier(1.0)
            .jitter(Jitter.NONE)
            .build();

    HttpResponse<String> r =
        call(
            way,
            client(
                b ->
                    b.maxAttempts(10)
                        .backoff(constant)
                        .deadline(Duration.ofSeconds(1))
                        .retryAfterMax(Duration.ofSeconds(1))),
            get("/v1/items"));

    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(events).anySatisfy(e -> assertThat(e.reason()).hasToString("DEADLINE"));
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void observeModeMakesOneRequestAndReportsWhatItWouldDo(Way way) throws Exception {
    server.enqueue(status(503), ok("never"));

    HttpResponse<String> r =
        call(way, client(Mode.OBSERVE, b -> b, CircuitBreakerPolicy.defaults()), get("/v1/items"));

    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(events)
        .anySatisfy(
            e -> {
              assertThat(e.type()).isEqualTo(RetryEvent.Type.RETRY);
              assertThat(e.observeOnly()).isTrue();
            });
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void sendsTheAttemptNumberInTheAttemptHeader(Way way) throws Exception {
    server.enqueue(status(503), status(503), ok("done"));

    call(way, client(b -> b.attemptHeader("X-Retry-Attempt")), get("/v1/items"));

    assertThat(server.requests())
        .extracting(req -> req.header("X-Retry-Attempt"))
        .containsExactly("1", "2", "3");
  }

  /**
   * All an application can read of a request, its body publisher by identity: the JDK's {@code
   * response.request()} is its own copy of the request it sent, never the application's object.
   */
  private static String readable(HttpRequest r) {
    return r.method()
        + " "
        + r.uri()
        + " headers="
        + r.headers().map()
        + " timeout="
        + r.timeout()
        + " version="
        + r.version()
        + " expectContinue="
        + r.expectContinue()
        + " publisher="
        + r.bodyPublisher().map(System::identityHashCode)
        + " toString="
        + r
        + " hashCode="
        + r.hashCode();
  }

  /**
   * {@code response.request()} shows the request as without the agent: the application's headers
   * (not the attempt header, or the application's own value under that name), its timeout (not the
   * policy's attempt timeout) and its body publisher (not the agent's copy of a streamed body,
   * which an application sending {@code response.request()} again would then send). It showed the
   * last attempt's.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void theResponsesRequestIsTheOneTheJdkShowsWithoutTheAgent(Way way) throws Exception {
    byte[] payload = "streamed payload".getBytes(StandardCharsets.UTF_8);
    HttpRequest.BodyPublisher streamed =
        HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(payload));
    HttpRequest put =
        HttpRequest.newBuilder(URI.create(server.url("/v1/docs")))
            .timeout(Duration.ofSeconds(30))
            .header("x-retry-attempt", "the application's own")
            .header("Accept", "text/plain")
            .PUT(streamed)
            .build();
    HttpRequest get = get("/v1/items");
    HttpClient client =
        client(b -> b.attemptHeader("X-Retry-Attempt").perAttemptTimeout(Duration.ofSeconds(20)));

    for (HttpRequest request : List.of(put, get)) {
      server.enqueue(ok("plain"), status(503), ok("done"));
      HttpResponse<String> plain = call(way, real, request);
      HttpResponse<String> r = call(way, client, request);

      assertThat(r.body()).isEqualTo("done");
      assertThat(readable(r.request())).isEqualTo(readable(plain.request()));
      assertThat(r.request()).isEqualTo(plain.request()).isSameAs(r.request());
      assertThat(r.previousResponse()).isEmpty();
    }
    assertThat(server.requests().get(2).header("X-Retry-Attempt")).isEqualTo("2"); // on the wire
  }

  /**
   * After a redirect the JDK shows the request it followed with, made from the one it was sent
   * (headers, timeout; the publisher where the method is kept), and the redirect's response as the
   * previous one: both as without the agent.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void afterARedirectTheResponsesRequestsAreTheOnesTheJdkShowsWithoutTheAgent(Way way)
      throws Exception {
    HttpClient redirecting =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .followRedirects(HttpClient.Redirect.NORMAL)
            .build();
    HttpClient client =
        RetryingHttpClient.wrap(
            redirecting,
            TestEngines.engine(
                time,
                Mode.ENFORCE,
                b -> b.attemptHeader("X-Retry-Attempt").perAttemptTimeout(Duration.ofSeconds(20)),
                CircuitBreakerPolicy.defaults(),
                events));
    byte[] payload = "streamed payload".getBytes(StandardCharsets.UTF_8);
    HttpRequest put =
        HttpRequest.newBuilder(URI.create(server.url("/v1/docs")))
            .timeout(Duration.ofSeconds(30))
            .PUT(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(payload)))
            .build();
    String moved = server.url("/v1/moved");

    server.enqueue(status(307).header("Location", moved), ok("plain"));
    HttpResponse<String> plain = call(way, redirecting, put);
    server.enqueue(status(503), status(307).header("Location", moved), ok("done"));
    HttpResponse<String> r = call(way, client, put);

    assertThat(r.body()).isEqualTo("done");
    assertThat(r.request().uri()).hasToString(moved);
    assertThat(readable(r.request())).isEqualTo(readable(plain.request()));
    assertThat(r.previousResponse()).isPresent().containsSame(r.previousResponse().get());
    assertThat(readable(r.previousResponse().get().request()))
        .isEqualTo(readable(plain.previousResponse().get().request()));
    assertThat(r.previousResponse().get().statusCode()).isEqualTo(307);
  }

  /**
   * A streamed body is resent from the copy kept; of unknown length, it goes out chunked, and its
   * copy went out with a Content-Length (the copy's length is known), a framing the application's
   * request never had.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void resendsAStreamedBodyFromTheCopyItKeptChunkedAsTheFirstAttemptWas(Way way) throws Exception {
    server.enqueue(status(503), ok("stored"));
    byte[] payload = "streamed payload".getBytes(StandardCharsets.UTF_8);
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(server.url("/v1/docs")))
            .PUT(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(payload)))
            .build();

    HttpResponse<String> r = call(way, client(b -> b), request);

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(server.requests())
        .hasSize(2)
        .allSatisfy(
            req -> {
              assertThat(req.body).isEqualTo("streamed payload");
              assertThat(req.header("Transfer-Encoding")).isEqualToIgnoringCase("chunked");
              assertThat(req.header("Content-Length")).isNull();
            });
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void doesNotResendAStreamedBodyLargerThanTheReplayLimit(Way way) throws Exception {
    server.enqueue(status(503), ok("stored"));
    byte[] payload = new byte[2048];
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(server.url("/v1/docs")))
            .PUT(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(payload)))
            .build();

    HttpResponse<String> r = call(way, client(b -> b.replayBodyLimit(1024)), request);

    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(events).anySatisfy(e -> assertThat(e.reason()).hasToString("BODY_NOT_REPLAYABLE"));
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aRequestTakenFromAResponseIsRetriedLikeAnyOther(Way way) throws Exception {
    server.enqueue(ok("first"), status(503), ok("again"));
    HttpClient client = client(b -> b);
    HttpResponse<String> first = call(way, client, get("/v1/items"));

    // response.request() is of the JDK's own request class, the class of its WebSocket handshake.
    HttpResponse<String> r = call(way, client, first.request());

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).isEqualTo("again");
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void callsTheCallersBodyHandlerOnlyForTheFinalResponse(Way way) throws Exception {
    server.enqueue(status(503).body("first"), status(502).body("second"), ok("third"));
    AtomicInteger applied = new AtomicInteger();
    HttpResponse.BodyHandler<String> counting =
        info -> {
          applied.incrementAndGet();
          return HttpResponse.BodySubscribers.ofString(StandardCharsets.UTF_8);
        };
    HttpClient client = client(b -> b);

    HttpResponse<String> r =
        way == Way.SEND
            ? client.send(get("/x"), counting)
            : client.sendAsync(get("/x"), counting).get(20, TimeUnit.SECONDS);

    assertThat(r.body()).isEqualTo("third");
    assertThat(applied).hasValue(1);
  }

  @Test
  void retriesAPostAfterAConnectFailureBecauseNothingWasSent() throws Exception {
    int closedPort;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + closedPort + "/v1/charges"))
            .POST(HttpRequest.BodyPublishers.ofString("{}"))
            .build();

    assertThatThrownBy(() -> call(Way.SEND, client(b -> b.maxAttempts(3)), request))
        .isInstanceOf(java.net.ConnectException.class);
    assertThat(events).filteredOn(e -> e.type() == RetryEvent.Type.RETRY).hasSize(2);
  }

  @Test
  void cancellingTheFutureCancelsThePendingRetry() throws Exception {
    time.holdTasks();
    server.enqueue(status(503), ok("never"));
    HttpClient client = client(b -> b);

    java.util.concurrent.CompletableFuture<HttpResponse<String>> f =
        client.sendAsync(get("/v1/items"), HttpResponse.BodyHandlers.ofString());
    org.awaitility.Awaitility.await().until(() -> time.heldTasks() == 1);
    assertThat(f).isNotDone();

    assertThat(f.cancel(true)).isTrue();
    time.runHeldTasks();

    assertThat(f).isCancelled();
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    // Abandoned at the attempt it reached: no attempt counted that was never sent.
    assertThat(events)
        .extracting(e -> e.type() + " " + e.attempt() + " " + e.reason())
        .containsExactly("RETRY 1 null", "GIVE_UP 1 CANCELLED");
  }

  @Test
  void cancellingTheFutureCancelsTheAttemptInFlight() throws Exception {
    server.enqueue(ok("late").delay(5_000));
    List<java.util.concurrent.CompletableFuture<?>> attempts = new CopyOnWriteArrayList<>();
    JdkTransport recording = recording(attempts);
    JdkRetrying retrying =
        new JdkRetrying(RetryEngine.builder().clock(time).sleeper(time).scheduler(time).build());

    java.util.concurrent.CompletableFuture<HttpResponse<String>> f =
        retrying.sendAsync(recording, get("/slow"), HttpResponse.BodyHandlers.ofString(), null);
    org.awaitility.Awaitility.await().until(() -> server.requestCount() == 1);
    f.cancel(true);

    // Depending on timing the JDK fails the exchange's future with a CancellationException
    // directly or wrapped ("Request cancelled"): either way, the attempt was cancelled.
    assertThat(attempts).hasSize(1);
    boolean cancelled = false;
    for (Throwable t = org.assertj.core.api.Assertions.catchThrowable(attempts.get(0)::join);
        t != null;
        t = t.getCause()) {
      cancelled |= t instanceof java.util.concurrent.CancellationException;
    }
    assertThat(cancelled).as("the attempt's future failed with a CancellationException").isTrue();
  }

  enum CancelStage {
    BEFORE_THE_HEAD,
    READING_THE_BODY
  }

  @ParameterizedTest
  @EnumSource(CancelStage.class)
  void cancelTrueEndsTheFutureAsTheJdksOwnFutureEnded(CancelStage stage) throws Exception {
    // The JDK's cancel(true) cancels the exchange first, whose failure often completes its future
    // before the future is cancelled (on 25 nearly always): get() throws ExecutionException(
    // CancellationException("Request cancelled")), isCancelled() is false. The caller's future was
    // cancelled regardless (a bare CancellationException). Compared here with the very future the
    // JDK gave for the attempt, which went through the same race; a few rounds, until the JDK's
    // ended so once (which of the two ends it takes is the JDK's race, not asserted).
    List<java.util.concurrent.CompletableFuture<?>> attempts = new CopyOnWriteArrayList<>();
    JdkTransport recording = recording(attempts);
    JdkRetrying retrying =
        new JdkRetrying(RetryEngine.builder().clock(time).sleeper(time).scheduler(time).build());
    for (int round = 1; round <= 8; round++) {
      java.util.concurrent.CompletableFuture<?> jdk =
          cancelAndCompare(stage, retrying, recording, attempts, round);
      if (!jdk.isCancelled()) {
        break;
      }
    }
  }

  /** One cancel(true) at {@code stage}; returns the JDK's future of the attempt it cancelled. */
  private java.util.concurrent.CompletableFuture<?> cancelAndCompare(
      CancelStage stage,
      JdkRetrying retrying,
      JdkTransport recording,
      List<java.util.concurrent.CompletableFuture<?>> attempts,
      int round)
      throws Exception {
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch head = new java.util.concurrent.CountDownLatch(1);
    server.enqueue(
        stage == CancelStage.BEFORE_THE_HEAD
            ? ok("late").delay(10_000)
            : ok("0123456789").heldAfter(5, release));
    HttpResponse.BodyHandler<String> handler =
        info -> {
          head.countDown();
          return HttpResponse.BodySubscribers.ofString(StandardCharsets.UTF_8);
        };
    try {
      java.util.concurrent.CompletableFuture<HttpResponse<String>> f =
          retrying.sendAsync(recording, get("/v1/items"), handler, null);
      java.util.concurrent.CompletableFuture<Throwable> told =
          new java.util.concurrent.CompletableFuture<>();
      f.whenComplete((r, t) -> told.complete(t));
      java.util.concurrent.CompletableFuture<String> dependent = f.thenApply(HttpResponse::body);
      if (stage == CancelStage.BEFORE_THE_HEAD) {
        org.awaitility.Awaitility.await().until(() -> server.requestCount() == round);
      } else {
        assertThat(head.await(10, TimeUnit.SECONDS)).isTrue();
      }

      assertThat(f.cancel(true)).isTrue();

      assertThat(attempts).hasSize(round);
      java.util.concurrent.CompletableFuture<?> jdk = attempts.get(round - 1);
      assertThat(jdk).isDone(); // cancelled first, by the caller's cancel
      assertThat(f.isDone()).isTrue();
      assertThat(f.isCancelled()).isEqualTo(jdk.isCancelled());
      assertThat(f.isCompletedExceptionally()).isEqualTo(jdk.isCompletedExceptionally());
      assertThat(chain(catchThrowable(f::get))).isEqualTo(chain(catchThrowable(jdk::get)));
      assertThat(chain(catchThrowable(f::join))).isEqualTo(chain(catchThrowable(jdk::join)));
      assertThat(chain(told.get(10, TimeUnit.SECONDS)))
          .isEqualTo(chain(jdk.handle((r, t) -> t).get(10, TimeUnit.SECONDS)));
      assertThat(chain(catchThrowable(() -> dependent.get(10, TimeUnit.SECONDS))))
          .isEqualTo(chain(catchThrowable(() -> jdk.thenApply(r -> r).get(10, TimeUnit.SECONDS))));
      assertThat(server.awaitRequests(round)).as("nothing more sent").isEqualTo(requests(round));
      return jdk;
    } finally {
      release.countDown();
    }
  }

  private static Throwable catchThrowable(
      org.assertj.core.api.ThrowableAssert.ThrowingCallable call) {
    return org.assertj.core.api.Assertions.catchThrowable(call);
  }

  /** A throwable's types and messages, causes included, for comparing what two futures threw. */
  private static String chain(Throwable t) {
    StringBuilder b = new StringBuilder();
    for (int depth = 0; t != null && depth < 5; t = t.getCause(), depth++) {
      b.append(t.getClass().getName()).append(": ").append(t.getMessage()).append(" / ");
    }
    return b.toString();
  }

  // --- issue 11: with retries, the application sees what it sees without them

  @ParameterizedTest
  @EnumSource(Way.class)
  void theRequestsOwnTimeoutBoundsEveryAttempt(Way way) throws Exception {
    // The retries used to get the time left before the deadline (30 s) as their timeout.
    server.otherwise(ok("late").delay(3_000));
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(server.url("/slow")))
            .timeout(Duration.ofMillis(300))
            .build();
    long started = System.nanoTime();

    assertThatThrownBy(() -> call(way, client(b -> b), request))
        .isInstanceOf(java.net.http.HttpTimeoutException.class)
        .hasMessage("request timed out");

    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofMillis(2_500));
    // Three attempts. Counted by the engine: on a loaded machine an attempt's request may reach
    // the server after its 300 ms, or, timed out while the connection was being made, never.
    assertThat(events).filteredOn(e -> e.type() == RetryEvent.Type.RETRY).hasSize(2);
    assertThat(server.requestCount()).as("events %s", events).isLessThanOrEqualTo(3);
  }

  /**
   * A HEAD() request (Java 18+) has no body publisher, and the JDK sends it without Content-Length;
   * an attempt the agent rebuilt (here for the policy's per-attempt timeout, so the first attempt
   * too) was sent with BodyPublishers.noBody(): "Content-Length: 0" on the wire, a request the
   * application never made.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aHeadRequestWithoutBodyIsSentWithoutContentLengthOnEveryAttempt(Way way) throws Exception {
    assumeTrue(Runtime.version().feature() >= 18, "HttpRequest.Builder.HEAD() is Java 18's");
    server.enqueue(status(503), ok(""));
    HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(server.url("/v1/items")));
    HttpRequest head =
        ((HttpRequest.Builder) HttpRequest.Builder.class.getMethod("HEAD").invoke(builder)).build();

    HttpResponse<String> r =
        call(way, client(b -> b.perAttemptTimeout(Duration.ofSeconds(20))), head);

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(server.requests()).hasSize(2);
    assertThat(server.requests())
        .allSatisfy(
            req -> {
              assertThat(req.method).isEqualTo("HEAD");
              assertThat(req.header("Content-Length")).isNull();
            });
  }

  /**
   * An application's own HttpRequest class whose bodyPublisher() is empty, for a method other than
   * GET: the JDK (19+) sends it without Content-Length, and an attempt the agent rebuilt (here for
   * the per-attempt timeout, so every attempt) had BodyPublishers.noBody(): "Content-Length: 0", a
   * request the application never made. Compared with what the JDK itself sends for the request (on
   * 17 it sends "Content-Length: 0" for any request without publisher).
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aRequestOfItsOwnClassWithoutBodyPublisherIsSentAsTheJdkSendsIt(Way way) throws Exception {
    URI uri = URI.create(server.url("/v1/items"));
    HttpRequest options =
        new HttpRequest() {
          @Override
          public Optional<BodyPublisher> bodyPublisher() {
            return Optional.empty();
          }

          @Override
          public String method() {
            return "OPTIONS";
          }

          @Override
          public Optional<Duration> timeout() {
            return Optional.empty();
          }

          @Override
          public boolean expectContinue() {
            return false;
          }

          @Override
          public URI uri() {
            return uri;
          }

          @Override
          public Optional<HttpClient.Version> version() {
            return Optional.empty();
          }

          @Override
          public HttpHeaders headers() {
            return HttpHeaders.of(Map.of("Accept", List.of("*/*")), (n, v) -> true);
          }
        };
    server.enqueue(ok("plain"), status(503), ok("done"));
    real.send(options, HttpResponse.BodyHandlers.ofString());
    String jdksOwn = server.requests().get(0).header("Content-Length");

    HttpResponse<String> r =
        call(way, client(b -> b.perAttemptTimeout(Duration.ofSeconds(20))), options);

    assertThat(r.body()).isEqualTo("done");
    assertThat(server.requests()).hasSize(3);
    assertThat(server.requests().subList(1, 3))
        .allSatisfy(
            req -> {
              assertThat(req.method).isEqualTo("OPTIONS");
              assertThat(req.header("Content-Length")).isEqualTo(jdksOwn);
            });
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void theJdksOwnResendCountsAsAnAttempt(Way way) throws Exception {
    // The JDK sends a GET once more when the connection closes before any byte of the answer:
    // with maxAttempts 3 the server saw 6 requests.
    server.otherwise(closeWithoutResponse());

    assertThatThrownBy(() -> call(way, client(b -> b.maxAttempts(3)), get("/v1/items")))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("header parser received no bytes");

    assertThat(server.requestCount()).as("the JDK's own two, and no retry").isEqualTo(2);
    RetryEvent giveUp = events.get(events.size() - 1);
    assertThat(giveUp.type()).isEqualTo(RetryEvent.Type.GIVE_UP);
    assertThat(giveUp.attempt()).isEqualTo(2);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void withRoomForTwoTheRetryIsMadeAndTheServerSeesAtMostMaxAttempts(Way way) throws Exception {
    server.otherwise(closeWithoutResponse());

    assertThatThrownBy(() -> call(way, client(b -> b.maxAttempts(5)), get("/v1/items")))
        .isInstanceOf(IOException.class);

    assertThat(server.requestCount()).isEqualTo(4);
  }

  @Test
  void anInterruptWhileSendWaitsToRetryThrowsInterruptedExceptionAsSendDoes() throws Exception {
    server.otherwise(status(503));
    // The real sleeper, interrupted as the wait starts: Thread.sleep's InterruptedException says
    // "sleep interrupted".
    dev.retryagent.engine.Sleeper interruptedInTheWait =
        nanos -> {
          Thread.currentThread().interrupt();
          dev.retryagent.engine.Sleeper.SYSTEM.sleep(nanos);
        };
    HttpClient client =
        RetryingHttpClient.wrap(
            real, RetryEngine.builder().clock(time).sleeper(interruptedInTheWait).build());
    try {
      assertThatThrownBy(() -> client.send(get("/v1/items"), HttpResponse.BodyHandlers.ofString()))
          .isExactlyInstanceOf(InterruptedException.class)
          .hasMessage(null);
      assertThat(Thread.currentThread().isInterrupted())
          .as("cleared, as HttpClient.send leaves it")
          .isFalse();
    } finally {
      Thread.interrupted();
    }
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  @Test
  void anInterruptAfterTheAttemptBeforeTheWaitThrowsInterruptedException() throws Exception {
    // send() returned the 503 before the interrupt came, and the body of a response the agent
    // retries was dropped at its head: that response cannot go to the caller, whose wait ends at
    // once with an InterruptedException, as send() throws for an interrupt.
    server.otherwise(status(503));
    JdkTransport interruptedAfterTheAttempt =
        new JdkTransport() {
          @Override
          public <T> HttpResponse<T> send(HttpRequest r, HttpResponse.BodyHandler<T> h)
              throws IOException, InterruptedException {
            HttpResponse<T> response = real.send(r, h);
            Thread.currentThread().interrupt(); // arrives after the attempt, before the wait
            return response;
          }

          @Override
          public <T> java.util.concurrent.CompletableFuture<HttpResponse<T>> sendAsync(
              HttpRequest r, HttpResponse.BodyHandler<T> h, HttpResponse.PushPromiseHandler<T> p) {
            throw new UnsupportedOperationException();
          }
        };
    JdkRetrying retrying =
        new JdkRetrying(
            RetryEngine.builder()
                .clock(time)
                .sleeper(dev.retryagent.engine.Sleeper.SYSTEM)
                .build());
    try {
      assertThatThrownBy(
              () ->
                  retrying.send(
                      interruptedAfterTheAttempt,
                      get("/v1/items"),
                      HttpResponse.BodyHandlers.ofString()))
          .isExactlyInstanceOf(InterruptedException.class)
          .hasMessage(null);
    } finally {
      Thread.interrupted();
    }
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  @Test
  void anInterruptWhileTheRetriedResponsesBodyIsReadThrowsInterruptedExceptionAndSendsNoMore()
      throws Exception {
    // The engine decides on a 503's status and headers and reads its body away; send() still
    // waits for that body when the caller is interrupted (Future.cancel(true), shutdownNow). The
    // JDK's send() then throws an InterruptedException, the flag cleared by its wait. Before, the
    // retry decided on the head went ahead: a second request, and the interrupt lost.
    AtomicInteger sends = new AtomicInteger();
    JdkTransport interruptedDuringTheBody =
        new JdkTransport() {
          @Override
          public <T> HttpResponse<T> send(HttpRequest r, HttpResponse.BodyHandler<T> h)
              throws InterruptedException {
            sends.incrementAndGet();
            h.apply(
                new HttpResponse.ResponseInfo() {
                  @Override
                  public int statusCode() {
                    return 503;
                  }

                  @Override
                  public HttpHeaders headers() {
                    return HttpHeaders.of(Map.of(), (k, v) -> true);
                  }

                  @Override
                  public HttpClient.Version version() {
                    return HttpClient.Version.HTTP_1_1;
                  }
                });
            throw new InterruptedException(); // as HttpClientImpl.send: the flag already cleared
          }

          @Override
          public <T> java.util.concurrent.CompletableFuture<HttpResponse<T>> sendAsync(
              HttpRequest r, HttpResponse.BodyHandler<T> h, HttpResponse.PushPromiseHandler<T> p) {
            throw new UnsupportedOperationException();
          }
        };
    JdkRetrying retrying = new JdkRetrying(RetryEngine.builder().clock(time).sleeper(time).build());

    assertThatThrownBy(
            () ->
                retrying.send(
                    interruptedDuringTheBody,
                    get("/v1/items"),
                    HttpResponse.BodyHandlers.ofString()))
        .isExactlyInstanceOf(InterruptedException.class)
        .hasMessage(null);

    assertThat(sends).as("attempts handed to the client").hasValue(1);
    assertThat(Thread.currentThread().isInterrupted()).as("cleared, as send() leaves it").isFalse();
  }

  /**
   * The JDK's send() refuses a thread already interrupted before sending anything; the attempt it
   * refused kept the rate-limit permit it took (scope: host), and with one permit in the bucket the
   * host's next call, on any client, was refused as rate-limited though nothing was sent.
   */
  @Test
  void anInterruptedSendThatTheJdkRefusesGivesItsRateLimitPermitBack() throws Exception {
    dev.retryagent.internal.observe.RetryMetrics metrics =
        new dev.retryagent.internal.observe.RetryMetrics();
    HttpClient client =
        RetryingHttpClient.wrap(real, TestEngines.rateLimitedTo(1, time, events, metrics));
    server.otherwise(ok("next"));

    Thread.currentThread().interrupt();
    try {
      assertThatThrownBy(() -> client.send(get("/v1/items"), HttpResponse.BodyHandlers.ofString()))
          .isExactlyInstanceOf(InterruptedException.class);
    } finally {
      Thread.interrupted();
    }
    assertThat(server.awaitRequests(0)).isEqualTo(requests(0));
    // Nor was it counted as an attempt (it was, the server having seen none): attempts_total, JMX,
    // the give-up's line and dead letter (the event's attempt) say 0.
    assertThat(metrics.route("test").attempts()).isZero();
    assertThat(metrics.route("test").calls()).isEqualTo(1);
    assertThat(events).singleElement().extracting(RetryEvent::attempt).isEqualTo(0);

    assertThat(client.send(get("/v1/items"), HttpResponse.BodyHandlers.ofString()).body())
        .as("the refused attempt's permit, given back")
        .isEqualTo("next");
    assertThat(metrics.route("test").attempts()).isEqualTo(1);
  }

  @Test
  void cancellingADependentStageCancelsThePendingRetry() throws Exception {
    // The JDK (16+) cancels the exchange when a dependent stage is cancelled.
    time.holdTasks();
    server.enqueue(status(503), ok("never"));
    HttpClient client = client(b -> b);

    java.util.concurrent.CompletableFuture<HttpResponse<String>> f =
        client.sendAsync(get("/v1/items"), HttpResponse.BodyHandlers.ofString());
    org.awaitility.Awaitility.await().until(() -> time.heldTasks() == 1);

    assertThat(f.thenApply(HttpResponse::body).cancel(true)).isTrue();
    time.runHeldTasks();

    assertThat(f).isCancelled();
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  @Test
  void sendAsyncFailsAsTheJdksOwnFutureDoesInACompletionException() throws Exception {
    server.otherwise(reset());
    HttpRequest post = post("/v1/charges", "{}", null); // not retried: the JDK's failure as it is
    Throwable plain =
        real.sendAsync(post, HttpResponse.BodyHandlers.ofString()).handle((r, t) -> t).get();
    Throwable retried =
        client(b -> b)
            .sendAsync(post, HttpResponse.BodyHandlers.ofString())
            .handle((r, t) -> t)
            .get();

    assertThat(plain).isInstanceOf(java.util.concurrent.CompletionException.class);
    assertThat(retried).isInstanceOf(java.util.concurrent.CompletionException.class);
    assertThat(retried.getCause()).hasSameClassAs(plain.getCause());
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aClientTheApplicationDroppedIsCollectedThoughItKeepsTheCallsFuture(boolean decorated)
      throws Exception {
    // The JDK stops a client once the application no longer holds it: its future does not hold
    // it, and neither may ours (nor a stage that depends on it), or its thread stays for good.
    server.enqueue(status(503), ok("fine"));
    HttpClient own = ownClient();
    java.lang.ref.WeakReference<HttpClient> dropped = new java.lang.ref.WeakReference<>(own);
    HttpClient client =
        decorated
            ? RetryingHttpClient.wrap(
                own, TestEngines.engine(time, Mode.ENFORCE, b -> b, breakerDefaults(), events))
            : own;
    java.util.concurrent.CompletableFuture<HttpResponse<String>> f =
        client.sendAsync(get("/v1/items"), HttpResponse.BodyHandlers.ofString());
    java.util.concurrent.CompletableFuture<String> body = f.thenApply(HttpResponse::body);
    String got = body.get(20, TimeUnit.SECONDS);
    if (decorated) {
      assertThat(got).isEqualTo("fine");
    }

    own = null;
    client = null;

    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () -> {
              System.gc();
              return dropped.get() == null;
            });
    assertThat(f).isCompleted(); // kept to the end
    assertThat(body).isCompleted();
  }

  // --- Java 21+: shutdown() and close() let the calls in progress finish, retries included

  /** A client of its own: these tests shut it down. */
  private HttpClient ownClient() {
    return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  }

  private static void invoke(HttpClient client, String method) throws Exception {
    try {
      HttpClient.class.getMethod(method).invoke(client);
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw (Exception) e.getCause();
    }
  }

  private HttpClient wrapped(HttpClient own) {
    return RetryingHttpClient.wrap(
        own, TestEngines.engine(time, Mode.ENFORCE, b -> b, breakerDefaults(), events));
  }

  /** A GET answered 503 then 200, whose retry waits for {@code time.runHeldTasks()}. */
  private java.util.concurrent.CompletableFuture<HttpResponse<String>> waitingForItsRetry(
      HttpClient client) {
    time.holdTasks();
    server.enqueue(status(503), ok("fine"));
    java.util.concurrent.CompletableFuture<HttpResponse<String>> f =
        client.sendAsync(get("/v1/items"), HttpResponse.BodyHandlers.ofString());
    org.awaitility.Awaitility.await().until(() -> time.heldTasks() == 1);
    return f;
  }

  private static boolean isTerminated(HttpClient client) throws Exception {
    return (Boolean) HttpClient.class.getMethod("isTerminated").invoke(client);
  }

  @Test
  void closeWaitsForACallWaitingForItsRetryWhichThenSucceeds() throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.close() is Java 21's");
    HttpClient own = ownClient();
    HttpClient client = wrapped(own);
    java.util.concurrent.CompletableFuture<HttpResponse<String>> f = waitingForItsRetry(client);

    java.util.concurrent.CompletableFuture<Void> closing =
        java.util.concurrent.CompletableFuture.runAsync(
            () -> {
              try {
                invoke(client, "close");
              } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
              }
            },
            // On the pool the JDK completes its futures on: close() must not starve the retry.
            java.util.concurrent.ForkJoinPool.commonPool());
    // Shut down: new calls are refused as the JDK refuses them, and nothing is sent for them.
    org.awaitility.Awaitility.await()
        .untilAsserted(
            () ->
                assertThatThrownBy(() -> call(Way.SEND_ASYNC, client, get("/v1/other")))
                    .isInstanceOf(IOException.class)
                    .hasMessage("closed"));
    assertThatThrownBy(() -> call(Way.SEND, client, get("/v1/other")))
        .isInstanceOf(IOException.class)
        .hasMessage("closed")
        .hasCauseInstanceOf(IOException.class);
    // ...while close() waits for the call, and the real client is still up for its retry.
    assertThat(closing).isNotDone();
    assertThat(isTerminated(own)).isFalse();

    time.runHeldTasks();

    assertThat(f.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    closing.get(20, TimeUnit.SECONDS);
    assertThat(isTerminated(own)).isTrue();
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void shutdownIsDeferredUntilTheLastCallInProgressEnds() throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.shutdown() is Java 21's");
    HttpClient own = ownClient();
    HttpClient client = wrapped(own);
    java.util.concurrent.CompletableFuture<HttpResponse<String>> f = waitingForItsRetry(client);

    invoke(client, "shutdown"); // returns at once, as the JDK's does

    assertThat(isTerminated(client)).isFalse();
    time.runHeldTasks();
    assertThat(f.get(20, TimeUnit.SECONDS).body()).isEqualTo("fine");
    org.awaitility.Awaitility.await().until(() -> isTerminated(client));
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void aWebSocketIsRefusedWhileTheShutdownWaitsForTheCallsInProgress() throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.shutdown() is Java 21's");
    HttpClient client = wrapped(ownClient());
    java.util.concurrent.CompletableFuture<HttpResponse<String>> f = waitingForItsRetry(client);
    invoke(client, "shutdown"); // deferred: the real client is still up for the call's retry

    java.util.concurrent.CompletableFuture<java.net.http.WebSocket> ws =
        client
            .newWebSocketBuilder()
            .buildAsync(
                URI.create("ws://127.0.0.1:" + server.port() + "/ws"),
                new java.net.http.WebSocket.Listener() {});

    // As the JDK refuses it once shut down; no opening handshake reached the server.
    Throwable t = org.assertj.core.api.Assertions.catchThrowable(ws::join);
    assertThat(t).isInstanceOf(java.util.concurrent.CompletionException.class);
    assertThat(t.getCause()).isInstanceOf(IOException.class).hasMessage("closed");
    assertThatThrownBy(() -> client.newWebSocketBuilder().buildAsync(null, null))
        .isInstanceOf(NullPointerException.class);
    time.runHeldTasks();
    assertThat(f.get(20, TimeUnit.SECONDS).body()).isEqualTo("fine");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  /**
   * The call in its retry's wait fails as the JDK fails a call in progress at shutdownNow(),
   * IOException("shutdownNow"); before, with the refusal of a new call, IOException("closed"),
   * though the application called before the shutdown (JdkRetrying.abortedByShutdownNow says why
   * not the 503 the call would have ended with without the agent).
   */
  @Test
  void closeAfterShutdownNowReturnsAtOnceAndTheWaitingCallFailsAsAborted() throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.shutdownNow() is Java 21's");
    HttpClient own = ownClient();
    HttpClient client = wrapped(own);
    java.util.concurrent.CompletableFuture<HttpResponse<String>> f = waitingForItsRetry(client);

    invoke(client, "shutdownNow");
    invoke(client, "close"); // as the JDK's: its requests were aborted, nothing to wait for

    assertThat(isTerminated(own)).isTrue();
    time.runHeldTasks();
    Throwable t = org.assertj.core.api.Assertions.catchThrowable(() -> f.get(20, TimeUnit.SECONDS));
    assertThat(t.getCause()).isInstanceOf(IOException.class).hasMessage("shutdownNow");
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  /**
   * shutdownNow() ends a call's wait for its retry at once, where the call waited out its delay
   * (here 25 s, Retry-After) and only then failed: on real time, since what is checked is that the
   * wait ended without its time passing. The call fails as the JDK fails a call in progress at
   * shutdownNow(), IOException("shutdownNow") (send: with the same as its cause), and sends nothing
   * more. (Before, as the JDK refuses a new call after a shutdown, IOException("closed").)
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void shutdownNowEndsTheWaitOfACallWaitingForItsRetry(Way way) throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.shutdownNow() is Java 21's");
    server.enqueue(status(503).header("Retry-After", "25"), ok("never"));
    HttpClient client =
        RetryingHttpClient.wrap(
            ownClient(),
            RetryEngine.builder()
                .listener(
                    new dev.retryagent.engine.RetryListener() {
                      @Override
                      public void onRetry(RetryEvent e) {
                        events.add(e);
                      }

                      @Override
                      public void onGiveUp(RetryEvent e) {
                        events.add(e);
                      }
                    })
                .build());
    java.util.concurrent.CompletableFuture<HttpResponse<String>> f =
        way == Way.SEND_ASYNC
            ? client.sendAsync(get("/v1/items"), HttpResponse.BodyHandlers.ofString())
            : java.util.concurrent.CompletableFuture.supplyAsync(
                () -> {
                  try {
                    return client.send(get("/v1/items"), HttpResponse.BodyHandlers.ofString());
                  } catch (IOException | InterruptedException e) {
                    throw new java.util.concurrent.CompletionException(e);
                  }
                });
    // The retry is decided: the call waits for it.
    org.awaitility.Awaitility.await().until(() -> !events.isEmpty());

    invoke(client, "shutdownNow");

    Throwable t = org.assertj.core.api.Assertions.catchThrowable(() -> f.get(10, TimeUnit.SECONDS));
    assertThat(t).isInstanceOf(ExecutionException.class);
    assertThat(t.getCause()).isInstanceOf(IOException.class).hasMessage("shutdownNow");
    if (way == Way.SEND) {
      assertThat(t.getCause().getCause()).isInstanceOf(IOException.class).hasMessage("shutdownNow");
    } else {
      assertThat(t.getCause().getCause()).isNull();
    }
    assertThat(server.requestCount()).isEqualTo(1);
    // Either way the call is given up at the attempt it reached, as cancelled: before, it started
    // its retry after the wait and counted it (GIVE_UP at attempt 2), though the JDK sent nothing.
    org.awaitility.Awaitility.await().until(() -> events.size() == 2);
    assertThat(events)
        .extracting(e -> e.type() + " " + e.attempt() + " " + e.reason())
        .containsExactly("RETRY 1 null", "GIVE_UP 1 CANCELLED");
  }

  /**
   * shutdownNow() while the body of a response decided for a retry is still read (its head and 4
   * bytes came, the rest held): the JDK aborts that exchange, and the call fails as the JDK fails
   * an exchange in progress at shutdownNow, IOException("shutdownNow"), as the plain client's does.
   * Before, the aborted attempt went to the retry's wait, which saw the caller gone, and the call
   * failed with the refusal of a new call, IOException("closed").
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void shutdownNowWhileTheBodyOfAResponseDecidedForARetryIsReadFailsAsTheJdks(Way way)
      throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.shutdownNow() is Java 21's");
    CountDownLatch plainRelease = new CountDownLatch(1);
    String plain;
    try {
      server.enqueue(
          status(503)
              .header("Retry-After", "25")
              .body("busy busy busy")
              .heldAfter(4, plainRelease));
      HttpClient own = ownClient();
      java.util.concurrent.CompletableFuture<HttpResponse<String>> f = calling(way, own);
      org.awaitility.Awaitility.await().until(() -> server.requestCount() == 1);
      invoke(own, "shutdownNow");
      plain =
          chain(org.assertj.core.api.Assertions.catchThrowable(() -> f.get(10, TimeUnit.SECONDS)));
    } finally {
      plainRelease.countDown();
    }
    assertThat(plain).contains("IOException: shutdownNow");

    CountDownLatch release = new CountDownLatch(1);
    try {
      server.enqueue(
          status(503).header("Retry-After", "25").body("busy busy busy").heldAfter(4, release),
          ok("never"));
      HttpClient client = wrapped(ownClient());
      java.util.concurrent.CompletableFuture<HttpResponse<String>> f = calling(way, client);
      // The retry is decided at the 503's head; its body is still read.
      org.awaitility.Awaitility.await().until(() -> !events.isEmpty());
      invoke(client, "shutdownNow");
      Throwable t =
          org.assertj.core.api.Assertions.catchThrowable(() -> f.get(10, TimeUnit.SECONDS));
      assertThat(chain(t)).isEqualTo(plain);
    } finally {
      release.countDown();
    }
    assertThat(server.requestCount()).isEqualTo(2);
    // The retry decided on the 503's head is not made: the call is given up at its first attempt.
    org.awaitility.Awaitility.await().until(() -> events.size() == 2);
    assertThat(events)
        .extracting(e -> e.type() + " " + e.attempt() + " " + e.reason())
        .containsExactly("RETRY 1 null", "GIVE_UP 1 CANCELLED");
  }

  /** {@code client}'s send or sendAsync of a GET, as a future (send on a thread of its own). */
  private java.util.concurrent.CompletableFuture<HttpResponse<String>> calling(
      Way way, HttpClient client) {
    if (way == Way.SEND_ASYNC) {
      return client.sendAsync(get("/v1/items"), HttpResponse.BodyHandlers.ofString());
    }
    return java.util.concurrent.CompletableFuture.supplyAsync(
        () -> {
          try {
            return client.send(get("/v1/items"), HttpResponse.BodyHandlers.ofString());
          } catch (IOException | InterruptedException e) {
            throw new java.util.concurrent.CompletionException(e);
          }
        });
  }

  @Test
  void aClientShutDownWithNoCallInProgressShutsDownAtOnce() throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.shutdown() is Java 21's");
    server.otherwise(ok("fine"));
    HttpClient own = ownClient();
    HttpClient client = wrapped(own);
    assertThat(call(Way.SEND, client, get("/v1/items")).statusCode()).isEqualTo(200);

    invoke(client, "close");

    assertThat(isTerminated(own)).isTrue();
    assertThatThrownBy(() -> call(Way.SEND_ASYNC, client, get("/v1/items")))
        .isInstanceOf(IOException.class)
        .hasMessage("closed");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void afterShutdownNowAnAbortedAttemptIsNotRetried() throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.shutdownNow() is Java 21's");
    server.enqueue(ok("late").delay(5_000), ok("never"));
    HttpClient own = ownClient();
    HttpClient client = wrapped(own);
    java.util.concurrent.CompletableFuture<HttpResponse<String>> f =
        client.sendAsync(get("/v1/items"), HttpResponse.BodyHandlers.ofString());
    org.awaitility.Awaitility.await().until(() -> server.requestCount() == 1);

    invoke(client, "shutdownNow");

    // The JDK's own abort reaches the caller, as without retries; no retry was even decided.
    Throwable t = org.assertj.core.api.Assertions.catchThrowable(() -> f.get(20, TimeUnit.SECONDS));
    assertThat(t).isInstanceOf(ExecutionException.class);
    assertThat(t.getCause()).isInstanceOf(IOException.class).hasMessage("shutdownNow");
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aCallOfAClientShutDownNowRetriesNoMore(Way way) throws Exception {
    server.otherwise(status(503)); // retried on any other client
    // shutdownNow() called once the first attempt went out (one called before it is refused by
    // the agent, as the JDK refuses it: FirstPermitGiveUpTest).
    JdkTransport shutDownNow =
        new RealTransport() {
          @Override
          public boolean shutDownNow() {
            return server.requestCount() > 0;
          }
        };
    JdkRetrying retrying =
        new JdkRetrying(TestEngines.engine(time, Mode.ENFORCE, b -> b, breakerDefaults(), events));

    HttpResponse<String> r =
        way == Way.SEND
            ? retrying.send(shutDownNow, get("/v1/items"), HttpResponse.BodyHandlers.ofString())
            : retrying
                .sendAsync(
                    shutDownNow, get("/v1/items"), HttpResponse.BodyHandlers.ofString(), null)
                .get(20, TimeUnit.SECONDS);

    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
  }

  @Test
  void aDeferredShutdownThatTheWrappedClientRefusesStillLetsTheCallComplete() throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.shutdown() is Java 21's");
    HttpClient client = wrapped(new ShutdownRefusing(ownClient()));
    java.util.concurrent.CompletableFuture<HttpResponse<String>> f = waitingForItsRetry(client);
    invoke(client, "shutdown"); // deferred: the wrapped client's refusal comes at the call's end

    time.runHeldTasks();

    assertThat(f.get(20, TimeUnit.SECONDS).body()).isEqualTo("fine");
  }

  /** An application's own client around the JDK's, whose shutdown() throws. */
  private static final class ShutdownRefusing extends DelegatingHttpClient {
    ShutdownRefusing(HttpClient real) {
      super(real);
    }

    public void shutdown() {
      throw new IllegalStateException("not now");
    }
  }

  /** Each attempt on {@link #real}, the JDK's future of each kept in {@code attempts}. */
  private JdkTransport recording(List<java.util.concurrent.CompletableFuture<?>> attempts) {
    return new RealTransport() {
      @Override
      public <T> java.util.concurrent.CompletableFuture<HttpResponse<T>> sendAsync(
          HttpRequest r, HttpResponse.BodyHandler<T> h, HttpResponse.PushPromiseHandler<T> p) {
        java.util.concurrent.CompletableFuture<HttpResponse<T>> f = real.sendAsync(r, h, p);
        attempts.add(f);
        return f;
      }
    };
  }

  /** Each attempt on {@link #real}, as the decorator makes it. */
  private class RealTransport implements JdkTransport {
    @Override
    public <T> HttpResponse<T> send(HttpRequest r, HttpResponse.BodyHandler<T> h)
        throws IOException, InterruptedException {
      return real.send(r, h);
    }

    @Override
    public <T> java.util.concurrent.CompletableFuture<HttpResponse<T>> sendAsync(
        HttpRequest r, HttpResponse.BodyHandler<T> h, HttpResponse.PushPromiseHandler<T> p) {
      return real.sendAsync(r, h, p);
    }
  }

  private static CircuitBreakerPolicy breakerDefaults() {
    return CircuitBreakerPolicy.defaults();
  }
}
