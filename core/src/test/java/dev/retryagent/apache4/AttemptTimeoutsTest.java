package dev.retryagent.apache4;

import static dev.retryagent.testing.ScriptedHttpServer.Action.closeWithoutResponse;
import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.TransportFailure;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import dev.retryagent.testing.UnansweredPort;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;
import org.apache.http.HttpConnection;
import org.apache.http.client.config.RequestConfig;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.client.methods.HttpGet;
import org.apache.http.client.methods.HttpPost;
import org.apache.http.client.methods.HttpUriRequest;
import org.apache.http.client.protocol.HttpClientContext;
import org.apache.http.conn.ConnectTimeoutException;
import org.apache.http.conn.ConnectionPoolTimeoutException;
import org.apache.http.entity.StringEntity;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClientBuilder;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.util.EntityUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code retry.perAttemptTimeout}, and for a retry the time left before {@code retry.deadline},
 * applied to each attempt of HttpClient 4.5 as the other clients apply them: each of its timeouts
 * becomes the shorter of the application's and the bound, the application's objects untouched.
 */
class AttemptTimeoutsTest {
  /** Longer than any test waits for: a response held this long is one nobody gets. */
  private static final long STALLED_MILLIS = 30_000;

  private final ScriptedHttpServer server;
  private final List<RetryEvent> events = new ArrayList<>();
  private final FakeTime time = new FakeTime();

