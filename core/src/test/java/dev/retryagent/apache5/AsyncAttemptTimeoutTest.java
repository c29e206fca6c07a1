package dev.retryagent.apache5;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import dev.retryagent.testing.UnansweredPort;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.apache.hc.client5.http.async.methods.SimpleHttpRequest;
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse;
import org.apache.hc.client5.http.async.methods.SimpleRequestBuilder;
import org.apache.hc.client5.http.async.methods.SimpleRequestProducer;
import org.apache.hc.client5.http.async.methods.SimpleResponseConsumer;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.ChainElement;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.HttpAsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManager;
import org.apache.hc.client5.http.protocol.HttpClientContext;
import org.apache.hc.core5.concurrent.FutureCallback;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.EntityDetails;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.HttpRequestInterceptor;
import org.apache.hc.core5.http.HttpResponse;
import org.apache.hc.core5.http.nio.AsyncResponseConsumer;
import org.apache.hc.core5.http.nio.CapacityChannel;
import org.apache.hc.core5.http.protocol.HttpContext;
import org.apache.hc.core5.io.CloseMode;
import org.apache.hc.core5.reactor.IOReactorConfig;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.Timeout;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code perAttemptTimeout} and the deadline on each attempt of an HttpClient 5.x async call: a
 * real client (5.1, and 5.6 by core's {@code apache56} run) on a loopback server that stalls, the
 * server counting requests, as {@link ClassicAttemptTimeoutTest} for the classic client. HttpClient
 * checks an async exchange's timeouts once per I/O select interval (1 s by default, 100 ms here); a
 * stall is far longer than either.
 */
class AsyncAttemptTimeoutTest {
  private static final long STALL_MILLIS = 5_000;
  private static final long LONG_SECONDS = 30;

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final List<RequestConfig> seen = new CopyOnWriteArrayList<>();
  private final List<Long> socketTimeouts = new CopyOnWriteArrayList<>();
  private final List<CloseableHttpAsyncClient> clients = new ArrayList<>();

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
  }

  /**
   * A client that checks timeouts every 100 ms and notes the config of each exchange as it leaves
   * for the connection (an exec interceptor just above HttpClient's connect element).
   */
  private HttpAsyncClientBuilder builder() {
    return builder(IOReactorConfig.custom());
  }

  private HttpAsyncClientBuilder builder(IOReactorConfig.Builder reactor) {
    return HttpAsyncClients.custom()
        .setIOReactorConfig(reactor.setSelectInterval(TimeValue.ofMilliseconds(100)).build())
        .addExecInterceptorBefore(
            ChainElement.CONNECT.name(),
            "seen",
            (request, entityProducer, scope, chain, callback) -> {
              seen.add(scope.clientContext.getRequestConfig());
              socketTimeouts.add(
                  AttemptTimeouts.managerSocketNanos(scope.execRuntime, scope.route));
              chain.proceed(request, entityProducer, scope, callback);
            });
  }

  private CloseableHttpAsyncClient started(HttpAsyncClientBuilder b) {
    CloseableHttpAsyncClient c = b.build();
    clients.add(c);
    c.start();
    return c;
  }

  private CloseableHttpAsyncClient ours(
      HttpAsyncClientBuilder b, UnaryOperator<RetryPolicy.Builder> retry) {
    RetryEngine engine =
        TestEngines.engine(time, Mode.ENFORCE, retry, CircuitBreakerPolicy.defaults(), events);
    return started(AsyncRetryExecHandler.addTo(b, engine));
  }

  /** What the application's callback heard, on which thread, and its context's config then. */
  private static final class Heard implements FutureCallback<SimpleHttpResponse> {
    final CompletableFuture<String> outcome = new CompletableFuture<>();
    final HttpClientContext context;
    volatile String thread;
    volatile RequestConfig config;

    Heard(HttpClientContext context) {
      this.context = context;
    }

    private void heard(String what) {
      thread = Thread.currentThread().getName();
      config = context == null ? null : context.getRequestConfig();
      outcome.complete(what);
    }

    @Override
    public void completed(SimpleHttpResponse r) {
      heard(r.getCode() + " " + r.getBodyText());
    }

    @Override
    public void failed(Exception e) {
      heard("failed " + e.getClass().getName() + ": " + e.getMessage());
    }

    @Override
    public void cancelled() {
      heard("cancelled");
    }

    String await() throws Exception {
      return outcome.get(LONG_SECONDS, TimeUnit.SECONDS);
    }
  }

  private static Heard call(
      CloseableHttpAsyncClient c, SimpleHttpRequest request, HttpClientContext context) {
    Heard heard = new Heard(context);
    c.execute(request, context, heard);
    return heard;
  }

  private static long millis(Timeout t) {
    return t == null ? -1 : t.toMilliseconds();
  }

  /** The response timeout of {@code c}, -1 for none (5.4+ has no config without a default). */
  private static long responseMillis(RequestConfig c) {
    return c == null ? -1 : millis(c.getResponseTimeout());
  }

  @Test
  void aStalledFirstAttemptIsCutAtPerAttemptTimeoutAndRetriedOnTheClientsThread() throws Exception {
    RequestConfig own = RequestConfig.custom().setResponseTimeout(Timeout.ofSeconds(30)).build();
    CloseableHttpAsyncClient c = ours(builder(), r -> r.perAttemptTimeout(Duration.ofMillis(300)));
    server.enqueue(ok("late").delay(STALL_MILLIS), ok("fine"));
    SimpleHttpRequest get = SimpleRequestBuilder.get(server.url("/stall")).build();
    get.setConfig(own);
    HttpClientContext context = HttpClientContext.create();

    Heard heard = call(c, get, context);

    assertThat(heard.await()).isEqualTo("200 fine");
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
    assertThat(seen).hasSize(2);
    for (RequestConfig attempt : seen) {
      assertThat(millis(attempt.getResponseTimeout())).isEqualTo(300);
      assertThat(millis(attempt.getConnectTimeout())).isEqualTo(300);
      assertThat(millis(attempt.getConnectionRequestTimeout())).isEqualTo(300);
    }
    // The application's, as it set them, when its callback heard and after.
    assertThat(heard.config).isSameAs(own);
    assertThat(context.getRequestConfig()).isSameAs(own);
    assertThat(get.getConfig()).isSameAs(own);
    // Where HttpClient completes its calls without us: its I/O dispatcher.
    assertThat(heard.thread).startsWith("httpclient-dispatch");
  }

  @Test
  void anApplicationTimeoutShorterThanTheBoundFiresAsWithoutTheHandler() throws Exception {
    RequestConfig own =
        RequestConfig.custom().setResponseTimeout(Timeout.ofMilliseconds(300)).build();
    CloseableHttpAsyncClient plain = started(builder().setDefaultRequestConfig(own));
    CloseableHttpAsyncClient c =
        ours(
            builder().setDefaultRequestConfig(own),
            r -> r.perAttemptTimeout(Duration.ofSeconds(20)).maxAttempts(1));
    server.enqueue(ok("late").delay(STALL_MILLIS), ok("late").delay(STALL_MILLIS));

    Heard without = call(plain, SimpleRequestBuilder.get(server.url("/a")).build(), null);
    String w = without.await();
    seen.clear();
    Heard with = call(c, SimpleRequestBuilder.get(server.url("/a")).build(), null);

    assertThat(w).startsWith("failed java.net.SocketTimeoutException");
    assertThat(with.await()).isEqualTo(w);
    assertThat(with.thread).startsWith("httpclient-dispatch");
    assertThat(millis(seen.get(0).getResponseTimeout())).isEqualTo(300);
    assertThat(millis(seen.get(0).getConnectTimeout())).isEqualTo(20_000);
  }

  @Test
  void aSocketTimeoutOfTheIoReactorShorterThanTheBoundIsKept() throws Exception {
    // No response timeout in the request's config: the connection keeps the socket timeout the
    // I/O reactor gave it, which the handler reads and, shorter, leaves to fire as without it.
    IOReactorConfig.Builder reactor =
        IOReactorConfig.custom().setSoTimeout(Timeout.ofMilliseconds(300));
    CloseableHttpAsyncClient plain = started(builder(reactor));
    CloseableHttpAsyncClient c =
        ours(builder(reactor), r -> r.perAttemptTimeout(Duration.ofSeconds(20)).maxAttempts(1));
    server.enqueue(ok("late").delay(STALL_MILLIS), ok("late").delay(STALL_MILLIS));

    String without = call(plain, SimpleRequestBuilder.get(server.url("/a")).build(), null).await();
    seen.clear();
    socketTimeouts.clear();
    Heard with = call(c, SimpleRequestBuilder.get(server.url("/a")).build(), null);

    assertThat(without).startsWith("failed java.net.SocketTimeoutException");
    assertThat(with.await()).isEqualTo(without);
    assertThat(socketTimeouts.get(0)).as("read").isEqualTo(300_000_000L);
    assertThat(seen.get(0).getResponseTimeout()).as("left to the reactor's").isNull();
    assertThat(millis(seen.get(0).getConnectTimeout()))
        .as("the longer one bounded")
        .isEqualTo(20_000);
  }

  @Test
  void aStalledPostWithoutKeyIsSentOnce() throws Exception {
    CloseableHttpAsyncClient c = ours(builder(), r -> r.perAttemptTimeout(Duration.ofMillis(300)));
    server.enqueue(ok("late").delay(STALL_MILLIS), ok("again"));
    SimpleHttpRequest post =
        SimpleRequestBuilder.post(server.url("/pay"))
            .setBody("{}", ContentType.APPLICATION_JSON)
            .build();

    Heard heard = call(c, post, null);

    assertThat(heard.await()).startsWith("failed java.net.SocketTimeoutException");
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    assertThat(heard.thread).startsWith("httpclient-dispatch");
  }

  /**
   * A client whose deadline leaves a retry 300 ms: the server's first answer is a 503 that asks for
   * a wait of 1 s (the fake clock's), its second {@code retry}.
   */
  private CloseableHttpAsyncClient retryLeft300Millis(ScriptedHttpServer.Action retry) {
    server.enqueue(status(503).header("Retry-After", "1"), retry);
    return ours(
        builder(),
        r ->
            r.deadline(Duration.ofMillis(1_300))
                .retryAfterMax(Duration.ofSeconds(1))
                .maxAttempts(2));
  }

  @Test
  void theDeadlineShortensARetrysTimeout() throws Exception {
    CloseableHttpAsyncClient c = retryLeft300Millis(ok("late").delay(STALL_MILLIS));

    HttpClientContext context = HttpClientContext.create();
    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/d")).build(), context);

    assertThat(heard.await()).startsWith("failed java.net.SocketTimeoutException");
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
    // No config of the application's (5.4+ without a client default): none put back.
    assertThat(heard.config).isSameAs(seen.get(0));
    assertThat(context.getRequestConfig()).isSameAs(seen.get(0));
    assertThat(seen).hasSize(2);
    assertThat(responseMillis(seen.get(0))).as("the first: its own").isEqualTo(-1);
    assertThat(millis(seen.get(1).getResponseTimeout())).isEqualTo(300);
  }

  @Test
  void withoutABoundTheAttemptRunsUnderTheApplicationsOwnConfig() throws Exception {
    RequestConfig own = RequestConfig.custom().setResponseTimeout(Timeout.ofSeconds(5)).build();
    CloseableHttpAsyncClient c = ours(builder().setDefaultRequestConfig(own), r -> r);
    server.enqueue(status(503), ok("fine"));
    HttpClientContext context = HttpClientContext.create();

    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/n")).build(), context);

    assertThat(heard.await()).isEqualTo("200 fine");
    assertThat(seen).hasSize(2);
    assertThat(seen.get(0)).as("the first attempt: no bound").isSameAs(own);
    // The retry is bounded by the deadline (30 s by default): only its longer timeouts shortened.
    assertThat(millis(seen.get(1).getResponseTimeout())).isEqualTo(5_000);
    assertThat(millis(seen.get(1).getConnectionRequestTimeout())).isBetween(29_000L, 30_000L);
    assertThat(heard.config).isSameAs(own);
    assertThat(context.getRequestConfig()).isSameAs(own);
  }

  @Test
  void aConnectTimeoutOfZeroIsBoundedAndTheConnectEndsAsHttpClientEndsItsOwnAndIsRetried()
      throws Exception {
    // A host that never answers (UnansweredPort). The application's connect timeout of 0 is no
    // limit: each attempt's connect ends at the bound with HttpClient's own
    // ConnectTimeoutException, as an application that set 300 ms itself gets, and the GET is
    // retried.
    try (UnansweredPort port = new UnansweredPort()) {
      String url = port.url("/items");
      SimpleHttpRequest plainGet = SimpleRequestBuilder.get(url).build();
      plainGet.setConfig(
          RequestConfig.custom().setConnectTimeout(Timeout.ofMilliseconds(300)).build());
      String plain = call(started(builder()), plainGet, null).await();
      seen.clear();
      CloseableHttpAsyncClient c =
          ours(builder(), r -> r.maxAttempts(2).perAttemptTimeout(Duration.ofMillis(300)));
      SimpleHttpRequest get = SimpleRequestBuilder.get(url).build();
      RequestConfig none =
          RequestConfig.custom().setConnectTimeout(Timeout.ZERO_MILLISECONDS).build();
      get.setConfig(none);
      HttpClientContext context = HttpClientContext.create();

      Heard heard = call(c, get, context);

      assertThat(plain).startsWith("failed org.apache.hc.client5.http.ConnectTimeoutException");
      assertThat(heard.await()).isEqualTo(plain);
      assertThat(heard.thread).startsWith("httpclient-dispatch");
      assertThat(seen).hasSize(2);
      for (RequestConfig attempt : seen) {
        assertThat(millis(attempt.getConnectTimeout())).isEqualTo(300);
      }
      assertThat(context.getRequestConfig()).isSameAs(none);
    }
    assertThat(events)
        .extracting(RetryEvent::type)
        .containsExactly(RetryEvent.Type.RETRY, RetryEvent.Type.GIVE_UP);
  }

  @Test
  void aFirstAttemptKeepsAConnectTimeoutOfZeroAndARetryGetsWhatIsLeftOfTheDeadline()
      throws Exception {
    // No perAttemptTimeout: the first attempt is the application's own, unbounded; the deadline
    // leaves the retry 300 ms, its connect included.
    CloseableHttpAsyncClient c = retryLeft300Millis(ok("fine"));
    SimpleHttpRequest get = SimpleRequestBuilder.get(server.url("/z")).build();
    RequestConfig none =
        RequestConfig.custom().setConnectTimeout(Timeout.ZERO_MILLISECONDS).build();
    get.setConfig(none);

    assertThat(call(c, get, null).await()).isEqualTo("200 fine");

    assertThat(seen).hasSize(2);
    assertThat(seen.get(0)).as("the first attempt: the application's").isSameAs(none);
    assertThat(millis(seen.get(1).getConnectTimeout())).isEqualTo(300);
  }

  /**
   * The application's response consumer, which reads its context's config at an interim response
   * (103 Early Hints) and at the final response's head, and sets a config of its own at each: a
   * copy with a response timeout of its own at the first, {@link #MINE} at the second.
   */
  private static final class Reading implements AsyncResponseConsumer<SimpleHttpResponse> {
    static final RequestConfig MINE =
        RequestConfig.custom().setResponseTimeout(Timeout.ofSeconds(7)).build();
    private final AsyncResponseConsumer<SimpleHttpResponse> body = SimpleResponseConsumer.create();
    volatile String atInterim;
    volatile String atHead;

    @Override
    public void informationResponse(HttpResponse response, HttpContext context)
        throws HttpException, IOException {
      HttpClientContext c = HttpClientContext.adapt(context);
      atInterim = ClassicAttemptTimeoutTest.timeouts(c.getRequestConfig());
      ClassicAttemptTimeoutTest.derive(null, null, c);
      body.informationResponse(response, context);
    }

    @Override
    public void consumeResponse(
        HttpResponse response,
        EntityDetails details,
        HttpContext context,
        FutureCallback<SimpleHttpResponse> callback)
        throws HttpException, IOException {
      HttpClientContext c = HttpClientContext.adapt(context);
      atHead = ClassicAttemptTimeoutTest.timeouts(c.getRequestConfig());
      c.setRequestConfig(MINE);
      body.consumeResponse(response, details, context, callback);
    }

    @Override
    public void updateCapacity(CapacityChannel channel) throws IOException {
      body.updateCapacity(channel);
    }

    @Override
    public void consume(ByteBuffer src) throws IOException {
      body.consume(src);
    }

    @Override
    public void streamEnd(List<? extends Header> trailers) throws HttpException, IOException {
      body.streamEnd(trailers);
    }

    @Override
    public void failed(Exception cause) {
      body.failed(cause);
    }

    @Override
    public void releaseResources() {
      body.releaseResources();
    }
  }

  /**
   * The application's consumer reads its own config at the head, where the call is over, as without
   * the agent, and what it sets stays; inside the attempt (an interim response) it reads the
   * attempt's copy, and a config it derives from that copy reaches the head with the application's
   * timeouts back in it.
   */
  @Test
  void aResponseConsumerReadsTheApplicationsConfigAtTheHeadAndTheAttemptsOnlyAtAnInterimResponse()
      throws Exception {
    RequestConfig own = ClassicAttemptTimeoutTest.LONG;
    CloseableHttpAsyncClient plain = started(builder().setDefaultRequestConfig(own));
    CloseableHttpAsyncClient c =
        ours(
            builder().setDefaultRequestConfig(own),
            r -> r.perAttemptTimeout(Duration.ofSeconds(2)));
    server.enqueue(ok("a").afterInterim(103), ok("b").afterInterim(103));
    List<Reading> readers = new ArrayList<>();
    List<HttpClientContext> contexts = new ArrayList<>();
    for (CloseableHttpAsyncClient client : List.of(plain, c)) {
      Reading reading = new Reading();
      HttpClientContext context = HttpClientContext.create();
      Heard heard = new Heard(context);
      client.execute(
          SimpleRequestProducer.create(SimpleRequestBuilder.get(server.url("/r")).build()),
          reading,
          context,
          heard);
      assertThat(heard.await()).startsWith("200 ");
      readers.add(reading);
      contexts.add(context);
    }
    Reading without = readers.get(0);
    Reading with = readers.get(1);

    assertThat(without.atInterim).isEqualTo("connect 60000 pool 60000 response 30000");
    assertThat(with.atInterim)
        .as("the attempt's")
        .isEqualTo("connect 2000 pool 2000 response 2000");
    assertThat(with.atHead)
        .isEqualTo(without.atHead)
        .isEqualTo("connect 60000 pool 60000 response 20000");
    assertThat(contexts.get(1).getRequestConfig())
        .isSameAs(contexts.get(0).getRequestConfig())
        .isSameAs(Reading.MINE);
  }

  /**
   * An application interceptor that sets a copy of the context's config with one value of its own
   * leaves that copy in its context without the agent; with the agent the copy it read was the
   * attempt's: its context must hold what it holds without the agent, neither the attempt's bound
   * nor the application's config from before (its write lost), when its callback hears and after.
   */
  @Test
  void anInterceptorThatSetsACopyOfTheContextsConfigLeavesItsContextAsWithoutTheAgent()
      throws Exception {
    RequestConfig own = ClassicAttemptTimeoutTest.LONG;
    HttpRequestInterceptor derive = ClassicAttemptTimeoutTest::derive;
    CloseableHttpAsyncClient plain =
        started(
            HttpAsyncClients.custom()
                .setDefaultRequestConfig(own)
                .addRequestInterceptorFirst(derive));
    CloseableHttpAsyncClient c =
        ours(
            builder().setDefaultRequestConfig(own).addRequestInterceptorFirst(derive),
            r -> r.perAttemptTimeout(Duration.ofMillis(300)));
    server.enqueue(ok("a"), ok("b"));
    HttpClientContext without = HttpClientContext.create();
    HttpClientContext with = HttpClientContext.create();

    Heard plainHeard = call(plain, SimpleRequestBuilder.get(server.url("/a")).build(), without);
    assertThat(plainHeard.await()).isEqualTo("200 a");
    Heard heard = call(c, SimpleRequestBuilder.get(server.url("/b")).build(), with);
    assertThat(heard.await()).isEqualTo("200 b");

    assertThat(seen).hasSize(1);
    assertThat(millis(seen.get(0).getConnectTimeout())).as("the attempt's").isEqualTo(300);
    assertThat(ClassicAttemptTimeoutTest.timeouts(heard.config))
        .isEqualTo(ClassicAttemptTimeoutTest.timeouts(plainHeard.config))
        .isEqualTo("connect 60000 pool 60000 response 20000");
    assertThat(ClassicAttemptTimeoutTest.timeouts(with.getRequestConfig()))
        .isEqualTo(ClassicAttemptTimeoutTest.timeouts(without.getRequestConfig()));
  }

  /**
   * A bounded call's connection, back in the pool, serves the next lease (a client without the
   * handler on the same pool, its config leaving the response timeout unset) with the socket
   * timeout HttpClient gives it, not the bound: its slow answer still comes.
   */
  @Test
  void thePooledConnectionGetsItsOwnSocketTimeoutBackAtItsNextLease() throws Exception {
    PoolingAsyncClientConnectionManager pool = new PoolingAsyncClientConnectionManager();
    CloseableHttpAsyncClient c =
        ours(
            builder().setConnectionManager(pool).setConnectionManagerShared(true),
            r -> r.perAttemptTimeout(Duration.ofMillis(300)));
    CloseableHttpAsyncClient plain =
        started(builder().setConnectionManager(pool).setConnectionManagerShared(true));
    server.enqueue(ok("fine"), ok("slow").delay(1_000));

    assertThat(call(c, SimpleRequestBuilder.get(server.url("/1")).build(), null).await())
        .isEqualTo("200 fine");
    assertThat(millis(seen.get(0).getResponseTimeout())).as("bounded").isEqualTo(300);
    // The callback may hear before the I/O thread puts the connection back (5.6): wait for it.
    await()
        .atMost(Duration.ofSeconds(LONG_SECONDS))
        .until(() -> pool.getTotalStats().getAvailable() == 1);
    assertThat(call(plain, SimpleRequestBuilder.get(server.url("/2")).build(), null).await())
        .isEqualTo("200 slow");

    assertThat(server.connectionCount()).as("the same connection").isEqualTo(1);
    assertThat(responseMillis(seen.get(1))).as("the plain call's: unset").isEqualTo(-1);
  }
}
