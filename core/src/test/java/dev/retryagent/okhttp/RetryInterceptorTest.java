package dev.retryagent.okhttp;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.reset;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.CircuitBreakerOpenException;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.PolicyResolver;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.Bodiless;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.PushingH2cServer;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import okhttp3.Cache;
import okhttp3.CacheControl;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;
import okhttp3.HttpUrl;
import okhttp3.Interceptor;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okio.BufferedSink;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The interceptor against a real loopback server, through {@code execute()}, {@code enqueue()} with
 * the wait inside the interceptor, and {@code enqueue()} run by an {@link AsyncRetrier}.
 */
class RetryInterceptorTest {
  enum Way {
    EXECUTE,
    ENQUEUE,
    ENQUEUE_REQUEUED
  }

  private static final MediaType JSON = MediaType.parse("application/json");

  private ScriptedHttpServer server;
  private FakeTime time;
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private OkHttpClient client;
  private AsyncRetrier retrier;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    time = new FakeTime();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
    if (client != null) {
      client.dispatcher().executorService().shutdown();
      client.connectionPool().evictAll();
    }
  }

  private void configure(UnaryOperator<RetryPolicy.Builder> retry) {
    configure(Mode.ENFORCE, retry, CircuitBreakerPolicy.defaults());
  }

  private void configure(
      Mode mode, UnaryOperator<RetryPolicy.Builder> retry, CircuitBreakerPolicy breaker) {
    RetryEngine engine = TestEngines.engine(time, mode, retry, breaker, events);
    retrier = new AsyncRetrier(engine);
    client =
        new OkHttpClient.Builder()
            // OkHttp's own silent retry of connection failures would hide what we test.
            .retryOnConnectionFailure(false)
            .addInterceptor(retrier.interceptor())
            .build();
  }

  /**
   * Plain OkHttp speaking HTTP/2 with prior knowledge, and the same client with the interceptors
   * (configure first) side by side. Ours has a connection pool of its own so that its call, as
   * plain OkHttp's, opens a new connection: OkHttp resends a failure on a pooled connection once
   * more (OkHttp 5 a refused stream; a cancel, which then says "Canceled"), not on a new one.
   */
  private final class H2Clients implements AutoCloseable {
    final OkHttpClient plain =
        new OkHttpClient.Builder().protocols(List.of(Protocol.H2_PRIOR_KNOWLEDGE)).build();
    final OkHttpClient ours =
        plain
            .newBuilder()
            .connectionPool(new okhttp3.ConnectionPool())
            .addInterceptor(retrier.interceptor())
            .addNetworkInterceptor(retrier.interceptor().networkInterceptor())
            .build();

    @Override
    public void close() {
      plain.dispatcher().executorService().shutdown();
      plain.connectionPool().evictAll();
      ours.connectionPool().evictAll();
    }
  }

  @ParameterizedTest(name = "network interceptor: {0}")
  @ValueSource(booleans = {true, false})
  void executeOfACallCancelledBeforehandSendsNothingAndCountsNoAttempt(boolean resends)
      throws Exception {
    // OkHttp fails execute() of a call the application cancelled first with "Canceled", sending
    // nothing, with or without the agent. Through it, that attempt gave its permit back but was
    // counted as one (attempts_total 1, the server having seen none).
    server.otherwise(ok("fine"));
    RefusedAttempts refused = new RefusedAttempts(time, events);
    OkHttpClient plain = new OkHttpClient();
    client = refused.ours(plain.newBuilder(), resends).build();
    Throwable[] failures = new Throwable[2];
    OkHttpClient[] clients = {plain, client};
    for (int i = 0; i < 2; i++) {
      Call cancelled = clients[i].newCall(new Request.Builder().url(server.url("/items")).build());
      cancelled.cancel();
      failures[i] = catchThrowable(() -> cancelled.execute().close());
    }
    assertThat(failures[1])
        .isExactlyInstanceOf(failures[0].getClass())
        .hasMessage(failures[0].getMessage());
    refused.assertNothingCounted(server, events, 1);
    try (Response after =
        client.newCall(new Request.Builder().url(server.url("/items")).build()).execute()) {
      assertThat(after.code()).as("the permit back").isEqualTo(200);
    }
    assertThat(refused.attempts()).isEqualTo(1);
  }

  /**
   * A retry the rate limit refuses after a 503 whose body is longer than a copy takes (8 KiB) ends
   * with that 503 and its whole body, as without the agent: kept through the retry's short wait,
   * the retry's permit asked for before it went. Before, it was released at the decision, and
   * execute() threw the rate limit's exception ("...released for the retry").
   */
  @Test
  void aRetryTheRateLimitRefusesAfterA503WithALargeBodyEndsWithThat503() throws Exception {
    StringBuilder page = new StringBuilder();
    while (page.length() < 20_000) {
      page.append("busy, come back later. ");
    }
    retrier = new AsyncRetrier(TestEngines.rateLimitedTo(1, time, events));
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
    server.enqueue(status(503).body(page.toString()), ok("never"));

    Response r = client.newCall(get("/v1/items")).execute();

    assertThat(r.code()).isEqualTo(503);
    assertThat(body(r)).isEqualTo(page.toString());
    assertThat(server.requestCount()).as("the retry not made").isEqualTo(1);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.RATE_LIMITED);
  }

  @Test
  void theLogOfAFirstAttemptTheClientRefusedSaysItWasNotSent() throws Exception {
    // execute() of a call cancelled first: the debug line 'attempt 1 of 3 starting' is told as
    // the attempt starts, before OkHttp refuses it; then the call's lines said 'cancelled before
    // the first attempt' and 'failed before any attempt', read after it as if the attempt line
    // were wrong, or the give-up. They say now that the attempt that started was not sent.
    List<String> lines = new CopyOnWriteArrayList<>();
    retrier =
        new AsyncRetrier(
            TestEngines.rateLimitedTo(
                1,
                time,
                events,
                new dev.retryagent.internal.observe.LogListener(
                    dev.retryagent.config.LogLevel.DEBUG, lines::add, null)));
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
    Call cancelled = client.newCall(new Request.Builder().url(server.url("/items")).build());
    cancelled.cancel();

    assertThatThrownBy(() -> cancelled.execute().close()).hasMessage("Canceled");

    String call = "retry-agent: GET 127.0.0.1:" + server.port() + "/items ";
    assertThat(lines)
        .containsExactly(
            call + "attempt 1 of 3 starting [route=test]",
            call + "cancelled before the first attempt was sent [route=test]",
            call + "failed before any attempt was sent (cancelled) [route=test]");
    assertThat(server.awaitRequests(0)).isEqualTo(requests(0));
  }

  @ParameterizedTest
  @EnumSource(
      value = Way.class,
      names = {"EXECUTE", "ENQUEUE_REQUEUED"})
  void aCallCancelledWhileItsConnectionIsFoundGivesItsRateLimitPermitBack(Way way)
      throws Exception {
    // The application cancels a call while OkHttp looks its host up (a Dns that waits): nothing
    // sent, "Canceled" with or without the agent. Its rate-limit permit stayed spent, and the call
    // after, which the host would have served, was refused (RateLimitedException).
    server.otherwise(ok("fine"));
    String url = server.url("/items").replace("127.0.0.1", "localhost");
    for (boolean ours : new boolean[] {false, true}) {
      java.util.concurrent.CountDownLatch lookingUp = new java.util.concurrent.CountDownLatch(1);
      java.util.concurrent.CountDownLatch answer = new java.util.concurrent.CountDownLatch(1);
      AtomicInteger lookups = new AtomicInteger();
      okhttp3.Dns dns =
          host -> {
            if (lookups.getAndIncrement() == 0) {
              lookingUp.countDown();
              try {
                answer.await(10, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
            return java.util.Collections.singletonList(java.net.InetAddress.getLoopbackAddress());
          };
      retrier = new AsyncRetrier(TestEngines.rateLimitedTo(1, time, events));
      OkHttpClient.Builder b = new OkHttpClient.Builder().dns(dns);
      if (ours) {
        b.addInterceptor(retrier.interceptor())
            .addNetworkInterceptor(retrier.interceptor().networkInterceptor());
      }
      client = b.build();
      int requests = server.requestCount();
      Call cancelled = client.newCall(new Request.Builder().url(url).build());
      CompletableFuture<Throwable> failed = new CompletableFuture<>();
      if (way == Way.EXECUTE) {
        CompletableFuture.runAsync(
            () -> failed.complete(catchThrowable(() -> cancelled.execute().close())));
      } else {
        Callback cb =
            new Callback() {
              @Override
              public void onFailure(Call c, IOException e) {
                failed.complete(e);
              }

              @Override
              public void onResponse(Call c, Response r) {
                r.close();
                failed.complete(null);
              }
            };
        if (ours) {
          retrier.enqueue(cancelled, cb);
        } else {
          cancelled.enqueue(cb);
        }
      }
      assertThat(lookingUp.await(10, TimeUnit.SECONDS)).isTrue();
      cancelled.cancel();
      answer.countDown();
      assertThat(failed.get(10, TimeUnit.SECONDS))
          .as("through the agent %s", ours)
          .isInstanceOf(IOException.class)
          .hasMessage("Canceled");
      try (Response after = client.newCall(new Request.Builder().url(url).build()).execute()) {
        assertThat(after.code()).as("through the agent %s", ours).isEqualTo(200);
      }
      assertThat(server.requestCount() - requests).isEqualTo(1);
      client.dispatcher().executorService().shutdown();
      client.connectionPool().evictAll();
    }
  }

  private Response call(Way way, Request request) throws Exception {
    return call(client, way, request);
  }

  /** The thread the last enqueued call's callback ran on. */
  private volatile String callbackThread;

  private Response call(OkHttpClient client, Way way, Request request) throws Exception {
    Call call = client.newCall(request);
    if (way == Way.EXECUTE) {
      return call.execute();
    }
    CompletableFuture<Response> f = new CompletableFuture<>();
    Callback cb =
        new Callback() {
          @Override
          public void onFailure(Call c, IOException e) {
            assertThat(c).isSameAs(call);
            callbackThread = Thread.currentThread().getName();
            f.completeExceptionally(e);
          }

          @Override
          public void onResponse(Call c, Response r) {
            assertThat(c).isSameAs(call);
            callbackThread = Thread.currentThread().getName();
            f.complete(r);
          }
        };
    if (way == Way.ENQUEUE) {
      call.enqueue(cb);
    } else {
      retrier.enqueue(call, cb);
    }
    try {
      return f.get(20, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw (Exception) e.getCause();
    }
  }

  private static String body(Response r) throws IOException {
    try (r) {
      return r.body().string();
    }
  }

  private Request get(String path) {
    return new Request.Builder().url(server.url(path)).build();
  }

  private Request post(String path, RequestBody body, String key) {
    Request.Builder b = new Request.Builder().url(server.url(path)).post(body);
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    return b.build();
  }

  /**
   * A 503 with a body over 8 KiB before a retry wait over 1 s, on a route whose rate limit then
   * refuses the retry: {@code execute()} returns that 503, body whole, as the plain client does,
   * after one request. The response could be neither kept through the wait nor copied; its retry's
   * permit is now reserved before its release. Before, it was released, the permit refused after
   * the 2 s wait, and execute() threw RateLimitedException.
   */
  @Test
  void executeEndsWithThe503WhoseLongRetryWaitTheRateLimitRefusesBodyOver8KiBWhole()
      throws Exception {
    String large = "busy ".repeat(4 * 1024); // 20 KiB
    server.otherwise(status(503).body(large));
    OkHttpClient plain = new OkHttpClient();
    String url = server.url("/v1/items");
    String plainBody;
    try (Response r = plain.newCall(new Request.Builder().url(url).build()).execute()) {
      assertThat(r.code()).isEqualTo(503);
      plainBody = r.body().string();
    }
    retrier = new AsyncRetrier(TestEngines.rateLimitedTo(1, Duration.ofSeconds(2), time, events));
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();

    try (Response r = call(Way.EXECUTE, get("/v1/items"))) {
      assertThat(r.code()).isEqualTo(503);
      assertThat(body(r)).isEqualTo(plainBody).hasSize(20 * 1024);
    }
    assertThat(server.requestCount()).isEqualTo(2); // the plain client's, and ours: no retry
    assertThat(time.waits()).as("no wait for a retry never made").isEmpty();
    plain.connectionPool().evictAll();
  }

  /**
   * A small 503 whose body has not all come within the copy's 100 ms, before a retry wait over 1 s
   * the rate limit refuses: {@code execute()} returns that 503, and its body, once the server sends
   * the rest, reads whole, as the plain client's does. The copy's peek timed out and its timeout
   * closed the connection; the permit, reserved only after the copy made none, was refused and the
   * call ended with a response whose body then failed to read ("Socket closed").
   */
  @Test
  void executeEndsWithThe503WhoseBodyComesLateAndWhoseRetryTheRateLimitRefusesReadableWhole()
      throws Exception {
    CountDownLatch plainRelease = new CountDownLatch(1);
    server.enqueue(status(503).body("busy busy busy").heldAfter(4, plainRelease));
    OkHttpClient plain = new OkHttpClient();
    String plainBody;
    try (Response r =
        plain.newCall(new Request.Builder().url(server.url("/v1/items")).build()).execute()) {
      assertThat(r.code()).isEqualTo(503);
      plainRelease.countDown();
      plainBody = r.body().string();
    }
    CountDownLatch release = new CountDownLatch(1);
    server.enqueue(status(503).body("busy busy busy").heldAfter(4, release));
    retrier = new AsyncRetrier(TestEngines.rateLimitedTo(1, Duration.ofSeconds(2), time, events));
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();

    try (Response r = call(Way.EXECUTE, get("/v1/items"))) {
      assertThat(r.code()).isEqualTo(503);
      release.countDown();
      assertThat(body(r)).isEqualTo(plainBody).isEqualTo("busy busy busy");
    }
    assertThat(server.requestCount()).isEqualTo(2); // the plain client's, and ours: no retry
    assertThat(time.waits()).as("no wait for a retry never made").isEmpty();
    plain.connectionPool().evictAll();
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void retries503TwiceThenReturnsThe200OnOneConnection(Way way) throws Exception {
    configure(b -> b);
    server.enqueue(status(503), status(503), ok("done"));

    Response r = call(way, get("/v1/items"));

    assertThat(r.code()).isEqualTo(200);
    assertThat(body(r)).isEqualTo("done");
    assertThat(server.requestCount()).isEqualTo(3);
    // Every retried response was closed, so its connection went back to the pool and was reused.
    assertThat(client.connectionPool().connectionCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void neverRetriesAPostWithoutIdempotencyKey(Way way) throws Exception {
    configure(b -> b);
    server.enqueue(status(503), ok("charged"));

    Response r = call(way, post("/v1/charges", RequestBody.create(JSON, "{}"), null));

    assertThat(r.code()).isEqualTo(503);
    r.close();
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aMethodWrittenInLowerCaseIsAnUnknownMethodNotSafeToRepeat(Way way) throws Exception {
    // OkHttp sends the method in the case it was given, and method names are case-sensitive (RFC
    // 9110 section 9.1): a "post" is not retried, and neither is a "get", which a server may take
    // for any method it does not know (upper-cased, it was judged a GET and retried).
    configure(b -> b);
    server.enqueue(status(503), status(503), ok("listed"));

    Request post =
        new Request.Builder()
            .url(server.url("/v1/charges"))
            .method("post", RequestBody.create(JSON, "{}"))
            .build();
    Response r = call(way, post);
    assertThat(r.code()).isEqualTo(503);
    r.close();
    assertThat(server.requestCount()).isEqualTo(1);

    Request get = new Request.Builder().url(server.url("/v1/items")).method("get", null).build();
    Response g = call(way, get);
    assertThat(g.code()).isEqualTo(503);
    g.close();
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(server.requests()).extracting(req -> req.method).containsExactly("post", "get");
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void retriesAPostWithIdempotencyKeyWithTheSameKeyAndBody(Way way) throws Exception {
    configure(b -> b.unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY));
    server.enqueue(status(503), ok("charged"));

    Response r =
        call(way, post("/v1/charges", RequestBody.create(JSON, "{\"amount\":42}"), "order-7"));

    assertThat(body(r)).isEqualTo("charged");
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
  void sendsAOneShotBodyOnlyOnce(Way way) throws Exception {
    configure(b -> b.unsafeMethods(UnsafeMethods.ALWAYS));
    server.enqueue(status(503), ok("stored"));
    RequestBody oneShot =
        new RequestBody() {
          @Override
          public MediaType contentType() {
            return JSON;
          }

          @Override
          public void writeTo(BufferedSink sink) throws IOException {
            sink.writeUtf8("{\"stream\":true}");
          }

          @Override
          public boolean isOneShot() {
            return true;
          }
        };

    Response r = call(way, post("/v1/upload", oneShot, "k"));

    assertThat(r.code()).isEqualTo(503);
    r.close();
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(events).anySatisfy(e -> assertThat(e.reason()).hasToString("BODY_NOT_REPLAYABLE"));
  }

  /** A body whose {@code isOneShot()} throws: an application bug OkHttp meets only on a retry. */
  private static RequestBody bodyWhoseIsOneShotThrows(AtomicInteger writes) {
    return new RequestBody() {
      @Override
      public MediaType contentType() {
        return JSON;
      }

      @Override
      public void writeTo(BufferedSink sink) throws IOException {
        writes.incrementAndGet();
        sink.writeUtf8("{\"stream\":true}");
      }

      @Override
      public boolean isOneShot() {
        throw new IllegalStateException("isOneShot is broken");
      }
    };
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aBodyWhoseIsOneShotThrowsIsSentAsWithoutUsWhenNoRetryIsNeeded(Way way) throws Exception {
    // OkHttp asks isOneShot() only to resend or follow up: a call answered at once never asks it.
    // The interceptor (and AsyncRetrier.enqueue) asked it up front, so the application's call
    // failed with the body's IllegalStateException (execute, enqueue) before anything was sent.
    configure(b -> b.unsafeMethods(UnsafeMethods.ALWAYS));
    server.enqueue(ok("stored"));
    AtomicInteger writes = new AtomicInteger();

    Response r = call(way, post("/v1/upload", bodyWhoseIsOneShotThrows(writes), "k"));

    assertThat(body(r)).isEqualTo("stored");
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(writes).hasValue(1);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aBodyWhoseIsOneShotThrowsIsTakenForOneShotAndNeverSentTwice(Way way) throws Exception {
    // Whether it can be sent again is unknown: the safe answer is no.
    configure(b -> b.unsafeMethods(UnsafeMethods.ALWAYS));
    server.enqueue(status(503), ok("stored"));
    AtomicInteger writes = new AtomicInteger();

    Response r = call(way, post("/v1/upload", bodyWhoseIsOneShotThrows(writes), "k"));

    assertThat(r.code()).isEqualTo(503);
    r.close();
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(writes).hasValue(1);
    assertThat(events).anySatisfy(e -> assertThat(e.reason()).hasToString("BODY_NOT_REPLAYABLE"));
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aRetrysWaitThatEndsPastTheDeadlineEndsTheCallWithTheAttemptsOutcome(Way way)
      throws Exception {
    // Each wait before a retry ends 40 s late (a paused JVM, a timer held up), past the 1 s
    // deadline: the retry started anyway, with a timeout of 1 ns, the server got a request nobody
    // waited for, and the application a timeout (or the retry's answer) instead of its outcome.
    configure(b -> b.deadline(Duration.ofSeconds(1)).retryAfterMax(Duration.ofSeconds(1)));
    time.late(40_000_000_000L);
    server.otherwise(ok("late"));
    server.enqueue(reset());

    Throwable failure = catchThrowable(() -> call(way, get("/v1/items")));

    assertThat(failure)
        .as("the reset as OkHttp gave it")
        .isInstanceOf(IOException.class)
        .isNotInstanceOf(InterruptedIOException.class);
    assertThat(server.requestCount()).isEqualTo(1);

    // Near the deadline the 503 is kept through a wait on the call's thread (execute, and enqueue
    // waiting in the interceptor); the AsyncRetrier released it before its wait on the scheduler,
    // and gives back the copy it kept. No retry either way.
    server.enqueue(status(503));
    Response r = call(way, get("/v1/items"));
    assertThat(r.code()).isEqualTo(503);
    assertThat(body(r)).isEqualTo("status 503");
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.DEADLINE, GiveUpReason.DEADLINE);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aResponseReleasedBeforeAWaitThatEndsPastTheDeadlineIsGivenBackAsItCame(Way way)
      throws Exception {
    // A 503 whose Retry-After (5 s, over the 1 s margin) has it released before the wait, which
    // ends 40 s late, past the 10 s deadline: the application got the engine's IOException where
    // without the agent it had the 503. Now the copy taken before the release (status, headers,
    // its small body) is given back, and nothing more is sent. ENQUEUE_REQUEUED: the AsyncRetrier's
    // wait on the scheduler, whose copy reaches the callback from OkHttp's run of a clone.
    configureAWaitThatEndsPastTheDeadline();
    server.enqueue(status(503).header("Retry-After", "5").body("busy, come back"));

    Response r = call(way, get("/v1/items"));

    assertThat(r.code()).isEqualTo(503);
    assertThat(r.header("Retry-After")).isEqualTo("5");
    assertThat(body(r)).isEqualTo("busy, come back");
    if (way != Way.EXECUTE) {
      assertThat(callbackThread)
          .as("a dispatcher thread, as OkHttp tells it")
          .startsWith("OkHttp ");
    }
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.DEADLINE);
  }

  @Test
  void aResponseGivenBackAfterALateWaitOnTheSchedulerPassesTheApplicationsInterceptorsOnce()
      throws Exception {
    // As the agent enqueues (the client's dispatcher known): the copy kept of the 503 released
    // before the wait, which ends 40 s late, past the 10 s deadline, is told to the callback on a
    // dispatcher thread, having come through the application's interceptor ahead of ours once, as
    // without the agent (through OkHttp's run of a clone, as a failure is told, it came again).
    configureAWaitThatEndsPastTheDeadline();
    server.enqueue(status(503).header("Retry-After", "5").body("busy, come back"));
    AtomicInteger ahead = new AtomicInteger();
    OkHttpClient.Builder b = client.newBuilder(); // the same dispatcher
    b.interceptors() // ahead of ours, which must stay last
        .add(
            0,
            chain -> {
              Response r = chain.proceed(chain.request());
              ahead.incrementAndGet();
              return r;
            });
    OkHttpClient withAhead = b.build();
    Call call = withAhead.newCall(get("/v1/items"));
    CompletableFuture<Response> heard = new CompletableFuture<>();
    AtomicReference<String> thread = new AtomicReference<>();
    retrier.enqueue(
        call,
        new Callback() {
          @Override
          public void onFailure(Call c, IOException e) {
            thread.set(Thread.currentThread().getName());
            heard.completeExceptionally(e);
          }

          @Override
          public void onResponse(Call c, Response r) {
            thread.set(Thread.currentThread().getName());
            heard.complete(r);
          }
        },
        withAhead.dispatcher());

    Response r = heard.get(20, TimeUnit.SECONDS);

    assertThat(r.code()).isEqualTo(503);
    assertThat(r.header("Retry-After")).isEqualTo("5");
    assertThat(body(r)).isEqualTo("busy, come back");
    assertThat(thread.get()).startsWith("OkHttp ");
    assertThat(ahead).as("the application's interceptor saw the response once").hasValue(1);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void anIOExceptionTheCallbackThrowsForAResponseGivenBackIsLoggedAsOkHttpLogsIt()
      throws Exception {
    // OkHttp logs what an application's onResponse throws ("Callback failure for call to ...",
    // INFO, through its Platform) and never calls onFailure after onResponse. The copy given back
    // after a late wait is told outside OkHttp's run of a call: the exception was dropped, said
    // nowhere. Compared with plain OkHttp on the same server; the query (a token) is never logged.
    configureAWaitThatEndsPastTheDeadline();
    Logger okHttpLog = Logger.getLogger(OkHttpClient.class.getName());
    List<LogRecord> logged = new CopyOnWriteArrayList<>();
    Handler handler = recordingHandler(logged);
    okHttpLog.addHandler(handler);
    OkHttpClient plain = new OkHttpClient.Builder().build();
    try {
      server.enqueue(status(503).header("Retry-After", "5"));
      ThrowingCallback without = new ThrowingCallback(new IOException("the application's own"));
      plain.newCall(get("/v1/items?token=secret")).enqueue(without);
      LogRecord expected = awaitCallbackFailure(logged, without.thrown);

      server.enqueue(status(503).header("Retry-After", "5"));
      ThrowingCallback with = new ThrowingCallback(new IOException("the application's own"));
      retrier.enqueue(client.newCall(get("/v1/items?token=secret")), with, client.dispatcher());
      LogRecord heard = awaitCallbackFailure(logged, with.thrown);

      assertThat(heard.getLevel()).isEqualTo(expected.getLevel()).isEqualTo(Level.INFO);
      assertThat(heard.getMessage())
          .isEqualTo(expected.getMessage())
          .isEqualTo("Callback failure for call to " + HttpUrl.get(server.url("/")).redact())
          .doesNotContain("secret");
      assertThat(with.thread)
          .as("a dispatcher thread, named as OkHttp names it while it runs the call")
          .isEqualTo(without.thread)
          .isEqualTo("OkHttp " + HttpUrl.get(server.url("/")).redact());
      assertThat(with.responses).hasValue(1);
      assertThat(with.failures).as("onFailure never follows onResponse").hasValue(0);
      assertThat(without.failures).hasValue(0);
      assertThat(server.requestCount()).isEqualTo(2);
    } finally {
      okHttpLog.removeHandler(handler);
      plain.dispatcher().executorService().shutdown();
    }
  }

  @Test
  void aRuntimeExceptionTheCallbackThrowsForAResponseGivenBackCancelsTheCallAsOkHttpDoes()
      throws Exception {
    // OkHttp cancels a call whose onResponse threw anything but an IOException and lets it leave
    // onto the dispatcher's thread (its uncaught handler); onFailure is not called. The copy given
    // back after a late wait left the task the same way, but the call was not cancelled.
    configureAWaitThatEndsPastTheDeadline();
    UncaughtRecordingDispatcher threads = new UncaughtRecordingDispatcher();
    List<Throwable> uncaught = threads.uncaught;
    Dispatcher dispatcher = threads.dispatcher;
    OkHttpClient plain = new OkHttpClient.Builder().dispatcher(dispatcher).build();
    OkHttpClient agent = client.newBuilder().dispatcher(dispatcher).build();
    try {
      server.enqueue(status(503).header("Retry-After", "5"));
      ThrowingCallback without = new ThrowingCallback(new IllegalStateException("a bug"));
      Call plainCall = plain.newCall(get("/v1/items"));
      plainCall.enqueue(without);
      await().atMost(Duration.ofSeconds(20)).until(() -> uncaught.contains(without.thrown));

      server.enqueue(status(503).header("Retry-After", "5"));
      ThrowingCallback with = new ThrowingCallback(new IllegalStateException("a bug"));
      Call call = agent.newCall(get("/v1/items"));
      retrier.enqueue(call, with, dispatcher);
      await().atMost(Duration.ofSeconds(20)).until(() -> uncaught.contains(with.thrown));

      assertCancelledAsPlainOkHttpCancelsIt(plainCall, without, call, with);
    } finally {
      threads.close();
    }
  }

  @Test
  void anInterruptedExceptionTheCallbackThrowsForAResponseGivenBackEndsAsOkHttpEndsIt()
      throws Exception {
    // An onResponse that throws an InterruptedException (sneakily, as Kotlin may): OkHttp cancels
    // the call; up to 5.1 it lets the exception leave onto the dispatcher's thread, from 5.2 on it
    // keeps it there and sets the thread's interrupt flag. The copy given back after a late wait,
    // told outside OkHttp's run of a call, let it leave on every version, the call not cancelled.
    // Compared with plain OkHttp of the version under test.
    configureAWaitThatEndsPastTheDeadline();
    EndRecordingExecutor plainThreads = new EndRecordingExecutor();
    EndRecordingExecutor agentThreads = new EndRecordingExecutor();
    OkHttpClient plain =
        new OkHttpClient.Builder().dispatcher(new Dispatcher(plainThreads)).build();
    Dispatcher dispatcher = new Dispatcher(agentThreads);
    OkHttpClient agent = client.newBuilder().dispatcher(dispatcher).build();
    try {
      server.enqueue(status(503).header("Retry-After", "5"));
      ThrowingCallback without = new ThrowingCallback(new InterruptedException("the app's"));
      Call plainCall = plain.newCall(get("/v1/items"));
      plainCall.enqueue(without);
      await().atMost(Duration.ofSeconds(20)).until(() -> !plainThreads.ends.isEmpty());

      server.enqueue(status(503).header("Retry-After", "5"));
      ThrowingCallback with = new ThrowingCallback(new InterruptedException("the app's"));
      Call call = agent.newCall(get("/v1/items"));
      retrier.enqueue(call, with, dispatcher);
      await().atMost(Duration.ofSeconds(20)).until(() -> !agentThreads.ends.isEmpty());

      assertThat(agentThreads.ends).isEqualTo(plainThreads.ends).hasSize(1);
      assertCancelledAsPlainOkHttpCancelsIt(plainCall, without, call, with);
    } finally {
      plainThreads.shutdown();
      agentThreads.shutdown();
    }
  }

  @Test
  void aFailureOfOursAsAResponseIsGivenBackStillTellsTheCallbackOnce() throws Exception {
    // Our own failure (an Error, as a class missing) as the copy kept for a late wait was given
    // back, before the callback heard of the call: it left the task onto the dispatcher's thread
    // and the callback never heard. Now the callback gets the response, once, on that thread.
    configureAWaitThatEndsPastTheDeadline();
    UncaughtRecordingDispatcher threads = new UncaughtRecordingDispatcher();
    OkHttpClient agent = client.newBuilder().dispatcher(threads.dispatcher).build();
    EnqueuedCall.givingBack =
        () -> {
          throw new NoClassDefFoundError("missing/Dependency");
        };
    try {
      server.enqueue(status(503).header("Retry-After", "5").body("busy"));
      CompletableFuture<String> heard = new CompletableFuture<>();
      AtomicInteger reports = new AtomicInteger();
      AtomicReference<String> thread = new AtomicReference<>();
      retrier.enqueue(
          agent.newCall(get("/v1/items")),
          new Callback() {
            @Override
            public void onFailure(Call c, IOException e) {
              reports.incrementAndGet();
              heard.complete(e.toString());
            }

            @Override
            public void onResponse(Call c, Response r) throws IOException {
              reports.incrementAndGet();
              thread.set(Thread.currentThread().getName());
              try (Response body = r) {
                heard.complete(r.code() + " " + body.body().string());
              }
            }
          },
          threads.dispatcher);

      assertThat(heard.get(20, TimeUnit.SECONDS)).isEqualTo("503 busy");
      assertThat(reports).hasValue(1);
      assertThat(thread.get()).isEqualTo("OkHttp " + HttpUrl.get(server.url("/")).redact());
      assertThat(threads.uncaught).isEmpty();
      assertThat(server.requestCount()).isEqualTo(1);
    } finally {
      EnqueuedCall.givingBack = null;
      threads.close();
    }
  }

  /**
   * Retries that may wait up to 5 s for a 503's {@code Retry-After}, within a 10 s deadline, and a
   * wait that ends 40 s late (a paused JVM): past the deadline, so the call ends with the response
   * released for the retry, given back from its copy. A request that comes anyway is answered
   * "late".
   */
  private void configureAWaitThatEndsPastTheDeadline() {
    configure(b -> b.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)));
    time.late(40_000_000_000L);
    server.otherwise(ok("late"));
  }

  /** A callback whose onResponse closes the response and throws {@code thrown}. */
  private static final class ThrowingCallback implements Callback {
    final Throwable thrown;
    final AtomicInteger responses = new AtomicInteger();
    final AtomicInteger failures = new AtomicInteger();
    volatile String thread;

    ThrowingCallback(Throwable thrown) {
      this.thrown = thrown;
    }

    @Override
    public void onFailure(Call call, IOException e) {
      failures.incrementAndGet();
    }

    @Override
    public void onResponse(Call call, Response response) throws IOException {
      thread = Thread.currentThread().getName();
      responses.incrementAndGet();
      response.close();
      if (thrown instanceof IOException) {
        throw (IOException) thrown;
      }
      throw RetryInterceptorTest.<RuntimeException>sneaky(thrown);
    }
  }

  /**
   * Both calls were cancelled, as OkHttp cancels a call whose onResponse threw, each callback heard
   * its response once and never onFailure, and the server had one request of each.
   */
  private void assertCancelledAsPlainOkHttpCancelsIt(
      Call plainCall, ThrowingCallback without, Call call, ThrowingCallback with) {
    assertThat(plainCall.isCanceled()).isTrue();
    assertThat(call.isCanceled()).as("cancelled, as OkHttp cancels it").isTrue();
    assertThat(with.responses).hasValue(1);
    assertThat(with.failures).hasValue(0);
    assertThat(without.failures).hasValue(0);
    assertThat(server.requestCount()).isEqualTo(2);
  }

  /** Throws {@code t}, checked or not, as an application's Kotlin callback may. */
  @SuppressWarnings("unchecked")
  private static <T extends Throwable> T sneaky(Throwable t) throws T {
    throw (T) t;
  }

  /**
   * A dispatcher's executor that records how each task that threw or left its thread interrupted
   * ended: {@code "threw <exception>"} or {@code "returned"}, and {@code ", interrupted"}.
   */
  private static final class EndRecordingExecutor extends java.util.concurrent.ThreadPoolExecutor {
    final List<String> ends = new CopyOnWriteArrayList<>();

    EndRecordingExecutor() {
      super(
          0,
          Integer.MAX_VALUE,
          60,
          TimeUnit.SECONDS,
          new java.util.concurrent.SynchronousQueue<>());
      setThreadFactory(
          r -> {
            Thread t = new Thread(r, "OkHttp test dispatcher");
            t.setDaemon(true);
            t.setUncaughtExceptionHandler((thread, e) -> {}); // recorded by afterExecute
            return t;
          });
    }

    @Override
    protected void afterExecute(Runnable r, Throwable t) {
      boolean interrupted = Thread.currentThread().isInterrupted();
      if (t != null || interrupted) {
        ends.add(
            (t == null ? "returned" : "threw " + t.getClass().getName())
                + (interrupted ? ", interrupted" : ""));
      }
    }
  }

  private static Handler recordingHandler(List<LogRecord> records) {
    return new Handler() {
      @Override
      public void publish(LogRecord record) {
        records.add(record);
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
  }

  private static LogRecord awaitCallbackFailure(List<LogRecord> logged, Throwable thrown) {
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> logged.stream().anyMatch(r -> r.getThrown() == thrown));
    return logged.stream().filter(r -> r.getThrown() == thrown).findFirst().get();
  }

  @Test
  void okHttpsCallTimeoutRunningOutDuringALateWaitEndsTheCallAsOkHttpEndsOneItTimedOut()
      throws Exception {
    // OkHttp's callTimeout (real, 1 s) runs out during the retry's wait, which ends late (a paused
    // JVM: the engine's clock then 40 s on). The wait is inside the OkHttp call, whose timeout
    // cancels it: OkHttp fails whatever the interceptor returns then ("Canceled", made "timeout"
    // as the call exits), so the 503 the application had without the agent cannot be given back
    // (guarantees.md). What is kept: OkHttp's own exception for a call its timeout ended, and
    // nothing more sent (the retry is not made).
    AtomicReference<Call> running = new AtomicReference<>();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(
                nanos -> {
                  await().atMost(Duration.ofSeconds(10)).until(() -> running.get().isCanceled());
                  time.sleep(nanos);
                })
            .scheduler(time)
            .mode(Mode.ENFORCE)
            .policy(
                new dev.retryagent.policy.Policy(
                    "test",
                    RetryPolicy.builder().build(),
                    dev.retryagent.policy.Policy.defaults().budget(),
                    CircuitBreakerPolicy.defaults(),
                    dev.retryagent.policy.Policy.defaults().rateLimit()))
            .build();
    retrier = new AsyncRetrier(engine);
    client =
        new OkHttpClient.Builder()
            .callTimeout(1, TimeUnit.SECONDS)
            .addInterceptor(retrier.interceptor())
            .build();
    time.late(40_000_000_000L);
    server.otherwise(ok("late"));
    server.enqueue(status(503).body("busy"));
    Call call = client.newCall(get("/v1/items"));
    running.set(call);
    assertThatThrownBy(() -> call.execute().close())
        .isInstanceOf(InterruptedIOException.class)
        .hasMessage("timeout")
        .hasCauseInstanceOf(IOException.class);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void executeCancelledAsItsLateWaitEndsPastItsCallTimeoutFailsAsCanceled(boolean reset)
      throws Exception {
    // The retry's wait ends past the call's timeout as the engine sees it (its clock 40 s late, the
    // callTimeout 30 s: OkHttp's own, real, has not run out), and the application cancels the call
    // as it ends, before the loop looks at the deadline. The outcome of before the wait (the 503,
    // or the reset) is not what the caller gets: OkHttp's "Canceled", as plain OkHttp fails a call
    // cancelled in flight, and nothing more is sent. Test only: right already (a cancelled call is
    // never "too late"; its attempt goes to OkHttp, which refuses it). Checked against a deliberate
    // break (a cancelled call judged too late): the reset was thrown; the 503 stays right by
    // OkHttp's own check of a response returned after a cancel.
    AtomicReference<Call> running = new AtomicReference<>();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(
                nanos -> {
                  time.sleep(nanos);
                  running.get().cancel(); // as the wait ends
                })
            .scheduler(time)
            .mode(Mode.ENFORCE)
            .build();
    retrier = new AsyncRetrier(engine);
    client =
        new OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false)
            .addInterceptor(retrier.interceptor())
            .build();
    time.late(40_000_000_000L);
    server.otherwise(ok("late"));
    server.enqueue(reset ? ScriptedHttpServer.Action.reset() : status(503).body("busy"));
    Call call = client.newCall(get("/v1/items"));
    running.set(call);
    assertThatThrownBy(() -> call.execute().close())
        .isExactlyInstanceOf(IOException.class)
        .hasMessage("Canceled");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void theExceptionOfAnInterruptedWaitCarriesNoPathParameterOrSegment() throws Exception {
    // The application logs the exception the agent made: a servlet container's ;jsessionid=...
    // is a session's credential, and agent.redact.pathSegments masks segments the agent writes.
    server.otherwise(status(503));
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(
                nanos -> {
                  throw new InterruptedException(); // interrupted while it waits to retry
                })
            .scheduler(time)
            .build();
    client =
        new OkHttpClient.Builder().addInterceptor(new AsyncRetrier(engine).interceptor()).build();
    try {
      assertThatThrownBy(
              () -> client.newCall(get("/v1;jsessionid=canary-session/tok_canary")).execute())
          .isInstanceOf(java.io.InterruptedIOException.class)
          .hasMessageStartingWith("retry-agent: interrupted while waiting to retry GET http://")
          .hasMessageNotContaining("canary");
    } finally {
      Thread.interrupted();
    }
  }

  @Test
  void aBodyWhoseIsOneShotThrowsFailsOkHttpsOwnRepeatAsOkHttpAloneDoes() throws Exception {
    // OkHttp asks isOneShot() before it repeats a 503 with Retry-After: 0 itself: the body's
    // exception is what the application gets without us. The body the interceptor wraps answered
    // for it ("one-shot"), so the application got the 503 instead.
    configure(b -> b.unsafeMethods(UnsafeMethods.ALWAYS));
    OkHttpClient plain = new OkHttpClient.Builder().retryOnConnectionFailure(false).build();
    for (OkHttpClient c : List.of(plain, client)) {
      // Asked before the repeat is sent: nothing more is needed.
      server.enqueue(status(503).header("Retry-After", "0"));
      Request post = post("/v1/upload", bodyWhoseIsOneShotThrows(new AtomicInteger()), "k");

      assertThatThrownBy(() -> c.newCall(post).execute().close())
          .as(c == plain ? "plain OkHttp" : "with the interceptor")
          .isInstanceOf(IllegalStateException.class)
          .hasMessage("isOneShot is broken");
    }
    plain.connectionPool().evictAll();
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @ParameterizedTest
  @EnumSource(
      value = Way.class,
      names = {"EXECUTE", "ENQUEUE_REQUEUED"})
  void aRetriedGzipResponseReachesTheApplicationAsAPlainOneDoes(Way way) throws Exception {
    // OkHttp's BridgeInterceptor, below ours, asks for gzip and decodes each attempt's answer (its
    // Content-Encoding and Content-Length dropped); with the application's own Accept-Encoding it
    // decodes nothing. Side by side with plain OkHttp answered 200 at once: the retried call (a
    // 503 whose gzip is broken, closed unread, then the 200) gives the same status, headers and
    // body, decoded once or not at all as plain OkHttp does.
    configure(b -> b);
    OkHttpClient plain = new OkHttpClient();
    for (boolean ownAcceptEncoding : new boolean[] {false, true}) {
      Request.Builder b = new Request.Builder().url(server.url("/v1/items"));
      if (ownAcceptEncoding) {
        b.header("Accept-Encoding", "gzip");
      }
      Request request = b.build();
      server.enqueue(ok("fine").gzipped());
      String alone;
      try (Response r = plain.newCall(request).execute()) {
        alone = seen(r);
      }
      server.enqueue(status(503).brokenGzip(), ok("fine").gzipped());
      try (Response r = call(way, request)) {
        assertThat(seen(r)).as("own Accept-Encoding %s", ownAcceptEncoding).isEqualTo(alone);
      }
    }
    assertThat(server.requests())
        .hasSize(6)
        .allSatisfy(r -> assertThat(r.header("Accept-Encoding")).isEqualTo("gzip"));
  }

  @ParameterizedTest
  @EnumSource(Bodiless.class)
  void aRetriedResponseWithoutABodyLeavesItsConnectionToTheNextAttempt(Bodiless c) {
    // Side by side, each way: nothing to read of the retried response, so the retry goes out on
    // its connection at once, as plain OkHttp's next call does. But a 304 with a Content-Length:
    // OkHttp honours the header and waits for that body (100 ms at most, then closes the
    // connection), plain and through us alike.
    Request request = new Request.Builder().url(server.url("/r")).method(c.method, null).build();
    for (Way way : Way.values()) {
      // a client of its own each time: OkHttp 3 takes a 103 for the final response, which leaves
      // the rest of the answer on its connection
      OkHttpClient plain = new OkHttpClient();
      configure(Mode.ENFORCE, c::policy, CircuitBreakerPolicy.builder().enabled(false).build());
      c.sideBySide(
          server,
          () -> answer(plain.newCall(request).execute()),
          () -> answer(call(way, request)),
          c != Bodiless.NOT_MODIFIED,
          way.name());
    }
  }

  private static String answer(Response r) throws IOException {
    try (r) {
      // OkHttp honours a 304's Content-Length: reading that body waits for bytes that will not
      // come, so the application only closes it.
      return r.code() + " " + (r.code() == 304 ? "" : r.body().string());
    }
  }

  @ParameterizedTest
  @EnumSource(
      value = Way.class,
      names = {"EXECUTE", "ENQUEUE_REQUEUED"})
  void aRetriedResponseWithAnEndlessBodyHasItsConnectionClosedNotReadToItsEnd(Way way)
      throws Exception {
    // Closing a response, as we do a retried one, is OkHttp's own discard: the rest of the body is
    // skipped for at most 100 ms, then the connection is closed. Side by side with plain OkHttp,
    // whose application gets the 503 as its head arrives: the retry comes at once, on a connection
    // of its own, the 503's closed (1 GiB, sent until the client goes).
    configure(b -> b);
    OkHttpClient plain = new OkHttpClient();
    server.enqueue(status(503).endless());
    try (Response r =
        plain.newCall(new Request.Builder().url(server.url("/plain")).build()).execute()) {
      assertThat(r.code()).isEqualTo(503);
    }
    server.enqueue(status(503).endless(), ok("fine"));
    Request retried = new Request.Builder().url(server.url("/retried")).build();
    String body =
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
            java.time.Duration.ofSeconds(10),
            () -> {
              try (Response r = call(way, retried)) {
                return r.body().string();
              }
            });
    assertThat(body).isEqualTo("fine");
    org.awaitility.Awaitility.await().until(() -> server.isDoneWith(1));
    assertThat(server.connectionCount()).isEqualTo(3);
  }

  /** What the application sees of {@code r}: status, headers, the body's bytes. */
  private static String seen(Response r) throws IOException {
    return r.code()
        + " "
        + r.headers()
        + java.util.Base64.getEncoder().encodeToString(r.body().bytes());
  }

  @Test
  void aBodyWhoseIsOneShotThrowsFailsOkHttpsOwnResendAfterAResetAsOkHttpAloneDoes()
      throws Exception {
    // A connection that fails once the request was written: OkHttp (retryOnConnectionFailure, on
    // by default) asks the body isOneShot() before it sends it again, and the body's exception is
    // what the application gets without us. The body of an unkeyed POST is guarded (ResendGuard),
    // and the guard, one-shot from that failure on, answered without asking the application's
    // body: the application got the reset instead.
    configure(b -> b);
    OkHttpClient plain = new OkHttpClient();
    OkHttpClient guarded =
        new OkHttpClient.Builder()
            .addInterceptor(retrier.interceptor())
            .addNetworkInterceptor(retrier.interceptor().networkInterceptor())
            .build();
    for (OkHttpClient c : List.of(plain, guarded)) {
      server.enqueue(reset());
      Request post = post("/v1/upload", bodyWhoseIsOneShotThrows(new AtomicInteger()), null);

      assertThatThrownBy(() -> c.newCall(post).execute().close())
          .as(c == plain ? "plain OkHttp" : "with the interceptor")
          .isInstanceOf(IllegalStateException.class)
          .hasMessage("isOneShot is broken");
      c.connectionPool().evictAll();
    }
    assertThat(server.requestCount()).isEqualTo(2);
  }

  /**
   * A POST without key on a client wired by hand, with the network interceptor and without it (the
   * application interceptor alone, as most applications add one): its kept-alive connection fails
   * once the request was written (the server read it, then reset), and OkHttp
   * (retryOnConnectionFailure, on by default) sends it again on a new connection. Without the
   * network interceptor nothing told the guarded body of the failure, so OkHttp resent it and the
   * server got the POST twice (and the application the second answer). Now both clients end as the
   * engine decides, with the reset, the server having it once.
   */
  @ParameterizedTest(name = "{0}, network interceptor: {1}")
  @MethodSource("eachWayTwice")
  void okHttpDoesNotResendAPostWithoutKeyAfterAFailedConnectionWithOrWithoutTheNetworkInterceptor(
      Way way, boolean network) throws Exception {
    configure(b -> b);
    OkHttpClient.Builder b = new OkHttpClient.Builder().addInterceptor(retrier.interceptor());
    if (network) {
      b.addNetworkInterceptor(retrier.interceptor().networkInterceptor());
    }
    OkHttpClient byHand = b.build();
    try {
      server.enqueue(ok("warm"), reset(), ok("charged twice"));
      assertThat(body(call(byHand, way, get("/v1/warm")))).isEqualTo("warm"); // kept alive

      Throwable thrown =
          catchThrowable(
              () -> call(byHand, way, post("/v1/charges", RequestBody.create(JSON, "{}"), null)));

      assertThat(server.requests().stream().filter(r -> r.method.equals("POST")))
          .as("POSTs the server read")
          .hasSize(1);
      assertThat(thrown).isInstanceOf(IOException.class);
    } finally {
      byHand.dispatcher().executorService().shutdown();
      byHand.connectionPool().evictAll();
    }
  }

  /**
   * The same client without the network interceptor still lets OkHttp repeat a POST without key
   * after a 503 with {@code Retry-After: 0} and follow a 307 with it (4.x and 5.x; 3.14 gives the
   * 307 back), as plain OkHttp does: OkHttp asks the guarded body whether it is one-shot before
   * those too, and only its question after a failed request is answered yes. Catches a guard that
   * answers yes to every question of OkHttp's.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aPostWithoutKeyIsStillRedirectedAndRepeatedOnAClientWithoutTheNetworkInterceptor(Way way)
      throws Exception {
    configure(b -> b);
    OkHttpClient plain = new OkHttpClient();
    OkHttpClient byHand = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
    List<String> seen = new ArrayList<>();
    try {
      for (OkHttpClient c : List.of(plain, byHand)) {
        try (ScriptedHttpServer s = new ScriptedHttpServer()) {
          s.enqueue(
              status(503).header("Retry-After", "0"),
              status(307).header("Location", "/v1/charges/again"),
              ok("charged"));
          Request post =
              new Request.Builder()
                  .url(s.url("/v1/charges"))
                  .post(RequestBody.create(JSON, "{}"))
                  .build();

          Response r = call(c, c == plain ? Way.EXECUTE : way, post);

          seen.add(body(r) + " after " + s.requestCount() + " requests");
        }
      }
    } finally {
      for (OkHttpClient c : List.of(plain, byHand)) {
        c.dispatcher().executorService().shutdown();
        c.connectionPool().evictAll();
      }
    }
    assertThat(seen.get(1)).as("by hand, as plain OkHttp").isEqualTo(seen.get(0));
    assertThat(seen.get(0))
        .endsWith(" after " + (seen.get(0).startsWith("charged") ? 3 : 2) + " requests");
  }

  /**
   * What a client without the network interceptor cannot tell (pinned, see docs/okhttp.md Limits):
   * a POST without key whose HTTP/2 stream the server refused unprocessed, which plain OkHttp 3.x
   * and 4.x send again (5.x on a pooled connection), is kept from OkHttp's resend like any failed
   * POST, and the call fails with the refusal; the server has it once. With the network interceptor
   * it ends as without us ({@link #aPostWhoseHttp2StreamWasRefusedEndsAsWithoutUs}).
   */
  @ParameterizedTest
  @EnumSource(
      value = Way.class,
      names = {"EXECUTE", "ENQUEUE_REQUEUED"})
  void aRefusedPostWithoutKeyFailsWithTheRefusalOnAClientWithoutTheNetworkInterceptor(Way way)
      throws Exception {
    configure(b -> b);
    try (PushingH2cServer h2 = PushingH2cServer.priorKnowledge().answeringWholeRequests();
        H2Clients clients = new H2Clients()) {
      OkHttpClient byHand =
          clients
              .plain
              .newBuilder()
              .connectionPool(new okhttp3.ConnectionPool())
              .addInterceptor(retrier.interceptor())
              .build();
      h2.enqueueReset(PushingH2cServer.REFUSED_STREAM);
      Request post =
          new Request.Builder()
              .url(h2.url("/v1/charges"))
              .post(RequestBody.create(JSON, "{}"))
              .build();

      Throwable thrown = catchThrowable(() -> call(byHand, way, post).close());

      assertThat(thrown).hasMessage("stream was reset: REFUSED_STREAM");
      assertThat(h2.requestStreams()).hasSize(1);
      assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
      byHand.connectionPool().evictAll();
    }
  }

  static List<Arguments> eachWayTwice() {
    List<Arguments> all = new ArrayList<>();
    for (Way way : Way.values()) {
      for (boolean network : new boolean[] {true, false}) {
        all.add(Arguments.of(way, network));
      }
    }
    return all;
  }

  /**
   * A POST without key whose HTTP/2 stream the server refused (RST_STREAM REFUSED_STREAM: not
   * processed, safe to send again): OkHttp 3.x and 4.x send it again by themselves and the
   * application gets the answer; 5.x gives the refusal back. The guard made the body one-shot after
   * any failure of its request, so with the interceptor the call failed with the refusal where
   * plain 3.x and 4.x got the 200. Now the same outcome and as many streams at the server as plain
   * OkHttp, on each version; OkHttp's resend is counted as an attempt (no retry of ours follows).
   */
  @ParameterizedTest
  @EnumSource(
      value = Way.class,
      names = {"EXECUTE", "ENQUEUE_REQUEUED"})
  void aPostWhoseHttp2StreamWasRefusedEndsAsWithoutUs(Way way) throws Exception {
    try (PushingH2cServer h2 = PushingH2cServer.priorKnowledge()) {
      aRefusedPostEndsAsWithoutUs(
          h2, way, false, server -> server.enqueueReset(PushingH2cServer.REFUSED_STREAM));
    }
  }

  /**
   * A POST without key that {@code refuse} has the server refuse, with plain OkHttp (its own
   * enqueue, for the one that AsyncRetrier runs) and ours side by side, each on a new connection or
   * one it used before ({@code pooled}): the same outcome, as many streams at the server, and no
   * retry of ours.
   */
  private void aRefusedPostEndsAsWithoutUs(
      PushingH2cServer h2, Way way, boolean pooled, Consumer<PushingH2cServer> refuse)
      throws Exception {
    configure(b -> b);
    try (H2Clients clients = new H2Clients()) {
      OkHttpClient plain = clients.plain;
      List<String> outcomes = new ArrayList<>();
      List<Integer> streams = new ArrayList<>();
      for (OkHttpClient c : List.of(plain, clients.ours)) {
        if (pooled) {
          h2.enqueue(200);
          call(c, Way.EXECUTE, new Request.Builder().url(h2.url("/warm")).build()).close();
        }
        refuse.accept(h2);
        int before = h2.requestStreams().size();
        Request post =
            new Request.Builder()
                .url(h2.url("/v1/charges"))
                .post(RequestBody.create(JSON, "{}"))
                .build();
        String outcome;
        try (Response r = call(c, c == plain ? Way.ENQUEUE : way, post)) {
          outcome = r.code() + " " + r.body().string();
        } catch (IOException e) {
          outcome = e.getClass().getName() + ": " + e.getMessage();
        }
        outcomes.add(outcome);
        streams.add(h2.requestStreams().size() - before);
      }
      assertThat(outcomes.get(1)).as("with the interceptor").isEqualTo(outcomes.get(0));
      assertThat(streams.get(1)).isEqualTo(streams.get(0));
      assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
    }
  }

  /**
   * A POST without key above a GOAWAY's last stream id: the server says it did not process it, and
   * OkHttp reports the stream as {@code REFUSED_STREAM} (its reader's GOAWAY handling), which 3.x
   * and 4.x send again by themselves (5.x on a pooled connection). That is what Resends.failed's
   * refused-stream branch keeps for a GOAWAY as for an RST_STREAM: the same outcome and as many
   * streams at the server as plain OkHttp, no retry of ours. With the branch removed every row but
   * 5.x's on a new connection fails (the refusal where plain OkHttp had the 200). Refused once the
   * whole request arrived, so that OkHttp is not still writing the body.
   */
  @ParameterizedTest(name = "{0}, pooled: {1}")
  @MethodSource("eachWayTwice")
  void aPostAboveAGoAwaysLastStreamEndsAsWithoutUs(Way way, boolean pooled) throws Exception {
    try (PushingH2cServer h2 = PushingH2cServer.priorKnowledge().answeringWholeRequests()) {
      aRefusedPostEndsAsWithoutUs(h2, way, pooled, server -> server.enqueueGoAway(false));
    }
  }

  /**
   * The control: a POST at the GOAWAY's last stream id, which the server may have acted on, and
   * whose stream then fails with the connection. OkHttp would send it again on a new connection
   * (not a refusal); the guard keeps it to one request, and the call fails as the engine decides.
   * Catches a Resends.failed that takes every failure after a GOAWAY for a refusal.
   */
  @ParameterizedTest(name = "{0}, pooled: {1}")
  @MethodSource("eachWayTwice")
  void aPostAtAGoAwaysLastStreamIsNotSentAgain(Way way, boolean pooled) throws Exception {
    configure(b -> b);
    try (PushingH2cServer h2 = PushingH2cServer.priorKnowledge().answeringWholeRequests();
        H2Clients clients = new H2Clients()) {
      if (pooled) {
        h2.enqueue(200);
        call(clients.ours, Way.EXECUTE, new Request.Builder().url(h2.url("/warm")).build()).close();
      }
      h2.enqueueGoAway(true);
      int before = h2.requestStreams().size();
      Request post =
          new Request.Builder()
              .url(h2.url("/v1/charges"))
              .post(RequestBody.create(JSON, "{}"))
              .build();

      Throwable thrown = catchThrowable(() -> call(clients.ours, way, post).close());

      assertThat(h2.requestStreams().size() - before).as("POSTs the server had").isEqualTo(1);
      assertThat(thrown).isInstanceOf(IOException.class);
    }
  }

  /**
   * A duplex body (HTTP/2 only) is not one-shot unless it says so: OkHttp repeats its request (a
   * 503 with Retry-After: 0, a 408, after a connection failure) and follows a redirect with it, as
   * with any other body. The wrapper that learns whether it was written (TrackingRequestBody)
   * answered one-shot for it: OkHttp gave the 503 back, where without us the application had the
   * 200.
   */
  @Test
  void okHttpRepeatsARequestWithADuplexBodyAsWithoutUs() throws Exception {
    configure(b -> b);
    try (PushingH2cServer h2 = PushingH2cServer.priorKnowledge()) {
      OkHttpClient plain =
          new OkHttpClient.Builder().protocols(List.of(Protocol.H2_PRIOR_KNOWLEDGE)).build();
      OkHttpClient ours = plain.newBuilder().addInterceptor(retrier.interceptor()).build();
      for (OkHttpClient c : List.of(plain, ours)) {
        h2.enqueue(503, "retry-after", "0");
        AtomicInteger writes = new AtomicInteger();
        RequestBody duplex =
            new RequestBody() {
              @Override
              public MediaType contentType() {
                return JSON;
              }

              @Override
              public void writeTo(BufferedSink sink) throws IOException {
                writes.incrementAndGet();
                sink.writeUtf8("{}");
                sink.close();
              }

              @Override
              public boolean isDuplex() {
                return true;
              }
            };
        Request post = new Request.Builder().url(h2.url("/v1/stream")).post(duplex).build();

        try (Response r = c.newCall(post).execute()) {
          assertThat(r.code())
              .as(c == plain ? "plain OkHttp" : "with the interceptor")
              .isEqualTo(200);
          assertThat(r.priorResponse().code()).isEqualTo(503);
        }
        assertThat(writes).hasValue(2);
      }
      assertThat(h2.requestStreams()).hasSize(4);
      plain.dispatcher().executorService().shutdown();
      plain.connectionPool().evictAll();
    }
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void sendsAOneShotBodyOnlyOnceThoughAnInterceptorWrapsItInABodyThatDoesNotSaySo(Way way)
      throws Exception {
    // OkHttp's gzip recipe wraps the call's body in a RequestBody that forwards writeTo only: the
    // wrapper does not say one-shot, but writing it writes the call's one-shot body again. The
    // interceptor judged only the request it was handed, so on execute() it sent the stream a
    // second time (an empty or partial upload the server could store), where an enqueued call,
    // judged by its own request, was not retried.
    configure(b -> b.unsafeMethods(UnsafeMethods.ALWAYS));
    client =
        new OkHttpClient.Builder()
            .retryOnConnectionFailure(false)
            .addInterceptor(
                chain -> {
                  RequestBody body = chain.request().body();
                  RequestBody forwarding =
                      new RequestBody() {
                        @Override
                        public MediaType contentType() {
                          return body.contentType();
                        }

                        @Override
                        public void writeTo(BufferedSink sink) throws IOException {
                          body.writeTo(sink);
                        }
                      };
                  return chain.proceed(chain.request().newBuilder().put(forwarding).build());
                })
            .addInterceptor(retrier.interceptor())
            .build();
    server.enqueue(status(503), ok("stored"));
    AtomicInteger writes = new AtomicInteger();
    RequestBody oneShot =
        new RequestBody() {
          @Override
          public MediaType contentType() {
            return JSON;
          }

          @Override
          public void writeTo(BufferedSink sink) throws IOException {
            if (writes.incrementAndGet() == 1) {
              sink.writeUtf8("{\"stream\":true}"); // a stream: nothing left the second time
            }
          }

          @Override
          public boolean isOneShot() {
            return true;
          }
        };

    Response r =
        call(way, new Request.Builder().url(server.url("/v1/files/7")).put(oneShot).build());

    assertThat(r.code()).isEqualTo(503);
    r.close();
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(writes).hasValue(1);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void doesNotRetryA404(Way way) throws Exception {
    configure(b -> b);
    server.enqueue(status(404), ok("never"));

    Response r = call(way, get("/missing"));

    assertThat(r.code()).isEqualTo(404);
    r.close();
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void waitsAtLeastWhatRetryAfterAsksAndReturnsLongOnesAtOnce(Way way) throws Exception {
    configure(b -> b);
    server.enqueue(status(429).header("Retry-After", "1"), ok("done"));
    assertThat(body(call(way, get("/a")))).isEqualTo("done");
    // The interceptor waits in slices (to notice cancellation), so add them up.
    assertThat(time.waits().stream().mapToLong(Long::longValue).sum())
        .isGreaterThanOrEqualTo(1_000_000_000L);

    server.enqueue(status(429).header("Retry-After", "120").body("slow down"), ok("never"));
    Response r = call(way, get("/b"));

    assertThat(r.code()).isEqualTo(429);
    assertThat(body(r)).isEqualTo("slow down");
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void retriesAConnectionReset(Way way) throws Exception {
    configure(b -> b);
    server.enqueue(reset(), ok("after reset"));

    assertThat(body(call(way, get("/v1/items")))).isEqualTo("after reset");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void makesExactlyMaxAttempts(Way way) throws Exception {
    configure(b -> b.maxAttempts(4));
    server.otherwise(status(503));

    Response r = call(way, get("/v1/items"));

    assertThat(r.code()).isEqualTo(503);
    r.close();
    assertThat(server.requestCount()).isEqualTo(4);
  }

  /**
   * In observe mode every request body reaches the application's network interceptors as its own (a
   * {@code MultipartBody}, OkHttp's byte body, a body class of the application's), and {@code
   * response.request()} is the application's request, as with OkHttp alone: observe mode decides
   * nothing a wrapper would tell. Before, every body but a {@code FormBody} went out wrapped
   * ({@code ResendGuard.Body}), only so that a body's own failure did not count in the breaker an
   * enforcing configuration kept after a reload; breakers are kept by mode now.
   */
  @ParameterizedTest
  @MethodSource("unretriedFormPosts")
  void inObserveModeEveryBodyReachesTheNetworkAsTheApplicationsOwn(
      Way way, boolean networkInterceptor) throws Exception {
    server.otherwise(ok("done"));
    Request multipart =
        new Request.Builder()
            .url(server.url("/v1/files/1"))
            .put(
                new okhttp3.MultipartBody.Builder()
                    .setType(okhttp3.MultipartBody.FORM)
                    .addFormDataPart("a", "1")
                    .build())
            .build();
    Request bytes =
        new Request.Builder()
            .url(server.url("/v1/charges"))
            .post(RequestBody.create(JSON, "{}"))
            .build();
    Request own = new Request.Builder().url(server.url("/v1/items/1")).put(new OwnBody()).build();
    List<Request> requests = List.of(multipart, bytes, own);
    List<String> plainSeen = new CopyOnWriteArrayList<>();
    OkHttpClient plain =
        new OkHttpClient.Builder()
            .retryOnConnectionFailure(false)
            .addNetworkInterceptor(bodyClasses(plainSeen))
            .build();
    Way plainWay = way == Way.ENQUEUE_REQUEUED ? Way.ENQUEUE : way; // OkHttp's own enqueue
    try {
      for (Request r : requests) {
        call(plain, plainWay, r).close();
      }
    } finally {
      plain.dispatcher().executorService().shutdown();
    }
    configure(Mode.OBSERVE, b -> b.maxAttempts(3), CircuitBreakerPolicy.defaults());
    List<String> seen = new CopyOnWriteArrayList<>();
    OkHttpClient.Builder b = client.newBuilder().addNetworkInterceptor(bodyClasses(seen));
    if (networkInterceptor) {
      b.addNetworkInterceptor(retrier.interceptor().networkInterceptor());
    }
    OkHttpClient ours = b.build();
    try {
      for (Request r : requests) {
        try (Response response = call(ours, way, r)) {
          assertThat(body(response)).isEqualTo("done");
          assertThat(response.request()).as(r.method() + " " + r.url()).isSameAs(r);
        }
      }
    } finally {
      ours.dispatcher().executorService().shutdown();
    }

    assertThat(plainSeen).containsExactly("MultipartBody", bytesClass(), "OwnBody");
    assertThat(seen).isEqualTo(plainSeen);
  }

  /** The simple name of the class of OkHttp's byte body, which differs between versions. */
  private static String bytesClass() {
    return RequestBody.create(JSON, "{}").getClass().getSimpleName();
  }

  /** A request body of the application's own class. */
  private static final class OwnBody extends RequestBody {
    @Override
    public MediaType contentType() {
      return JSON;
    }

    @Override
    public void writeTo(BufferedSink sink) throws IOException {
      sink.writeUtf8("{}");
    }
  }

  /**
   * A body whose own writeTo fails in observe mode ends the call with its own exception, as without
   * the agent, and refuses nothing once a reload switches to enforce: observe mode's body is no
   * longer watched for its own failure, which its breaker takes for the host's (one failure opens
   * it here), but that breaker is observe mode's own. Before breakers were kept by mode, the first
   * enforcing call was refused (CircuitBreakerOpenException) had the body gone unwatched.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void inObserveModeABodysOwnFailureRefusesNothingOnceEnforced(Way way) throws Exception {
    CircuitBreakerPolicy breaker =
        CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build();
    RetryEngine engine = TestEngines.engine(time, Mode.OBSERVE, b -> b, breaker, events);
    retrier = new AsyncRetrier(engine);
    client =
        new OkHttpClient.Builder()
            .addInterceptor(retrier.interceptor())
            .addNetworkInterceptor(retrier.interceptor().networkInterceptor())
            .build();
    server.otherwise(ok("stored"));
    IOException own = new IOException("disk");
    RequestBody failing =
        new RequestBody() {
          @Override
          public MediaType contentType() {
            return JSON;
          }

          @Override
          public void writeTo(BufferedSink sink) throws IOException {
            sink.writeUtf8("{\"part\":");
            throw own;
          }
        };
    Request put = new Request.Builder().url(server.url("/v1/files/7")).put(failing).build();
    assertThatThrownBy(() -> call(way, put).close()).isSameAs(own);

    engine.reconfigure(
        Mode.ENFORCE,
        PolicyResolver.always(
            new Policy(
                "test",
                RetryPolicy.builder().build(),
                Policy.defaults().budget(),
                breaker,
                Policy.defaults().rateLimit())));
    int before = server.requestCount();

    assertThat(body(call(way, get("/v1/files/7")))).isEqualTo("stored");
    assertThat(server.requestCount()).isEqualTo(before + 1);
  }

  /**
   * A body whose own writeTo fails (the file or stream it reads from: "disk"; a socket it copies
   * from: a reset) is the application's mistake, not the host's failure: the call ends with that
   * exception, and as many requests and writes as OkHttp alone makes. Counted as the host's
   * failure, it opened a breaker that opens on one failure (the host's next call refused), and a
   * reset was retried for the PUT (the body written again, a request the application never made).
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aBodyWhoseOwnWriteFailsEndsTheCallAsWithoutUsNotAsTheHostsFailure(Way way) throws Exception {
    configure(
        Mode.ENFORCE,
        b -> b,
        CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build());
    // As an application has it: OkHttp's own resend after a connection failure on.
    client =
        new OkHttpClient.Builder()
            .addInterceptor(retrier.interceptor())
            .addNetworkInterceptor(retrier.interceptor().networkInterceptor())
            .build();
    OkHttpClient plain = new OkHttpClient();
    server.otherwise(ok("stored"));
    for (IOException own :
        List.of(new IOException("disk"), new java.net.SocketException("Connection reset"))) {
      for (OkHttpClient c : List.of(plain, client)) {
        String as = (c == plain ? "plain OkHttp, " : "with the interceptor, ") + own;
        AtomicInteger writes = new AtomicInteger();
        RequestBody failing =
            new RequestBody() {
              @Override
              public MediaType contentType() {
                return JSON;
              }

              @Override
              public void writeTo(BufferedSink sink) throws IOException {
                writes.incrementAndGet();
                sink.writeUtf8("{\"part\":");
                throw own;
              }
            };
        int before = server.requestCount();
        int from = server.connectionCount();
        Request put = new Request.Builder().url(server.url("/v1/files/7")).put(failing).build();
        OkHttpClient saved = client;
        client = c;
        try {
          // A plain client's enqueue is OkHttp's own.
          Way plainWay = way == Way.ENQUEUE_REQUEUED ? Way.ENQUEUE : way;
          assertThatThrownBy(() -> call(c == plain ? plainWay : way, put).close())
              .as(as)
              .isSameAs(own);
        } finally {
          client = saved;
        }
        assertThat(writes).as(as).hasValue(1);
        // Counted once the server is done with the call's connection (OkHttp closes the one its
        // write failed on): a whole request it was still reading would otherwise pass unseen.
        c.connectionPool().evictAll();
        server.awaitDoneWithConnectionsFrom(from);
        assertThat(server.requestCount() - before).as(as).isZero();
      }
      // The breaker, which one failure opens, stays closed: the host's next call goes through.
      assertThat(body(call(way, get("/v1/items")))).isEqualTo("stored");
    }
    assertThat(time.waits()).isEmpty();
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
  }

  /**
   * A body whose {@code contentLength()} disagrees with what its writeTo writes is the
   * application's mistake, not the host's failure. OkHttp fails the call with a ProtocolException
   * of its own sink's making ("unexpected end of stream" for too few bytes; "expected N bytes but
   * received M" for too many, thrown when its buffer hands the bytes on: inside writeTo for a large
   * body, at OkHttp's close of the sink after writeTo for a small one), as without the agent, the
   * body written once. Taken for the host's failure (the sink that threw is OkHttp's, under the
   * watched one), it opened a breaker that opens on one failure, the host's next call refused, and
   * with ProtocolException among the exceptions to retry the PUT was retried, the body written
   * again.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aBodyOfTheWrongLengthEndsTheCallAsWithoutUsNotAsTheHostsFailure(Way way) throws Exception {
    configure(
        Mode.ENFORCE,
        b -> b.retryOnExceptions(List.of("java.net.ProtocolException")),
        CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build());
    OkHttpClient plain = new OkHttpClient();
    server.otherwise(ok("stored"));
    // {declared, written, whether writeTo closes the sink itself}
    long[][] cases = {{20, 8, 0}, {20, 8, 1}, {4, 12, 0}, {10, 20_000, 0}, {10, 20_000, 1}};
    for (long[] wrong : cases) {
      List<Throwable> thrown = new java.util.ArrayList<>();
      for (OkHttpClient c : List.of(plain, client)) {
        String as =
            (c == plain ? "plain OkHttp, " : "with the interceptor, ")
                + java.util.Arrays.toString(wrong);
        AtomicInteger writes = new AtomicInteger();
        RequestBody lying = ofWrongLength(wrong[0], (int) wrong[1], wrong[2] == 1, writes);
        Request put = new Request.Builder().url(server.url("/v1/files/7")).put(lying).build();
        OkHttpClient saved = client;
        client = c;
        try {
          // A plain client's enqueue is OkHttp's own.
          Way plainWay = way == Way.ENQUEUE_REQUEUED ? Way.ENQUEUE : way;
          Throwable e = catchThrowable(() -> call(c == plain ? plainWay : way, put).close());
          assertThat(e).as(as).isInstanceOf(java.net.ProtocolException.class);
          thrown.add(e);
        } finally {
          client = saved;
        }
        assertThat(writes).as(as).hasValue(1);
        c.connectionPool().evictAll();
      }
      assertThat(thrown.get(1))
          .hasSameClassAs(thrown.get(0))
          .hasMessage(thrown.get(0).getMessage());
      // The breaker, which one failure opens, stays closed: the host's next call goes through.
      assertThat(body(call(way, get("/v1/items")))).isEqualTo("stored");
    }
    assertThat(time.waits()).isEmpty();
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
  }

  /** A body that says it is {@code declared} bytes long and writes {@code written}. */
  private static RequestBody ofWrongLength(
      long declared, int written, boolean closes, AtomicInteger writes) {
    return new RequestBody() {
      @Override
      public MediaType contentType() {
        return JSON;
      }

      @Override
      public long contentLength() {
        return declared;
      }

      @Override
      public void writeTo(BufferedSink sink) throws IOException {
        writes.incrementAndGet();
        sink.write(new byte[written]);
        if (closes) {
          sink.close();
        }
      }
    };
  }

  /**
   * A request taken back from a response ({@code networkResponse().request()}, which carries the
   * wrapped body of the call that made it; {@code response.request()} is the application's own) and
   * sent again in a new call: its body's own failure is the new call's application's, as a fresh
   * request's is. The wrapper answered to the first call, long over, so the new call took the
   * failure for the host's and a breaker that opens on one failure refused the host's next call.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aRequestTakenFromAResponseAndSentAgainIsWatchedForItsNewCall(Way way) throws Exception {
    configure(
        Mode.ENFORCE,
        b -> b,
        CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build());
    server.otherwise(ok("stored"));
    IOException own = new IOException("disk");
    AtomicInteger writes = new AtomicInteger();
    RequestBody failsTheSecondTime =
        new RequestBody() {
          @Override
          public MediaType contentType() {
            return JSON;
          }

          @Override
          public void writeTo(BufferedSink sink) throws IOException {
            sink.writeUtf8("{\"part\":");
            if (writes.incrementAndGet() > 1) {
              throw own;
            }
            sink.writeUtf8("1}");
          }
        };
    Request put =
        new Request.Builder().url(server.url("/v1/files/7")).put(failsTheSecondTime).build();
    Request again;
    try (Response first = call(way, put)) {
      assertThat(body(first)).isEqualTo("stored");
      assertThat(first.request()).isSameAs(put);
      again = first.networkResponse().request();
      assertThat(again.body()).isInstanceOf(ResendGuard.Body.class);
    }

    assertThatThrownBy(() -> call(way, again).close()).isSameAs(own);

    assertThat(writes).hasValue(2);
    // OkHttp 3.14 pools the connection of the half-written body, with or without us.
    client.connectionPool().evictAll();
    // The breaker, which one failure opens, stays closed: the host's next call goes through.
    assertThat(body(call(way, get("/v1/items")))).isEqualTo("stored");
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
  }

  /**
   * A duplex body (HTTP/2) whose writeTo throws a failure of its own (opening the file or stream it
   * is to write from, before it hands the sink to a thread of its own) is the application's, as
   * without the agent: the call fails with that exception, as many request streams reach the
   * server, and the breaker, which opens on one failure, stays closed for the host's next call.
   * Before, a duplex body was written as it was, unwatched, and its failure opened the breaker.
   */
  @Test
  void aDuplexBodyWhoseOwnWriteToFailsEndsTheCallAsWithoutUs() throws Exception {
    configure(
        Mode.ENFORCE,
        b -> b.unsafeMethods(UnsafeMethods.ALWAYS),
        CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build());
    try (PushingH2cServer h2 = PushingH2cServer.priorKnowledge()) {
      OkHttpClient plain =
          new OkHttpClient.Builder().protocols(List.of(Protocol.H2_PRIOR_KNOWLEDGE)).build();
      OkHttpClient ours =
          plain
              .newBuilder()
              .addInterceptor(retrier.interceptor())
              .addNetworkInterceptor(retrier.interceptor().networkInterceptor())
              .build();
      IOException own = new IOException("disk");
      AtomicInteger writes = new AtomicInteger();
      List<Integer> streams = new java.util.ArrayList<>();
      for (OkHttpClient c : List.of(plain, ours)) {
        String as = c == plain ? "plain OkHttp" : "with the interceptor";
        RequestBody duplex =
            new RequestBody() {
              @Override
              public MediaType contentType() {
                return JSON;
              }

              @Override
              public void writeTo(BufferedSink sink) throws IOException {
                writes.incrementAndGet();
                throw own; // opening its source, before a thread of its own writes the body
              }

              @Override
              public boolean isDuplex() {
                return true;
              }
            };
        int before = h2.requestStreams().size();
        Request put = new Request.Builder().url(h2.url("/v1/stream")).put(duplex).build();
        assertThatThrownBy(() -> c.newCall(put).execute().close()).as(as).isSameAs(own);
        // OkHttp sent the request's headers before writeTo: once the server saw them, it saw what
        // it will see of this call.
        org.awaitility.Awaitility.await()
            .atMost(10, TimeUnit.SECONDS)
            .until(() -> h2.requestStreams().size() > before);
        streams.add(h2.requestStreams().size() - before);
      }
      assertThat(writes).hasValue(2);
      assertThat(streams.get(1)).isEqualTo(streams.get(0));
      // The breaker, which one failure opens, stays closed: the host's next call goes through.
      try (Response r =
          ours.newCall(new Request.Builder().url(h2.url("/v1/items")).build()).execute()) {
        assertThat(r.code()).isEqualTo(200);
      }
      assertThat(time.waits()).isEmpty();
      assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
      plain.dispatcher().executorService().shutdown();
      plain.connectionPool().evictAll();
    }
  }

  /**
   * The application's cancel of an HTTP/2 call in flight: OkHttp resets the stream (CANCEL), and
   * the call fails with what plain OkHttp throws. The cancel is the caller's ending, not the host's
   * failure: the breaker, which opens on one failure, stays closed for the host's next call.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aCancelOfAnHttp2CallInFlightIsTheCallersEndingNotTheHostsFailure(boolean enqueue)
      throws Exception {
    configure(
        Mode.ENFORCE,
        b -> b,
        CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build());
    try (PushingH2cServer h2 = PushingH2cServer.priorKnowledge();
        H2Clients clients = new H2Clients()) {
      OkHttpClient plain = clients.plain;
      OkHttpClient ours = clients.ours;
      List<Throwable> thrown = new java.util.ArrayList<>();
      for (OkHttpClient c : List.of(plain, ours)) {
        h2.enqueueNoAnswer();
        int before = h2.requestStreams().size();
        Call call = c.newCall(new Request.Builder().url(h2.url("/v1/slow")).build());
        java.util.concurrent.CompletableFuture<Throwable> failure =
            new java.util.concurrent.CompletableFuture<>();
        if (enqueue) {
          call.enqueue(
              new Callback() {
                @Override
                public void onFailure(Call c, IOException e) {
                  failure.complete(e);
                }

                @Override
                public void onResponse(Call c, Response r) {
                  r.close();
                  failure.complete(null);
                }
              });
        } else {
          java.util.concurrent.CompletableFuture.runAsync(
              () -> {
                try (Response r = call.execute()) {
                  failure.complete(null);
                } catch (Throwable t) {
                  failure.complete(t);
                }
              });
        }
        org.awaitility.Awaitility.await()
            .atMost(10, TimeUnit.SECONDS)
            .until(() -> h2.requestStreams().size() > before);
        call.cancel();
        thrown.add(failure.get(10, TimeUnit.SECONDS));
      }
      assertThat(thrown.get(0)).isNotNull();
      assertThat(thrown.get(1)).isInstanceOf(thrown.get(0).getClass());
      assertThat(thrown.get(1)).hasMessage(thrown.get(0).getMessage());
      // The breaker, which one failure opens, stays closed: the host's next call goes through.
      try (Response r =
          ours.newCall(new Request.Builder().url(h2.url("/v1/items")).build()).execute()) {
        assertThat(r.code()).isEqualTo(200);
      }
      assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
    }
  }

  /**
   * A duplex body writes after writeTo returned, from a thread of its own, through the sink it was
   * given (ours, which watches OkHttp's for the body's own failure): what it writes, flushes and
   * closes there reaches the server as with plain OkHttp.
   */
  @Test
  void aDuplexBodyWrittenFromItsOwnThreadReachesTheServerAsWithoutUs() throws Exception {
    configure(b -> b);
    try (PushingH2cServer h2 = PushingH2cServer.priorKnowledge()) {
      OkHttpClient plain =
          new OkHttpClient.Builder().protocols(List.of(Protocol.H2_PRIOR_KNOWLEDGE)).build();
      OkHttpClient ours = plain.newBuilder().addInterceptor(retrier.interceptor()).build();
      List<String> received = new java.util.ArrayList<>();
      for (OkHttpClient c : List.of(plain, ours)) {
        CompletableFuture<Void> written = new CompletableFuture<>();
        RequestBody duplex =
            new RequestBody() {
              @Override
              public MediaType contentType() {
                return JSON;
              }

              @Override
              public void writeTo(BufferedSink sink) {
                Thread writer =
                    new Thread(
                        () -> {
                          try {
                            sink.writeUtf8("{\"part\":1}");
                            sink.flush();
                            sink.writeUtf8("{\"part\":2}");
                            sink.close();
                            written.complete(null);
                          } catch (IOException e) {
                            written.completeExceptionally(e);
                          }
                        },
                        "duplex-writer");
                writer.setDaemon(true);
                writer.start();
              }

              @Override
              public boolean isDuplex() {
                return true;
              }
            };
        int before = h2.requestStreams().size();
        Request post = new Request.Builder().url(h2.url("/v1/stream")).post(duplex).build();
        try (Response r = c.newCall(post).execute()) {
          assertThat(r.code()).isEqualTo(200);
          written.get(10, TimeUnit.SECONDS);
        }
        org.awaitility.Awaitility.await()
            .atMost(10, TimeUnit.SECONDS)
            .until(() -> h2.requestBody(h2.requestStreams().get(before)).endsWith("<end>"));
        received.add(h2.requestBody(h2.requestStreams().get(before)));
      }
      assertThat(received).containsExactly("{\"part\":1}{\"part\":2}<end>", received.get(0));
      plain.dispatcher().executorService().shutdown();
      plain.connectionPool().evictAll();
    }
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void openBreakerFailsFastWithoutARequest(Way way) throws Exception {
    configure(
        Mode.ENFORCE,
        b -> b.maxAttempts(1),
        CircuitBreakerPolicy.builder().countWindow(3).minimumCalls(3).build());
    server.otherwise(status(503));
    for (int i = 0; i < 3; i++) {
      call(way, get("/v1/items")).close();
    }

    assertThatThrownBy(() -> call(way, get("/v1/items")))
        .isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aCacheOnlyLookupAnsweredLocallyIsNeitherRetriedNorCountedByTheBreaker(
      Way way, @TempDir Path cacheDir) throws Exception {
    // OkHttp's cache answers a FORCE_CACHE (only-if-cached) request it cannot serve with a 504
    // of its own, without a request: it was retried with backoff, and counted as the server's
    // failure, so an application reading its cache offline opened the host's breaker and its
    // next real request failed without reaching the server.
    configure(
        Mode.ENFORCE,
        b -> b,
        CircuitBreakerPolicy.builder().countWindow(3).minimumCalls(3).build());
    client = client.newBuilder().cache(new Cache(cacheDir.toFile(), 1 << 20)).build();
    server.otherwise(ok("from the server"));
    Request cacheOnly =
        new Request.Builder()
            .url(server.url("/v1/items"))
            .cacheControl(CacheControl.FORCE_CACHE)
            .build();

    for (int i = 0; i < 3; i++) {
      Response r = call(way, cacheOnly);
      assertThat(r.code()).isEqualTo(504);
      r.close();
    }

    assertThat(time.waits()).isEmpty();
    assertThat(events).isEmpty();
    assertThat(body(call(way, get("/v1/items")))).isEqualTo("from the server");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void observeModeMakesOneRequest(Way way) throws Exception {
    configure(Mode.OBSERVE, b -> b, CircuitBreakerPolicy.defaults());
    server.enqueue(status(503), ok("never"));

    Response r = call(way, get("/v1/items"));

    assertThat(r.code()).isEqualTo(503);
    r.close();
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(events).anySatisfy(e -> assertThat(e.observeOnly()).isTrue());
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void sendsTheAttemptNumber(Way way) throws Exception {
    configure(b -> b.attemptHeader("X-Retry-Attempt"));
    server.enqueue(status(503), status(503), ok("done"));

    body(call(way, get("/v1/items")));

    assertThat(server.requests())
        .extracting(req -> req.header("X-Retry-Attempt"))
        .containsExactly("1", "2", "3");
  }

  /** What {@code response.request()} shows the application: method, URL, headers, body. */
  private static String shown(Request r, Request application) {
    return r.method()
        + " "
        + r.url().encodedPath()
        + " "
        + r.headers().toMultimap()
        + " body="
        + (r.body() == null ? "none" : r.body() == application.body() ? "application's" : "other");
  }

  /** {@code response} and its prior responses, as {@link #shown}: the application's view. */
  private static List<String> shownChain(Response response, Request application) {
    List<String> chain = new ArrayList<>();
    for (Response r = response; r != null; r = r.priorResponse()) {
      chain.add(r.code() + " " + shown(r.request(), application));
    }
    return chain;
  }

  /**
   * {@code response.request()} (and each {@code priorResponse().request()}) shows the application
   * the request it sent, as plain OkHttp does, not our attempt's with the attempt header: OkHttp's
   * bridge shows the request it was given, our attempt's. Answered at once, after our retry, and
   * after a 307 redirect OkHttp followed, side by side with a plain client.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void theResponsesRequestIsTheApplicationsNotTheAttempts(Way way) throws Exception {
    configure(b -> b.attemptHeader("X-Retry-Attempt").maxAttempts(3));
    OkHttpClient plain = new OkHttpClient.Builder().retryOnConnectionFailure(false).build();
    Request get =
        new Request.Builder().url(server.url("/v1/items")).header("X-App", "mine").build();
    Request post =
        new Request.Builder()
            .url(server.url("/v1/moved"))
            .header("X-App", "mine")
            .header("X-Retry-Attempt", "the application's own")
            .header("Idempotency-Key", "k-1")
            .post(RequestBody.create(JSON, "{}"))
            .build();
    // Every call is answered 200 but for what is enqueued before it. OkHttp 3 does not follow a
    // 307 of a POST (4 and 5 do, with its body): the application then gets the 307.
    server.otherwise(ok("done"));
    Way plainWay = way == Way.ENQUEUE_REQUEUED ? Way.ENQUEUE : way; // OkHttp's own enqueue
    List<String> plainGet;
    List<String> plainPost;
    OkHttpClient ours = client;
    client = plain;
    try {
      try (Response response = call(plainWay, get)) {
        plainGet = shownChain(response, get);
      }
      server.enqueue(status(307).header("Location", "/v1/moved-to"));
      try (Response response = call(plainWay, post)) {
        plainPost = shownChain(response, post);
      }
    } finally {
      client = ours;
    }
    int plainRequests = server.requestCount();

    try (Response once = call(way, get)) {
      assertThat(shownChain(once, get)).isEqualTo(plainGet);
    }
    server.enqueue(status(503));
    try (Response retried = call(way, get)) {
      assertThat(shownChain(retried, get)).isEqualTo(plainGet);
      // The network response keeps what went on the wire.
      assertThat(retried.networkResponse().request().header("X-Retry-Attempt")).isEqualTo("2");
    }
    server.enqueue(status(307).header("Location", "/v1/moved-to"));
    try (Response moved = call(way, post)) {
      assertThat(shownChain(moved, post))
          .isEqualTo(plainPost)
          .allSatisfy(v -> assertThat(v).contains("x-retry-attempt=[the application's own]"));
    }
    List<String> attempts = new ArrayList<>();
    for (ScriptedHttpServer.Recorded r :
        server.requests().subList(plainRequests, server.requestCount())) {
      attempts.add(r.header("X-Retry-Attempt"));
    }
    // once, retried twice, the POST (and its redirect's hop, which OkHttp 4 and 5 follow).
    assertThat(attempts).startsWith("1", "1", "2", "1").containsOnly("1", "2");
  }

  /** A network interceptor of the application's that notes the class of each body it sees. */
  private static Interceptor bodyClasses(List<String> seen) {
    return chain -> {
      RequestBody body = chain.request().body();
      seen.add(body == null ? "none" : body.getClass().getSimpleName());
      return chain.proceed(chain.request());
    };
  }

  static List<Arguments> unretriedFormPosts() {
    List<Arguments> rows = new ArrayList<>();
    for (Way way : Way.values()) {
      for (boolean networkInterceptor : new boolean[] {true, false}) {
        rows.add(Arguments.of(way, networkInterceptor));
      }
    }
    return rows;
  }

  /**
   * A call whose body needs no guarding reaches the application's network interceptors with the
   * application's own {@code FormBody} (one that signs a {@code FormBody} signs it), and its {@code
   * response.request()} is the request the application sent, as with OkHttp alone: a PUT and a
   * keyed POST answered at once under a policy that could retry them (only where the network
   * interceptor, or the agent's hook, tells what was sent), and an unkeyed POST in observe mode. An
   * unkeyed POST in enforce mode stays guarded below our interceptor (OkHttp would send it again by
   * itself after a failed connection), but its response shows the application's request. Before,
   * every body went out wrapped, and {@code response.request()} was the wrapped copy.
   */
  @ParameterizedTest
  @MethodSource("unretriedFormPosts")
  void aBodyThatNeedsNoGuardReachesTheNetworkAsTheApplicationsOwn(
      Way way, boolean networkInterceptor) throws Exception {
    List<String> plainSeen = new CopyOnWriteArrayList<>();
    OkHttpClient plain =
        new OkHttpClient.Builder()
            .retryOnConnectionFailure(false)
            .addNetworkInterceptor(bodyClasses(plainSeen))
            .build();
    server.otherwise(ok("done"));
    Request put =
        new Request.Builder()
            .url(server.url("/v1/forms/1"))
            .put(new okhttp3.FormBody.Builder().add("a", "1").build())
            .build();
    Request keyed =
        new Request.Builder()
            .url(server.url("/v1/forms"))
            .header("Idempotency-Key", "k-1")
            .post(new okhttp3.FormBody.Builder().add("a", "1").build())
            .build();
    Request unkeyed =
        new Request.Builder()
            .url(server.url("/v1/forms"))
            .post(new okhttp3.FormBody.Builder().add("a", "1").build())
            .build();
    Way plainWay = way == Way.ENQUEUE_REQUEUED ? Way.ENQUEUE : way; // OkHttp's own enqueue
    try {
      for (Request r : List.of(put, keyed, unkeyed)) {
        try (Response response = call(plain, plainWay, r)) {
          assertThat(response.request()).isSameAs(r);
        }
      }
    } finally {
      plain.dispatcher().executorService().shutdown();
    }
    assertThat(plainSeen).containsExactly("FormBody", "FormBody", "FormBody");

    for (Mode mode : new Mode[] {Mode.ENFORCE, Mode.OBSERVE}) {
      configure(
          mode,
          b -> b.maxAttempts(3).unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY),
          CircuitBreakerPolicy.defaults());
      List<String> seen = new CopyOnWriteArrayList<>();
      OkHttpClient.Builder b = client.newBuilder().addNetworkInterceptor(bodyClasses(seen));
      if (networkInterceptor) {
        b.addNetworkInterceptor(retrier.interceptor().networkInterceptor());
      }
      OkHttpClient ours = b.build();
      for (Request r : List.of(put, keyed, unkeyed)) {
        try (Response response = call(ours, way, r)) {
          assertThat(body(response)).isEqualTo("done");
          assertThat(response.request()).as(mode + " " + r.method()).isSameAs(r);
        }
      }
      ours.dispatcher().executorService().shutdown();
      // Without the network interceptor (nor the agent's hook), a FormBody stays watched in
      // enforce mode, a PUT's as a keyed POST's: its write is the only sign that a request of the
      // attempt reached a server, which a stricter rule reloaded meanwhile judges by.
      String watchedSeen = mode == Mode.ENFORCE && !networkInterceptor ? "Body" : "FormBody";
      assertThat(seen)
          .as(mode.toString())
          .containsExactly(watchedSeen, watchedSeen, mode == Mode.OBSERVE ? "FormBody" : "Body");
    }
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void countsOkHttpsOwnRepeatOfA503WithRetryAfterZeroAsAnAttempt(Way way) throws Exception {
    // OkHttp sends such a 503 once more by itself inside each of our attempts.
    configure(b -> b.maxAttempts(4));
    server.otherwise(status(503).header("Retry-After", "0"));

    Response r = call(way, get("/v1/items"));

    assertThat(r.code()).isEqualTo(503);
    r.close();
    assertThat(server.requestCount()).isEqualTo(4);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void theApplicationsOwnReadTimeoutBoundsEveryAttempt(Way way) throws Exception {
    // issue 11: from the second attempt on, the time left before the deadline (30 s) replaced
    // the application's read timeout.
    configure(b -> b);
    client = client.newBuilder().readTimeout(300, TimeUnit.MILLISECONDS).build();
    server.otherwise(ok("late").delay(3_000));
    long started = System.nanoTime();

    assertThatThrownBy(() -> call(way, get("/slow")))
        .isInstanceOf(java.net.SocketTimeoutException.class);

    assertThat(java.time.Duration.ofNanos(System.nanoTime() - started))
        .isLessThan(java.time.Duration.ofMillis(2_500));
    // The last attempt's request may reach the server after its timeout on a loaded machine.
    org.awaitility.Awaitility.await().until(() -> server.requestCount() >= 3);
    assertThat(server.awaitRequests(3)).isEqualTo(requests(3));
  }

  @Test
  void aPolicyBoundShorterThanTheApplicationsTimeoutsReplacesThem() {
    java.util.List<String> set = new java.util.ArrayList<>();
    Interceptor.Chain chain = timeoutChain(new int[] {10_000, 0, 200}, set);
    RetryInterceptor.withTimeout(chain, 500 * 1_000_000L);
    // connect 10 s -> 500 ms; read none -> 500 ms; write 200 ms stays.
    assertThat(set).containsExactly("connect 500", "read 500");
  }

  /** A chain that only knows its timeouts (in millis: connect, read, write) and records changes. */
  private static Interceptor.Chain timeoutChain(int[] millis, java.util.List<String> set) {
    return (Interceptor.Chain)
        java.lang.reflect.Proxy.newProxyInstance(
            Interceptor.Chain.class.getClassLoader(),
            new Class<?>[] {Interceptor.Chain.class},
            (proxy, method, args) -> {
              String[] kinds = {"connect", "read", "write"};
              for (int i = 0; i < kinds.length; i++) {
                String cap = Character.toUpperCase(kinds[i].charAt(0)) + kinds[i].substring(1);
                if (method.getName().equals(kinds[i] + "TimeoutMillis")) {
                  return millis[i];
                }
                if (method.getName().equals("with" + cap + "Timeout")) {
                  int[] changed = millis.clone();
                  changed[i] = (int) ((TimeUnit) args[1]).toMillis(((Number) args[0]).longValue());
                  set.add(kinds[i] + " " + changed[i]);
                  return timeoutChain(changed, set);
                }
              }
              throw new UnsupportedOperationException(method.getName());
            });
  }
}
