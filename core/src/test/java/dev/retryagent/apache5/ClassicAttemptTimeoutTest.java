package dev.retryagent.apache5;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.classic.methods.HttpPost;
import org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.ChainElement;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.CloseableHttpResponse;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.BasicHttpClientConnectionManager;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager;
import org.apache.hc.client5.http.io.HttpClientConnectionManager;
import org.apache.hc.client5.http.protocol.HttpClientContext;
import org.apache.hc.core5.http.ConnectionRequestTimeoutException;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.EntityDetails;
import org.apache.hc.core5.http.HttpRequest;
import org.apache.hc.core5.http.HttpRequestInterceptor;
import org.apache.hc.core5.http.io.SocketConfig;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.hc.core5.http.protocol.HttpContext;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.Timeout;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code perAttemptTimeout} and the deadline on each attempt of an HttpClient 5.x classic call: a
 * real client (5.1, and 5.6 by core's {@code apache56} run) on a loopback server that stalls, the
 * server counting requests. The config of each exchange is what the chain below ours saw in the
 * context; the application's is read after the call. A stall is the server's own delay, far longer
 * than the bound: the test waits for the client's timeout, not for it.
 */
class ClassicAttemptTimeoutTest {
  /** Far longer than any bound here: a call that waits for it was not bounded. */
  private static final long STALL_MILLIS = 4_000;

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final List<RequestConfig> seen = new CopyOnWriteArrayList<>();
  private final List<Long> managersSocketTimeout = new CopyOnWriteArrayList<>();
  private CloseableHttpClient client;
  private CloseableHttpClient plain;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    if (client != null) {
      client.close();
    }
    if (plain != null) {
      plain.close();
    }
    server.close();
  }

  /**
   * The builder of a client that notes the config of each exchange as it leaves for the connection
   * (an exec interceptor just above HttpClient's connect element: its request interceptors run
   * after the lease from 5.4 on).
   */
  private HttpClientBuilder builder() {
    return HttpClients.custom()
        .addExecInterceptorBefore(
            ChainElement.CONNECT.name(),
            "seen",
            (request, scope, chain) -> {
              seen.add(scope.clientContext.getRequestConfig());
              managersSocketTimeout.add(
                  AttemptTimeouts.managerSocketNanos(scope.execRuntime, scope.route));
              return chain.proceed(request, scope);
            });
  }

  private CloseableHttpClient ours(HttpClientBuilder b, UnaryOperator<RetryPolicy.Builder> retry) {
    RetryEngine engine =
        TestEngines.engine(time, Mode.ENFORCE, retry, CircuitBreakerPolicy.defaults(), events);
    return RetryExecHandler.addTo(b, engine).build();
  }

  private static String call(
      CloseableHttpClient c, HttpUriRequestBase request, HttpClientContext context)
      throws IOException {
    return c.execute(
        request, context, r -> r.getCode() + " " + EntityUtils.toString(r.getEntity()));
  }

  private static long millis(Timeout t) {
    return t == null ? -1 : t.toMilliseconds();
  }

  @Test
  void aStalledFirstAttemptIsCutAtPerAttemptTimeoutAndRetriedTheApplicationsConfigUntouched()
      throws IOException {
    RequestConfig own = RequestConfig.custom().setResponseTimeout(Timeout.ofSeconds(30)).build();
    client = ours(builder(), r -> r.perAttemptTimeout(Duration.ofMillis(300)));
    server.enqueue(ok("late").delay(STALL_MILLIS), ok("fine"));
    HttpGet get = new HttpGet(server.url("/stall"));
    get.setConfig(own);
    HttpClientContext context = HttpClientContext.create();

    assertThat(call(client, get, context)).isEqualTo("200 fine");

    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
    assertThat(seen).hasSize(2);
    for (RequestConfig attempt : seen) {
      assertThat(millis(attempt.getResponseTimeout())).isEqualTo(300);
      assertThat(millis(attempt.getConnectTimeout())).isEqualTo(300);
      assertThat(millis(attempt.getConnectionRequestTimeout())).isEqualTo(300);
    }
    // The application's, as it set them: its request's config, and the context's after the call.
    assertThat(get.getConfig()).isSameAs(own);
    assertThat(millis(own.getResponseTimeout())).isEqualTo(30_000);
    assertThat(context.getRequestConfig()).isSameAs(own);
  }

  @Test
  void aBoundIsRoundedUpToWholeMillisecondsNeverNone() {
    assertThat(millis(AttemptTimeouts.roundedUp(0))).isEqualTo(1);
    assertThat(millis(AttemptTimeouts.roundedUp(1))).isEqualTo(1);
    assertThat(millis(AttemptTimeouts.roundedUp(1_000_000))).isEqualTo(1);
    assertThat(millis(AttemptTimeouts.roundedUp(1_000_001))).isEqualTo(2);
  }

  @Test
  void anApplicationTimeoutShorterThanTheBoundFiresAsWithoutTheAgent() throws IOException {
    RequestConfig own =
        RequestConfig.custom().setResponseTimeout(Timeout.ofMilliseconds(200)).build();
    plain = HttpClients.custom().setDefaultRequestConfig(own).build();

    timesOutAsWithout(builder().setDefaultRequestConfig(own));

    assertThat(seen).hasSize(1);
    assertThat(millis(seen.get(0).getResponseTimeout())).isEqualTo(200);
    assertThat(millis(seen.get(0).getConnectTimeout())).isEqualTo(20_000);
  }

  @ParameterizedTest
  @ValueSource(strings = {"SocketConfig", "ConnectionConfig"})
  void aSocketTimeoutOfTheConnectionManagerShorterThanTheBoundIsKept(String config)
      throws Exception {
    // No response timeout in the request's config: the connection keeps the socket timeout its
    // manager gave it (its SocketConfig's, or from 5.2 on its ConnectionConfig's), which the agent
    // reads and, shorter, leaves to fire as without it.
    plain =
        HttpClients.custom().setConnectionManager(managerWithSocketTimeout(config, 200)).build();

    timesOutAsWithout(builder().setConnectionManager(managerWithSocketTimeout(config, 200)));

    assertThat(seen.get(0).getResponseTimeout()).as("left to the manager's").isNull();
    assertThat(managersSocketTimeout.get(0)).as("read").isEqualTo(200_000_000L);
    assertThat(millis(seen.get(0).getConnectTimeout()))
        .as("the longer one bounded")
        .isEqualTo(20_000);
  }

  /**
   * A GET stalled far longer than any timeout here, through {@code plain} (the caller's) and
   * through ours on {@code b} under a 20 s bound and one attempt: both end with the same {@code
   * SocketTimeoutException}, type and message.
   */
  private void timesOutAsWithout(HttpClientBuilder b) {
    client = ours(b, r -> r.perAttemptTimeout(Duration.ofSeconds(20)).maxAttempts(1));
    server.enqueue(ok("late").delay(STALL_MILLIS), ok("late").delay(STALL_MILLIS));

    Throwable without = catchThrowable(() -> call(plain, new HttpGet(server.url("/a")), null));
    Throwable with = catchThrowable(() -> call(client, new HttpGet(server.url("/a")), null));

    assertThat(without).isInstanceOf(SocketTimeoutException.class);
    assertThat(with).isExactlyInstanceOf(without.getClass()).hasMessage(without.getMessage());
  }

  /** A pool whose connections get a socket timeout of {@code millis} from its {@code config}. */
  private static PoolingHttpClientConnectionManager managerWithSocketTimeout(
      String config, long millis) throws ReflectiveOperationException {
    PoolingHttpClientConnectionManager pool = new PoolingHttpClientConnectionManager();
    Timeout t = Timeout.ofMilliseconds(millis);
    if (config.equals("SocketConfig")) {
      pool.setDefaultSocketConfig(SocketConfig.custom().setSoTimeout(t).build());
      return pool;
    }
    // ConnectionConfig came in 5.2; core compiles against 5.1.
    Class<?> type;
    try {
      type = Class.forName("org.apache.hc.client5.http.config.ConnectionConfig");
    } catch (ClassNotFoundException e) {
      Assumptions.abort("no ConnectionConfig before HttpClient 5.2");
      throw new AssertionError(e);
    }
    Object b = type.getMethod("custom").invoke(null);
    b.getClass().getMethod("setSocketTimeout", Timeout.class).invoke(b, t);
    Object built = b.getClass().getMethod("build").invoke(b);
    pool.getClass().getMethod("setDefaultConnectionConfig", type).invoke(pool, built);
    return pool;
  }

  @Test
  void aLeaseFromAPoolHeldElsewhereEndsAtTheBoundAsHttpClientsOwnPoolTimeout() throws IOException {
    // The pool's one connection is held by a call of the application's (a client without the
    // agent on the same pool); the application's lease timeout is 10 s.
    PoolingHttpClientConnectionManager pool = new PoolingHttpClientConnectionManager();
    pool.setMaxTotal(1);
    pool.setDefaultMaxPerRoute(1);
    plain =
        HttpClients.custom().setConnectionManager(pool).setConnectionManagerShared(true).build();
    RequestConfig own =
        RequestConfig.custom().setConnectionRequestTimeout(Timeout.ofSeconds(10)).build();
    client =
        ours(
            builder().setConnectionManager(pool).setDefaultRequestConfig(own),
            r -> r.perAttemptTimeout(Duration.ofMillis(300)));
    server.enqueue(ok("held"), ok("never"));
    try (CloseableHttpResponse held = plain.execute(new HttpGet(server.url("/held")))) {
      Throwable failure = catchThrowable(() -> call(client, new HttpGet(server.url("/l")), null));

      assertThat(failure).isInstanceOf(ConnectionRequestTimeoutException.class);
      assertThat(millis(seen.get(0).getConnectionRequestTimeout())).isEqualTo(300);
      assertThat(held.getCode()).isEqualTo(200);
    }
    assertThat(server.awaitRequests(1)).as("the held call's only").isEqualTo(requests(1));
  }

  /**
   * A connection-request timeout of 0 is, to the classic client, no wait at all (its lease's {@code
   * Future.get(0)}: a lease not granted at once fails), not "none": the shortest there is. It is
   * kept, and the call fails at once as without the agent, not after the bound with another
   * message. (To the async client's pool 0 is no limit; that one is bounded.)
   */
  @Test
  void aZeroLeaseTimeoutOfTheApplicationsFailsAtOnceAsWithoutTheAgent() throws IOException {
    PoolingHttpClientConnectionManager pool = new PoolingHttpClientConnectionManager();
    pool.setMaxTotal(1);
    pool.setDefaultMaxPerRoute(1);
    RequestConfig own =
        RequestConfig.custom().setConnectionRequestTimeout(Timeout.ZERO_MILLISECONDS).build();
    plain =
        HttpClients.custom()
            .setConnectionManager(pool)
            .setConnectionManagerShared(true)
            .setDefaultRequestConfig(own)
            .build();
    client =
        ours(
            builder().setConnectionManager(pool).setDefaultRequestConfig(own),
            r -> r.perAttemptTimeout(Duration.ofMillis(300)));
    server.enqueue(ok("held"), ok("never"));
    try (CloseableHttpResponse held = plain.execute(new HttpGet(server.url("/held")))) {
      Throwable without = catchThrowable(() -> call(plain, new HttpGet(server.url("/l")), null));
      Throwable with = catchThrowable(() -> call(client, new HttpGet(server.url("/l")), null));

      assertThat(without).isInstanceOf(ConnectionRequestTimeoutException.class);
      assertThat(with).isExactlyInstanceOf(without.getClass()).hasMessage(without.getMessage());
      assertThat(millis(seen.get(0).getConnectionRequestTimeout())).as("kept").isEqualTo(0);
      assertThat(millis(seen.get(0).getResponseTimeout())).as("bounded").isEqualTo(300);
      assertThat(held.getCode()).isEqualTo(200);
    }
    assertThat(server.awaitRequests(1)).as("the held call's only").isEqualTo(requests(1));
  }

  @Test
  void aStalledPostWithoutKeyIsSentOnce() {
    client = ours(builder(), r -> r.perAttemptTimeout(Duration.ofMillis(300)));
    server.enqueue(ok("late").delay(STALL_MILLIS), ok("again"));
    HttpPost post = new HttpPost(server.url("/pay"));
    post.setEntity(new StringEntity("{}", ContentType.APPLICATION_JSON));

    Throwable failure = catchThrowable(() -> call(client, post, null));

    assertThat(failure).isInstanceOf(SocketTimeoutException.class);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  @Test
  void theDeadlineShortensARetrysTimeout() {
    // The 503 asks for a wait of 1 s (the fake clock's); the deadline leaves the retry 300 ms.
    client =
        ours(
            builder(),
            r ->
                r.deadline(Duration.ofMillis(1_300))
                    .retryAfterMax(Duration.ofSeconds(1))
                    .maxAttempts(2));
    server.enqueue(status(503).header("Retry-After", "1"), ok("late").delay(STALL_MILLIS));

    Throwable failure = catchThrowable(() -> call(client, new HttpGet(server.url("/d")), null));

    assertThat(failure).isInstanceOf(SocketTimeoutException.class);
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
    assertThat(seen).hasSize(2);
    assertThat(millis(seen.get(0).getResponseTimeout())).as("the first: its own").isEqualTo(-1);
    assertThat(millis(seen.get(1).getResponseTimeout())).isEqualTo(300);
  }

  @Test
  void httpClientsOwnResendInsideTheAttemptKeepsTheBound() {
    // The policy leaves the 503 to HttpClient's own strategy, which resends it at once, inside the
    // attempt: the resend stalls, and the attempt's bound cuts it.
    client =
        ours(
            builder()
                .setRetryStrategy(
                    new DefaultHttpRequestRetryStrategy(1, TimeValue.ZERO_MILLISECONDS)),
            r ->
                r.perAttemptTimeout(Duration.ofMillis(300))
                    .retryOnStatuses(StatusSet.of("500"))
                    .maxAttempts(1));
    server.enqueue(status(503), ok("late").delay(STALL_MILLIS));

    Throwable failure = catchThrowable(() -> call(client, new HttpGet(server.url("/r")), null));

    assertThat(failure).isInstanceOf(SocketTimeoutException.class);
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
    assertThat(seen).hasSize(2);
    assertThat(millis(seen.get(1).getResponseTimeout())).isEqualTo(300);
  }

  @Test
  void withoutABoundTheAttemptRunsUnderTheApplicationsOwnConfig() throws IOException {
    RequestConfig own = RequestConfig.custom().setResponseTimeout(Timeout.ofSeconds(5)).build();
    client = ours(builder().setDefaultRequestConfig(own), r -> r);
    server.enqueue(status(503), ok("fine"));

    assertThat(call(client, new HttpGet(server.url("/n")), null)).isEqualTo("200 fine");

    assertThat(seen).hasSize(2);
    assertThat(seen.get(0)).as("the first attempt: no bound").isSameAs(own);
    // The retry is bounded by the deadline (30 s by default): only its longer timeouts shortened.
    assertThat(millis(seen.get(1).getResponseTimeout())).isEqualTo(5_000);
    assertThat(millis(seen.get(1).getConnectionRequestTimeout())).isBetween(29_000L, 30_000L);
  }

  /**
   * An application interceptor that sets a copy of the context's config with one value of its own
   * (here the response timeout) leaves that copy in its context without the agent, and the next
   * call in the context runs under it. With the agent the copy it read was the attempt's: its
   * context must hold what it holds without the agent, neither the attempt's bound (the copy's
   * connect and pool timeouts) nor the application's config from before (its write lost).
   */
  @Test
  void anInterceptorThatSetsACopyOfTheContextsConfigLeavesItsContextAsWithoutTheAgent()
      throws IOException {
    RequestConfig own = LONG;
    HttpRequestInterceptor derive = ClassicAttemptTimeoutTest::derive;
    plain =
        HttpClients.custom()
            .setDefaultRequestConfig(own)
            .addRequestInterceptorFirst(derive)
            .build();
    client =
        ours(
            builder().setDefaultRequestConfig(own).addRequestInterceptorFirst(derive),
            r -> r.perAttemptTimeout(Duration.ofMillis(300)));
    server.enqueue(ok("a"), ok("b"));
    HttpClientContext without = HttpClientContext.create();
    HttpClientContext with = HttpClientContext.create();

    assertThat(call(plain, new HttpGet(server.url("/a")), without)).isEqualTo("200 a");
    assertThat(call(client, new HttpGet(server.url("/b")), with)).isEqualTo("200 b");

    assertThat(seen).hasSize(1);
    assertThat(millis(seen.get(0).getConnectTimeout())).as("the attempt's").isEqualTo(300);
    assertThat(timeouts(with.getRequestConfig()))
        .isEqualTo(timeouts(without.getRequestConfig()))
        .isEqualTo("connect 60000 pool 60000 response 20000");
  }

  /**
   * An interceptor that sets back the very config it read leaves the application's own object in
   * its context, as without the agent.
   */
  @Test
  void anInterceptorThatSetsBackTheConfigItReadLeavesTheApplicationsOwnObject() throws IOException {
    RequestConfig own = RequestConfig.custom().setResponseTimeout(Timeout.ofSeconds(30)).build();
    HttpRequestInterceptor again =
        (request, entity, ctx) -> {
          HttpClientContext c = HttpClientContext.adapt(ctx);
          c.setRequestConfig(c.getRequestConfig());
        };
    client =
        ours(
            builder().setDefaultRequestConfig(own).addRequestInterceptorFirst(again),
            r -> r.perAttemptTimeout(Duration.ofMillis(300)));
    server.enqueue(ok("a"));
    HttpClientContext context = HttpClientContext.create();

    assertThat(call(client, new HttpGet(server.url("/a")), context)).isEqualTo("200 a");

    assertThat(millis(seen.get(0).getResponseTimeout())).isEqualTo(300);
    assertThat(context.getRequestConfig()).isSameAs(own);
  }

  /**
   * The application's config of the interceptor tests: 60 s to connect and lease, 30 s response.
   */
  static final RequestConfig LONG =
      RequestConfig.custom()
          .setConnectTimeout(Timeout.ofSeconds(60))
          .setConnectionRequestTimeout(Timeout.ofSeconds(60))
          .setResponseTimeout(Timeout.ofSeconds(30))
          .build();

  /**
   * An application's request interceptor (classic and async): sets a copy of the context's config
   * with a response timeout of its own, 20 s.
   */
  static void derive(HttpRequest request, EntityDetails entity, HttpContext ctx) {
    HttpClientContext c = HttpClientContext.adapt(ctx);
    c.setRequestConfig(
        RequestConfig.copy(c.getRequestConfig()).setResponseTimeout(Timeout.ofSeconds(20)).build());
  }

  /** The three timeouts of {@code c}, for a comparison side by side. */
  static String timeouts(RequestConfig c) {
    return "connect "
        + millis(c.getConnectTimeout())
        + " pool "
        + millis(c.getConnectionRequestTimeout())
        + " response "
        + millis(c.getResponseTimeout());
  }

  @ParameterizedTest
  @ValueSource(strings = {"pooling", "basic"})
  void theKeptConnectionGetsItsOwnSocketTimeoutBackAtItsNextLease(String kind) throws IOException {
    // A bounded call's connection, kept by the manager, serves the next lease (a client without the
    // agent on the same manager, its config leaving the response timeout unset) with the socket
    // timeout HttpClient gives it, not the bound: its slow answer still comes.
    HttpClientConnectionManager manager =
        kind.equals("basic")
            ? new BasicHttpClientConnectionManager()
            : new PoolingHttpClientConnectionManager();
    client =
        ours(
            builder().setConnectionManager(manager).setConnectionManagerShared(true),
            r -> r.perAttemptTimeout(Duration.ofMillis(300)));
    plain = HttpClients.custom().setConnectionManager(manager).build();
    server.enqueue(ok("fine"), ok("slow").delay(1_000));

    assertThat(call(client, new HttpGet(server.url("/1")), null)).isEqualTo("200 fine");
    assertThat(millis(seen.get(0).getResponseTimeout())).as("bounded").isEqualTo(300);
    assertThat(call(plain, new HttpGet(server.url("/2")), null)).isEqualTo("200 slow");

    assertThat(server.connectionCount()).as("the same connection").isEqualTo(1);
  }
}