  AttemptTimeoutsTest() throws Exception {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void close() throws Exception {
    server.close();
  }

  private CloseableHttpClient client(
      UnaryOperator<RetryPolicy.Builder> retry, HttpClientBuilder builder) {
    RetryEngine engine =
        TestEngines.engine(time, Mode.ENFORCE, retry, CircuitBreakerPolicy.defaults(), events);
    return RetryingCloseableHttpClient.wrap(builder, engine);
  }

  /** With the agent ({@link #client}), or the plain client the builder makes, side by side. */
  private CloseableHttpClient client(
      boolean agent, UnaryOperator<RetryPolicy.Builder> retry, HttpClientBuilder builder) {
    return agent ? client(retry, builder) : builder.build();
  }

  /** What each exchange had: its connection's socket timeout, its connect and pool timeouts. */
  private static HttpClientBuilder recording(List<String> seen) {
    return HttpClients.custom()
        .addInterceptorLast(
            (org.apache.http.HttpResponseInterceptor)
                (response, context) -> {
                  HttpClientContext c = HttpClientContext.adapt(context);
                  RequestConfig config = c.getRequestConfig();
                  seen.add(
                      "socket "
                          + c.getAttribute("http.connection", HttpConnection.class)
                              .getSocketTimeout()
                          + " connect "
                          + config.getConnectTimeout()
                          + " pool "
                          + config.getConnectionRequestTimeout());
                });
  }

  private static RequestConfig timeouts(int millis) {
    return RequestConfig.custom()
        .setSocketTimeout(millis)
        .setConnectTimeout(millis)
        .setConnectionRequestTimeout(millis)
        .build();
  }

  @Test
  void aStalledAttemptEndsAtPerAttemptTimeoutAndTheRetryAnswersTheApplicationsConfigKept()
      throws Exception {
    // The application's 30 s socket timeout, longer than perAttemptTimeout (500 ms): without the
    // bound the first attempt waited for the stalled answer, and the call got it 30 s later.
    server.enqueue(ok("late").delay(STALLED_MILLIS), ok("second"));
    RequestConfig own = timeouts(30_000);
    HttpGet get = new HttpGet(server.url("/items"));
    get.setConfig(own);
    HttpClientContext context = HttpClientContext.create();
    try (CloseableHttpClient c =
        client(r -> r.perAttemptTimeout(Duration.ofMillis(500)), HttpClients.custom())) {
      try (CloseableHttpResponse r = c.execute(get, context)) {
        assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("second");
      }
    }
    assertThat(requestsAtLeast(2)).isEqualTo(2);
    // The application's objects as HttpClient leaves them without the agent: the request's own
    // config, which HttpClient puts in the context.
    assertThat(get.getConfig()).isSameAs(own);
    assertThat(own.getSocketTimeout()).isEqualTo(30_000);
    assertThat(context.getRequestConfig()).isSameAs(own);
  }

  @ParameterizedTest
  @ValueSource(strings = {"minimal", "deprecated"})
  @SuppressWarnings("deprecation")
  void aStalledAttemptOfTheOtherClientsEndsAtPerAttemptTimeoutToo(String kind) throws Exception {
    // MinimalHttpClient and the deprecated DefaultHttpClient (AbstractHttpClient) read their own
    // way what the attempt waits for: the socket timeout is shortened on the connection itself.
    server.enqueue(ok("late").delay(STALLED_MILLIS), ok("second"));
    secondAfterAStalledFirst(
        kind.equals("minimal")
            ? HttpClients.createMinimal()
            : new org.apache.http.impl.client.DefaultHttpClient());
  }

  @ParameterizedTest
  @ValueSource(strings = {"custom", "minimal"})
  void aStalledAttemptOnBasicHttpClientConnectionManagerEndsAtPerAttemptTimeoutToo(String kind)
      throws Exception {
    // BasicHttpClientConnectionManager's connection is HttpClient's plain one, which a manager of
    // the application's may make too and keep its socket timeout: the socket timeout was left as
    // it was, none by default, and an attempt the server stalled waited for its answer (30 s
    // here). The client names its manager, which puts the socket timeout back when the connection
    // is released (4.5.4 and later): the attempt ends at its 500 ms, and the retry answers.
    server.enqueue(ok("late").delay(STALLED_MILLIS), ok("second"));
    org.apache.http.impl.conn.BasicHttpClientConnectionManager cm =
        new org.apache.http.impl.conn.BasicHttpClientConnectionManager();
    CloseableHttpClient own =
        kind.equals("minimal")
            ? HttpClients.createMinimal(cm)
            : HttpClients.custom().setConnectionManager(cm).build();
    secondAfterAStalledFirst(own);
  }

  /** {@code own}, wrapped with a 500 ms perAttemptTimeout: its stalled first attempt retried. */
  private void secondAfterAStalledFirst(CloseableHttpClient own) throws Exception {
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.perAttemptTimeout(Duration.ofMillis(500)),
            CircuitBreakerPolicy.defaults(),
            events);
    try (CloseableHttpClient c = RetryingCloseableHttpClient.wrap(own, engine);
        CloseableHttpResponse r = c.execute(new HttpGet(server.url("/items")))) {
      assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("second");
    }
    assertThat(requestsAtLeast(2)).isEqualTo(2);
  }

  @Test
  void aCallThatFindsNoPooledConnectionWithinTheBoundFailsAsHttpClientFailsIt() throws Exception {
    // The application holds its pool's only connection and set no connection-request timeout:
    // without the bound the next call waited for the pool until the connection came back (here,
    // never: the test gives it back after 20 s). Now HttpClient's own
    // ConnectionPoolTimeoutException
    // at 300 ms, as an application that set 300 ms itself gets without the agent, nothing sent.
    server.otherwise(ok("fine"));
    Throwable plain;
    try (CloseableHttpClient p = HttpClients.custom().setMaxConnTotal(1).build();
        CloseableHttpResponse held = p.execute(new HttpGet(server.url("/held")))) {
      assertThat(held.getStatusLine().getStatusCode()).isEqualTo(200);
      HttpGet get = new HttpGet(server.url("/items"));
      get.setConfig(RequestConfig.custom().setConnectionRequestTimeout(300).build());
      plain = catchThrowable(() -> p.execute(get));
    }
    assertThat(plain).isInstanceOf(ConnectionPoolTimeoutException.class);

    try (CloseableHttpClient c =
            client(
                r -> r.perAttemptTimeout(Duration.ofMillis(300)),
                HttpClients.custom().setMaxConnTotal(1));
        CloseableHttpResponse held = c.execute(new HttpGet(server.url("/held")))) {
      assertThat(held.getStatusLine().getStatusCode()).isEqualTo(200);
      Throwable ours =
          assertTimeoutPreemptively(
              Duration.ofSeconds(20), () -> catchThrowable(() -> c.execute(get("/items"))));
      assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
    }
    assertThat(requestsAtLeast(2)).as("the held ones").isEqualTo(2);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.POOL_TIMEOUT);
  }

  @Test
  void eachAttemptGetsTheShorterOfItsOwnTimeoutsAndTheBound() throws Exception {
    // Deterministic: what each exchange ran with. The request's own config (500 ms) is kept; none
    // at all (the client's default, -1, and the pool's socket timeout, 0) becomes the bound, 2 s.
    server.otherwise(ok("done"));
    List<String> seen = new CopyOnWriteArrayList<>();
    try (CloseableHttpClient c =
        client(r -> r.perAttemptTimeout(Duration.ofSeconds(2)), recording(seen))) {
      HttpGet shorter = new HttpGet(server.url("/items"));
      shorter.setConfig(timeouts(500));
      EntityUtils.consume(c.execute(shorter).getEntity());
      EntityUtils.consume(c.execute(new HttpGet(server.url("/items"))).getEntity());
      HttpGet longer = new HttpGet(server.url("/items"));
      longer.setConfig(timeouts(60_000));
      EntityUtils.consume(c.execute(longer).getEntity());
    }
    assertThat(seen)
        .containsExactly(
            "socket 500 connect 500 pool 500",
            "socket 2000 connect 2000 pool 2000",
            "socket 2000 connect 2000 pool 2000");
  }

  @Test
  void theClientsDefaultConfigIsBoundedAndKept() throws Exception {
    server.otherwise(ok("done"));
    List<String> seen = new CopyOnWriteArrayList<>();
    RequestConfig defaults = timeouts(60_000);
    try (CloseableHttpClient c =
        client(
            r -> r.perAttemptTimeout(Duration.ofMillis(1500)),
            recording(seen).setDefaultRequestConfig(defaults))) {
      EntityUtils.consume(c.execute(new HttpGet(server.url("/items"))).getEntity());
    }
    assertThat(seen).containsExactly("socket 1500 connect 1500 pool 1500");
    assertThat(defaults.getConnectTimeout()).isEqualTo(60_000);
  }

  @Test
  void withoutPerAttemptTimeoutTheFirstAttemptKeepsTheClientsOwnAsWithoutTheAgent()
      throws Exception {
    server.otherwise(ok("done"));
    List<String> plain = new CopyOnWriteArrayList<>();
    List<String> ours = new CopyOnWriteArrayList<>();
    try (CloseableHttpClient p = recording(plain).build();
        CloseableHttpClient c = client(r -> r, recording(ours))) {
      for (CloseableHttpClient client : List.of(p, c)) {
        EntityUtils.consume(client.execute(new HttpGet(server.url("/items"))).getEntity());
        HttpGet own = new HttpGet(server.url("/items"));
        own.setConfig(timeouts(60_000));
        EntityUtils.consume(client.execute(own).getEntity());
      }
    }
    assertThat(ours)
        .isEqualTo(plain)
        .containsExactly("socket 0 connect -1 pool -1", "socket 60000 connect 60000 pool 60000");
  }

  @Test
  void aRetryGetsNoMoreThanWhatIsLeftBeforeTheDeadline() throws Exception {
    // A 503, then the retry's wait (100 ms at most) ends 9.5 s late (fake time): of the 10 s
    // deadline the retry has what is left, 500 ms at most, where without the bound it waited for
    // the stalled answer.
    time.late(9_500_000_000L);
    server.enqueue(status(503), ok("late").delay(STALLED_MILLIS), ok("never"));
    try (CloseableHttpClient c =
        client(
            r -> r.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(1)),
            HttpClients.custom())) {
      Throwable e = catchThrowable(() -> c.execute(new HttpGet(server.url("/items"))));
      assertThat(e).isExactlyInstanceOf(SocketTimeoutException.class).hasMessage("Read timed out");
    }
    assertThat(requestsAtLeast(2)).isEqualTo(2);
  }

  @Test
  void aStalledPostWithoutKeyIsSentOnceAndFailsAsHttpClientFailsIt() throws Exception {
    // Without the bound the POST waited for the stalled answer; now HttpClient's own read
    // timeout, as an application that set 300 ms itself gets without the agent, and no resend.
    server.otherwise(ok("late").delay(STALLED_MILLIS));
    Throwable plain;
    try (CloseableHttpClient p = HttpClients.createDefault()) {
      HttpPost post = post();
      post.setConfig(RequestConfig.custom().setSocketTimeout(300).build());
      plain = catchThrowable(() -> p.execute(post));
    }
    assertThat(plain).isInstanceOf(SocketTimeoutException.class);

    try (CloseableHttpClient c =
        client(r -> r.perAttemptTimeout(Duration.ofMillis(300)), HttpClients.custom())) {
      Throwable ours = catchThrowable(() -> c.execute(post()));
      assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
    }
    assertThat(requestsAtLeast(2)).as("one each").isEqualTo(2);
  }

  @Test
  void anApplicationsShorterTimeoutFiresAsWithoutTheAgent() throws Exception {
    // The application's 300 ms, shorter than perAttemptTimeout (20 s), is left as it is: its
    // timeout fires with HttpClient's exception, on each attempt the policy makes of the GET.
    server.otherwise(ok("late").delay(STALLED_MILLIS));
    Throwable plain;
    try (CloseableHttpClient p = HttpClients.createDefault()) {
      plain = catchThrowable(() -> p.execute(getWithin(300)));
    }
    assertThat(plain).isInstanceOf(SocketTimeoutException.class);

    try (CloseableHttpClient c =
        client(
            r -> r.maxAttempts(2).perAttemptTimeout(Duration.ofSeconds(20)),
            HttpClients.custom())) {
      Throwable ours = catchThrowable(() -> c.execute(getWithin(300)));
      assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
    }
    assertThat(requestsAtLeast(3)).as("one, then two attempts").isEqualTo(3);
  }

  @ParameterizedTest
  @ValueSource(strings = {"pooling", "basic"})
  void theBoundEndsWithTheAttemptsExchangeTheConnectionsNextCallHasTheApplicationsOwn(
      String manager) throws Exception {
    // One connection, kept alive, used by a call the policy bounds (2 s) whose body the
    // application reads after the call, then by a call of a client without perAttemptTimeout on
    // the same connection manager, whose RequestConfig sets no socket timeout (-1): that one must
    // run with the manager's own SocketConfig (7 s), as without the agent, not with the bound the
    // previous attempt left on the connection. HttpClient 4.5.14's managers set the SocketConfig
    // when a connection is leased.
    server.otherwise(ok("done"));
    List<String> plain = new CopyOnWriteArrayList<>();
    List<String> ours = new CopyOnWriteArrayList<>();
    for (List<String> seen : List.of(plain, ours)) {
      boolean agent = seen == ours;
      org.apache.http.conn.HttpClientConnectionManager cm = manager(manager);
      try (CloseableHttpClient bounded =
              client(agent, r -> r.perAttemptTimeout(Duration.ofSeconds(2)), shared(seen, cm));
          CloseableHttpClient unbounded = client(agent, r -> r, shared(seen, cm))) {
        CloseableHttpResponse open = bounded.execute(get("/first"));
        assertThat(EntityUtils.toString(open.getEntity())).isEqualTo("done");
        open.close();
        EntityUtils.consume(unbounded.execute(get("/second")).getEntity());
        EntityUtils.consume(bounded.execute(get("/third")).getEntity());
        EntityUtils.consume(unbounded.execute(get("/fourth")).getEntity());
      } finally {
        cm.shutdown();
      }
    }
    assertThat(plain).containsOnly("socket 7000 connect -1 pool -1").hasSize(4);
    // BasicHttpClientConnectionManager's connection is HttpClient's plain one, which a manager of
    // the application's may hand out without putting its socket timeout back (the test below):
    // its socket timeout was left as it was, unbounded (here the SocketConfig's 7 s; by default,
    // none). The client names its manager (InternalHttpClient's connManager), which puts it back:
    // bounded as the pool's, and the next call has its own again.
    String bound = "socket 2000";
    assertThat(ours)
        .containsExactly(
            bound + " connect 2000 pool 2000",
            "socket 7000 connect -1 pool -1",
            bound + " connect 2000 pool 2000",
            "socket 7000 connect -1 pool -1");
    assertThat(requestsAtLeast(8)).isEqualTo(8);
  }

  @Test
  void aConnectionManagerOfTheApplicationsOwnKeepsTheSocketTimeoutItGaveTheConnection()
      throws Exception {
    // A connection manager of the application's own (OneConnection) that, as HttpClient's before
    // 4.5.4, leaves a connection's socket timeout as the last exchange left it when the
    // connection comes back. A call the policy bounds (500 ms), then, on the same kept-alive
    // connection, a call of a client without perAttemptTimeout whose RequestConfig sets no socket
    // timeout and whose answer comes after 1.5 s: without the agent it waits for it under the
    // connection's own 7 s; with the agent it failed with SocketTimeoutException at the first
    // call's 500 ms, a failure the application never saw without the agent. The agent cannot put
    // the socket timeout back before such a manager takes the connection back, so it leaves it as
    // it is there.
    List<String> plain = new CopyOnWriteArrayList<>();
    List<String> ours = new CopyOnWriteArrayList<>();
    for (List<String> seen : List.of(plain, ours)) {
      boolean agent = seen == ours;
      server.enqueue(ok("first"), ok("late").delay(1500));
      OneConnection cm = new OneConnection(7000);
      try (CloseableHttpClient bounded =
              client(agent, r -> r.perAttemptTimeout(Duration.ofMillis(500)), shared(seen, cm));
          CloseableHttpClient unbounded = client(agent, r -> r.maxAttempts(1), shared(seen, cm))) {
        try (CloseableHttpResponse r = bounded.execute(get("/first"))) {
          assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("first");
        }
        try (CloseableHttpResponse r = unbounded.execute(get("/second"))) {
          assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("late");
        }
      } finally {
        cm.shutdown();
      }
    }
    assertThat(plain).containsOnly("socket 7000 connect -1 pool -1").hasSize(2);
    assertThat(ours)
        .containsExactly("socket 7000 connect 500 pool 500", "socket 7000 connect -1 pool -1");
    assertThat(requestsAtLeast(4)).isEqualTo(4);
    assertThat(server.connectionCount()).as("one kept-alive connection each").isEqualTo(2);
  }

  /**
   * A connection manager of an application's own, one connection kept alive between calls, made
   * with HttpClient's own factory and operator: the socket timeout is the {@code SocketConfig}'s
   * when the connection is opened, and nothing puts it back when the connection comes back.
   */
  private static final class OneConnection
      implements org.apache.http.conn.HttpClientConnectionManager {
    private final org.apache.http.config.SocketConfig socket;
    private final org.apache.http.conn.HttpClientConnectionOperator operator =
        new org.apache.http.impl.conn.DefaultHttpClientConnectionOperator(
            org.apache.http.config.RegistryBuilder
                .<org.apache.http.conn.socket.ConnectionSocketFactory>create()
                .register("http", org.apache.http.conn.socket.PlainConnectionSocketFactory.INSTANCE)
                .build(),
            null,
            null);
    private org.apache.http.conn.ManagedHttpClientConnection connection;

    OneConnection(int socketTimeoutMillis) {
      socket =
          org.apache.http.config.SocketConfig.custom().setSoTimeout(socketTimeoutMillis).build();
    }

    @Override
    public synchronized org.apache.http.conn.ConnectionRequest requestConnection(
        org.apache.http.conn.routing.HttpRoute route, Object state) {
      if (connection == null) {
        connection =
            org.apache.http.impl.conn.ManagedHttpClientConnectionFactory.INSTANCE.create(
                route, org.apache.http.config.ConnectionConfig.DEFAULT);
      }
      org.apache.http.conn.ManagedHttpClientConnection leased = connection;
      return new org.apache.http.conn.ConnectionRequest() {
        @Override
        public org.apache.http.HttpClientConnection get(
            long timeout, java.util.concurrent.TimeUnit unit) {
          return leased;
        }

        @Override
        public boolean cancel() {
          return false;
        }
      };
    }

    @Override
    public void releaseConnection(
        org.apache.http.HttpClientConnection conn,
        Object newState,
        long validDuration,
        java.util.concurrent.TimeUnit timeUnit) {}

    @Override
    public void connect(
        org.apache.http.HttpClientConnection conn,
        org.apache.http.conn.routing.HttpRoute route,
        int connectTimeout,
        org.apache.http.protocol.HttpContext context)
        throws java.io.IOException {
      operator.connect(
          (org.apache.http.conn.ManagedHttpClientConnection) conn,
          route.getTargetHost(),
          route.getLocalSocketAddress(),
          connectTimeout,
          socket,
          context);
    }

    @Override
    public void upgrade(
        org.apache.http.HttpClientConnection conn,
        org.apache.http.conn.routing.HttpRoute route,
        org.apache.http.protocol.HttpContext context) {}

    @Override
    public void routeComplete(
        org.apache.http.HttpClientConnection conn,
        org.apache.http.conn.routing.HttpRoute route,
        org.apache.http.protocol.HttpContext context) {}

    @Override
    public void closeIdleConnections(long idletime, java.util.concurrent.TimeUnit timeUnit) {}

    @Override
    public void closeExpiredConnections() {}

    @Override
    public synchronized void shutdown() {
      if (connection != null) {
        try {
          connection.shutdown();
        } catch (java.io.IOException e) {
          // closing a loopback socket at the test's end: nothing to tell
        }
      }
    }
  }

  private static org.apache.http.conn.HttpClientConnectionManager manager(String kind) {
    org.apache.http.config.SocketConfig socket =
        org.apache.http.config.SocketConfig.custom().setSoTimeout(7000).build();
    if (kind.equals("basic")) {
      org.apache.http.impl.conn.BasicHttpClientConnectionManager basic =
          new org.apache.http.impl.conn.BasicHttpClientConnectionManager();
      basic.setSocketConfig(socket);
      return basic;
    }
    org.apache.http.impl.conn.PoolingHttpClientConnectionManager pooling =
        new org.apache.http.impl.conn.PoolingHttpClientConnectionManager();
    pooling.setMaxTotal(1);
    pooling.setDefaultSocketConfig(socket);
    return pooling;
  }

  private static HttpClientBuilder shared(
      List<String> seen, org.apache.http.conn.HttpClientConnectionManager cm) {
    return recording(seen).setConnectionManager(cm).setConnectionManagerShared(true);
  }

  @Test
  void anInterceptorThatSetsAConfigFromTheOneItReadLeavesTheApplicationsOwnTimeoutsInItsContext()
      throws Exception {
    // An application interceptor that reads the context's RequestConfig and sets a copy with a
    // socket timeout of its own (a per-request timeout, say), in a context the application keeps
    // across calls. It reads the attempt's shortened copy (documented); what it writes back must
    // still hold the application's own connect and pool timeouts, as without the agent: a later
    // call in that context, under no perAttemptTimeout, would otherwise run with the bound of
    // this one.
    server.otherwise(ok("done"));
    List<String> plain = new CopyOnWriteArrayList<>();
    List<String> ours = new CopyOnWriteArrayList<>();
    for (List<String> seen : List.of(plain, ours)) {
      boolean agent = seen == ours;
      HttpClientBuilder builder =
          recording(seen)
              .setDefaultRequestConfig(timeouts(60_000))
              .addInterceptorFirst(
                  (org.apache.http.HttpRequestInterceptor)
                      (request, context) -> {
                        HttpClientContext c = HttpClientContext.adapt(context);
                        c.setRequestConfig(
                            RequestConfig.copy(c.getRequestConfig())
                                .setSocketTimeout(45_000)
                                .build());
                      });
      HttpClientContext context = HttpClientContext.create();
      try (CloseableHttpClient bounded =
              client(agent, r -> r.perAttemptTimeout(Duration.ofSeconds(2)), builder);
          CloseableHttpClient unbounded = client(agent, r -> r, builder)) {
        EntityUtils.consume(bounded.execute(get("/first"), context).getEntity());
        seen.add(
            "after: connect "
                + context.getRequestConfig().getConnectTimeout()
                + " pool "
                + context.getRequestConfig().getConnectionRequestTimeout()
                + " socket "
                + context.getRequestConfig().getSocketTimeout());
        EntityUtils.consume(unbounded.execute(get("/second"), context).getEntity());
      }
    }
    assertThat(plain)
        .containsExactly(
            "socket 45000 connect 60000 pool 60000",
            "after: connect 60000 pool 60000 socket 45000",
            "socket 45000 connect 60000 pool 60000");
    assertThat(ours)
        .containsExactly(
            "socket 2000 connect 2000 pool 2000",
            "after: connect 60000 pool 60000 socket 45000",
            "socket 45000 connect 60000 pool 60000");
  }

  @Test
  void anInterceptorThatSetsBackTheConfigItReadLeavesTheApplicationsOwnObjectInItsContext()
      throws Exception {
    server.otherwise(ok("done"));
    RequestConfig defaults = timeouts(60_000);
    HttpClientContext context = HttpClientContext.create();
    try (CloseableHttpClient c =
        client(
            r -> r.perAttemptTimeout(Duration.ofSeconds(2)),
            HttpClients.custom()
                .setDefaultRequestConfig(defaults)
                .addInterceptorFirst(
                    (org.apache.http.HttpRequestInterceptor)
                        (request, ctx) ->
                            ctx.setAttribute(
                                HttpClientContext.REQUEST_CONFIG,
                                ctx.getAttribute(HttpClientContext.REQUEST_CONFIG))))) {
      EntityUtils.consume(c.execute(get("/items"), context).getEntity());
    }
    assertThat(context.getRequestConfig()).isSameAs(defaults);
  }

  @Test
  void aConnectTheHostNeverAnswersEndsAtTheBoundAsHttpClientEndsItAndAGetIsRetried()
      throws Exception {
    // A host that never answers (UnansweredPort): a connect waits. Without the bound the
    // application's connect timeout (none: the client's default) let the attempt wait as long as
    // the kernel tries; now HttpClient's own ConnectTimeoutException at 300 ms, as an application
    // that set 300 ms itself gets, and the policy retries the GET.
    try (UnansweredPort port = new UnansweredPort()) {
      String url = port.url("/items");
      Throwable plain;
      try (CloseableHttpClient p = HttpClients.createDefault()) {
        HttpGet get = new HttpGet(url);
        get.setConfig(RequestConfig.custom().setConnectTimeout(300).build());
        plain = catchThrowable(() -> p.execute(get));
      }
      assertThat(plain).isInstanceOf(ConnectTimeoutException.class);

      try (CloseableHttpClient c =
          client(
              r -> r.maxAttempts(3).perAttemptTimeout(Duration.ofMillis(300)),
              HttpClients.custom())) {
        Throwable ours =
            assertTimeoutPreemptively(
                Duration.ofSeconds(30), () -> catchThrowable(() -> c.execute(new HttpGet(url))));
        assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
      }
    }
    assertThat(events)
        .extracting(RetryEvent::type)
        .containsExactly(RetryEvent.Type.RETRY, RetryEvent.Type.RETRY, RetryEvent.Type.GIVE_UP);
  }

  @Test
  void aRedirectToAnotherHostWithinTheAttemptRunsUnderTheBoundToo() throws Exception {
    // HttpClient follows the redirect itself, within the attempt: the hop to the other host reads
    // the attempt's shortened config (and gets its socket timeout shortened) as the first exchange
    // did; without the agent both run with the client's default (60 s).
    List<String> plain = new CopyOnWriteArrayList<>();
    List<String> ours = new CopyOnWriteArrayList<>();
    try (ScriptedHttpServer other = new ScriptedHttpServer()) {
      other.otherwise(ok("there"));
      server.otherwise(status(302).header("Location", other.url("/moved")));
      for (List<String> seen : List.of(plain, ours)) {
        HttpClientBuilder builder = recording(seen).setDefaultRequestConfig(timeouts(60_000));
        try (CloseableHttpClient c =
                client(seen == ours, r -> r.perAttemptTimeout(Duration.ofSeconds(2)), builder);
            CloseableHttpResponse r = c.execute(get("/items"))) {
          assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("there");
        }
      }
      assertThat(other.requestCount()).isEqualTo(2);
    }
    assertThat(plain).containsOnly("socket 60000 connect 60000 pool 60000").hasSize(2);
    assertThat(ours).containsOnly("socket 2000 connect 2000 pool 2000").hasSize(2);
  }

  @Test
  void whatHttpClientResendsWithinTheAttemptRunsUnderTheBoundToo() throws Exception {
    // A dropped connection the policy leaves to HttpClient (retryOn.transport: connect only): its
    // governed retry handler resends the GET within the attempt, through MainClientExec again,
    // which reads the attempt's shortened config and gets its socket timeout shortened as the
    // first exchange did; without the agent the resend runs with the client's default (60 s).
    List<String> plain = new CopyOnWriteArrayList<>();
    List<String> ours = new CopyOnWriteArrayList<>();
    for (List<String> seen : List.of(plain, ours)) {
      server.enqueue(closeWithoutResponse(), ok("done"));
      HttpClientBuilder builder = recording(seen).setDefaultRequestConfig(timeouts(60_000));
      try (CloseableHttpClient c =
              client(
                  seen == ours,
                  r ->
                      r.perAttemptTimeout(Duration.ofSeconds(2))
                          .retryOnTransport(List.of(TransportFailure.CONNECT)),
                  builder);
          CloseableHttpResponse r = c.execute(get("/items"))) {
        assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("done");
      }
    }
    assertThat(requestsAtLeast(4)).as("two each").isEqualTo(4);
    assertThat(plain).containsExactly("socket 60000 connect 60000 pool 60000");
    assertThat(ours).containsExactly("socket 2000 connect 2000 pool 2000");
    assertThat(events).extracting(RetryEvent::type).doesNotContain(RetryEvent.Type.RETRY);
  }

  private HttpGet get(String path) {
    return new HttpGet(server.url(path));
  }

  private HttpUriRequest getWithin(int socketMillis) {
    HttpGet get = new HttpGet(server.url("/items"));
    get.setConfig(RequestConfig.custom().setSocketTimeout(socketMillis).build());
    return get;
  }

  private HttpPost post() throws Exception {
    HttpPost post = new HttpPost(server.url("/payments"));
    post.setEntity(new StringEntity("{\"amount\":1}"));
    return post;
  }

  /**
   * The server's count once it reached {@code n} (at most 10 s): a request is counted as the
   * server's thread reads it, which on a loaded machine can come after the client's 300 ms timeout
   * fired and the test went on. A count above {@code n} that came by then still fails the test.
   */
  private int requestsAtLeast(int n) {
    await().atMost(Duration.ofSeconds(10)).until(() -> server.requestCount() >= n);
    return server.requestCount();
  }
}
