package dev.retryagent.apache5;

import static dev.retryagent.testing.ScriptedHttpServer.Action.closeWithoutResponse;
import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.CircuitBreakerOpenException;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.testing.Bodiless;
import dev.retryagent.testing.FailingSource;
import dev.retryagent.testing.FakeRequest;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.net.SocketTimeoutException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;
import org.apache.hc.client5.http.HttpRequestRetryStrategy;
import org.apache.hc.client5.http.classic.ExecChain;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.classic.methods.HttpPost;
import org.apache.hc.client5.http.classic.methods.HttpPut;
import org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.HttpRequest;
import org.apache.hc.core5.http.HttpResponse;
import org.apache.hc.core5.http.NoHttpResponseException;
import org.apache.hc.core5.http.io.entity.AbstractHttpEntity;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.InputStreamEntity;
import org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.hc.core5.http.message.BasicClassicHttpResponse;
import org.apache.hc.core5.http.protocol.HttpContext;
import org.apache.hc.core5.util.TimeValue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * HttpClient 5's own retry, governed by the call in progress: a real 5.1 client on a loopback
 * server, the server counting requests. HttpClient's strategy here resends a 429 or 503 once, with
 * no wait of its own (its default waits 1 s), so that each test shows who resent what.
 */
class GovernedRetryStrategyTest {
  /** HttpClient's default strategy, without its 1 s wait. */
  private static final DefaultHttpRequestRetryStrategy ONCE_AT_ONCE =
      new DefaultHttpRequestRetryStrategy(1, TimeValue.ZERO_MILLISECONDS);

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private CloseableHttpClient client;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    if (client != null) {
      client.close();
    }
    server.close();
  }

  private RetryEngine engine(Mode mode, UnaryOperator<RetryPolicy.Builder> retry) {
    return TestEngines.engine(time, mode, retry, CircuitBreakerPolicy.defaults(), events);
  }

  /** The application's strategy first, then the library, as an application wires it by hand. */
  private void byHand(Mode mode, UnaryOperator<RetryPolicy.Builder> retry) {
    HttpClientBuilder b = HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE);
    client = RetryExecHandler.addTo(b, engine(mode, retry)).build();
  }

  private void byHand(UnaryOperator<RetryPolicy.Builder> retry) {
    byHand(Mode.ENFORCE, retry);
  }

  private String[] call(HttpUriRequestBase request) throws IOException {
    return client.execute(
        request,
        r ->
            new String[] {
              String.valueOf(r.getCode()),
              r.getEntity() == null ? "" : EntityUtils.toString(r.getEntity())
            });
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(strings = {"plain", "gzipped", "gzipped 1 MiB"})
  void aRetriedResponseGoesBackToThePoolGzippedOrNot(String body) throws Exception {
    // A gzipped 503 was read through HttpClient's decoder, which stops at the gzip trailer,
    // before the end of the body as it came, the end that gives the connection back: the
    // response's close then closed the connection, and the retry opened a second one. The body is
    // read as it came now, within Discards.LIMIT of its bytes on the wire: 1 MiB of text that
    // gzips to a few KiB keeps its connection too (decoded, it was past the limit).
    byHand(r -> r);
    ScriptedHttpServer.Action busy =
        status(503).body(body.endsWith("MiB") ? "busy".repeat(1 << 18) : "busy, come back");
    server.enqueue(body.equals("plain") ? busy : busy.gzipped(), ok("fine").gzipped());
    assertThat(call(new HttpGet(server.url("/gz")))).containsExactly("200", "fine");
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(server.connectionCount()).as("the retry on the 503's connection").isEqualTo(1);
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.MethodSource("dev.retryagent.testing.HeldBodies#all")
  void aRetriedResponseWhoseBodyIsHeldIsLetGoWithoutWaitingForTheRest(
      ScriptedHttpServer.Framing framing, boolean gzipped) throws Exception {
    // As ApacheRetrying4Test's (4.5): the 503's body held after 4 bytes (the server's bound: 10 s),
    // HttpClient's default socket timeout none. The retry waited for the rest; now it goes out on
    // a connection of its own while the body is still held (the scope's endpoint discarded).
    byHand(r -> r);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    ScriptedHttpServer.Action busy = status(503).body("busy busy busy").framed(framing);
    server.enqueue((gzipped ? busy.gzipped() : busy).heldAfter(4, release), ok("done"));
    try {
      assertThat(call(new HttpGet(server.url("/held")))).containsExactly("200", "done");
      assertThat(server.holdsEnded()).as("the 503's body still held").isZero();
      assertThat(server.requestCount()).isEqualTo(2);
      assertThat(server.connectionCount()).as("the retry did not wait for the 503's").isEqualTo(2);
    } finally {
      release.countDown();
    }
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.MethodSource("dev.retryagent.testing.HeldBodies#all")
  void aHeldBodysGraceRunsOnceOnTheSharedSchedulerNotOnTheEnginesOfTheLibraryUser(
      ScriptedHttpServer.Framing framing, boolean gzipped) throws Exception {
    // As ApacheRetrying4Test's (4.5): the grace, a bound on a read from the network, runs on the
    // agent's shared scheduler in real time whatever the engine's, and once (not the copy's, then
    // the release's).
    dev.retryagent.testing.InjectedScheduler scheduler =
        new dev.retryagent.testing.InjectedScheduler();
    RetryEngine own =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                r -> r,
                dev.retryagent.policy.Policy.defaults().budget(),
                CircuitBreakerPolicy.defaults(),
                dev.retryagent.policy.Policy.defaults().rateLimit())
            .scheduler(scheduler)
            .build();
    client = RetryExecHandler.addTo(HttpClients.custom(), own).build();
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    ScriptedHttpServer.Action busy = status(503).body("busy busy busy").framed(framing);
    server.enqueue((gzipped ? busy.gzipped() : busy).heldAfter(4, release), ok("done"));
    try (dev.retryagent.internal.Graces graces = dev.retryagent.internal.Graces.count()) {
      try {
        assertThat(call(new HttpGet(server.url("/held")))).containsExactly("200", "done");
      } finally {
        release.countDown();
      }
      boolean arrivedAsItCame = framing == ScriptedHttpServer.Framing.LENGTH && !gzipped;
      assertThat(graces.started()).isEqualTo(arrivedAsItCame ? 0 : 1);
    }
    assertThat(scheduler.graces()).isZero();
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
  void aRetriedChunkedBodyThatHasArrivedKeepsItsConnection(boolean gzipped) throws Exception {
    // Read within the grace (Discards.Grace), a chunked body that has arrived is read to its end,
    // which gives its connection back for the retry, as before.
    byHand(r -> r);
    ScriptedHttpServer.Action busy =
        status(503).body("busy busy busy").framed(ScriptedHttpServer.Framing.CHUNKED);
    server.enqueue(gzipped ? busy.gzipped() : busy, ok("done"));
    assertThat(call(new HttpGet(server.url("/chunked")))).containsExactly("200", "done");
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(server.connectionCount()).as("the retry on the 503's connection").isEqualTo(1);
  }

  private HttpPost post(String path) {
    HttpPost post = new HttpPost(server.url(path));
    post.setEntity(new StringEntity("{}", ContentType.APPLICATION_JSON));
    return post;
  }

  private long retriesOfOurs() {
    return events.stream().filter(e -> e.type() == RetryEvent.Type.RETRY).count();
  }

  private GiveUpReason giveUpReason() {
    return events.stream()
        .filter(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .map(RetryEvent::reason)
        .findFirst()
        .orElse(null);
  }

  @Test
  void a503ThePolicyRetriesIsRetriedByTheCallNotResentByHttpClient() throws Exception {
    byHand(r -> r.maxAttempts(3));
    server.enqueue(status(503), status(503), ok("done"));

    String[] got = call(new HttpGet(server.url("/items")));

    assertThat(got).containsExactly("200", "done");
    assertThat(server.requestCount()).isEqualTo(3);
    // Both retries were ours, with our backoff: HttpClient resent nothing.
    assertThat(retriesOfOurs()).isEqualTo(2);
  }

  @Test
  void aServerThatAlwaysAnswers503GetsExactlyMaxAttemptsRequests() throws Exception {
    byHand(r -> r.maxAttempts(3));
    server.otherwise(status(503));

    assertThat(call(new HttpGet(server.url("/items")))[0]).isEqualTo("503");
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(giveUpReason()).isEqualTo(GiveUpReason.ATTEMPTS);
  }

  @Test
  void addToSetsAsideAHandlerOfOursTheBuilderHasAlready() throws Exception {
    // As beside the agent: its hook installed a handler of its own (another engine: 5 attempts)
    // when the builder was made, then the application adds the library's (3 attempts).
    List<RetryEvent> agents = new CopyOnWriteArrayList<>();
    HttpClientBuilder b =
        RetryExecHandler.install(
            HttpClients.custom(),
            new RetryExecHandler(
                TestEngines.engine(
                    time,
                    Mode.ENFORCE,
                    r -> r.maxAttempts(5),
                    CircuitBreakerPolicy.defaults(),
                    agents)));
    client = RetryExecHandler.addTo(b, engine(Mode.ENFORCE, r -> r.maxAttempts(3))).build();
    server.otherwise(status(503));

    assertThat(call(new HttpGet(server.url("/items")))[0]).isEqualTo("503");
    // The library's 3 attempts, each sent once: not 3 times the other handler's 5.
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(giveUpReason()).isEqualTo(GiveUpReason.ATTEMPTS);
    assertThat(agents).isEmpty();
  }

  @Test
  void theAgentInstallGovernsHttpClientsDefaultStrategy() throws Exception {
    // As the agent's hook does it, on a builder just made: HttpClient's default (1 s) strategy.
    client =
        RetryExecHandler.install(
                HttpClients.custom(),
                new RetryExecHandler(engine(Mode.ENFORCE, r -> r.maxAttempts(3))))
            .build();
    server.otherwise(status(503));

    assertThat(call(new HttpGet(server.url("/items")))[0]).isEqualTo("503");
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(retriesOfOurs()).isEqualTo(2);
  }

  @Test
  void aPostWithoutKeyIsNeverResentByHttpClient() throws Exception {
    byHand(r -> r.maxAttempts(3));
    server.enqueue(status(503), status(503), ok("charged twice"));

    String[] got = call(post("/charges"));

    // Without the agent HttpClient sends it again after a second; with it, a request the policy
    // would not repeat reaches the server once (as OkHttp's and the JDK's own resends).
    assertThat(got[0]).isEqualTo("503");
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(retriesOfOurs()).isZero();
    assertThat(giveUpReason()).isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
  }

  @Test
  void withoutTheAgentHttpClientDoesResendThatPost() throws Exception {
    // The control of the test above: the same server and strategy, no call of ours.
    client = HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE).build();
    server.enqueue(status(503), ok("charged twice"));

    assertThat(call(post("/charges"))).containsExactly("200", "charged twice");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void maxAttemptsOneSendsAGetOnceAndAPostWithoutKeyOnce() throws Exception {
    byHand(r -> r.maxAttempts(1));
    server.otherwise(status(503));

    assertThat(call(new HttpGet(server.url("/items")))[0]).isEqualTo("503");
    assertThat(server.requestCount()).isEqualTo(1);

    assertThat(call(post("/charges"))[0]).isEqualTo("503");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void withRetriesDisabledAPostWithoutKeyIsStillSentOnce() throws Exception {
    byHand(r -> r.enabled(false));
    server.enqueue(status(503), ok("charged twice"));

    assertThat(call(post("/charges"))[0]).isEqualTo("503");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aSpentBudgetStopsHttpClientsResendAsWellAsOurs() throws Exception {
    Policy spent =
        new Policy(
            "no-budget",
            RetryPolicy.builder().build(),
            BudgetPolicy.builder().ratio(0.0).minPerSecond(0).build(),
            CircuitBreakerPolicy.defaults(),
            Policy.defaults().rateLimit());
    RetryEngine engine =
        RetryEngine.builder().clock(time).sleeper(time).scheduler(time).policy(spent).build();
    client =
        RetryExecHandler.addTo(HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE), engine).build();
    server.enqueue(status(503), ok("resent"));

    assertThat(call(new HttpGet(server.url("/items")))[0]).isEqualTo("503");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void withRetriesDisabledHttpClientResendsAsWithoutTheAgent() throws Exception {
    byHand(r -> r.enabled(false));
    server.enqueue(status(503), ok("second"));

    assertThat(call(new HttpGet(server.url("/items")))).containsExactly("200", "second");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void inObserveModeHttpClientResendsAsWithoutTheAgent() throws Exception {
    byHand(Mode.OBSERVE, r -> r.maxAttempts(3));
    server.enqueue(status(503), ok("second"));

    assertThat(call(new HttpGet(server.url("/items")))).containsExactly("200", "second");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void inObserveModeAPostWithoutKeyIsResentAsWithoutTheAgent() throws Exception {
    byHand(Mode.OBSERVE, r -> r.maxAttempts(3));
    server.enqueue(status(503), ok("second"));

    assertThat(call(post("/charges"))).containsExactly("200", "second");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void withTheAgentOffHttpClientResendsAsWithoutIt() throws Exception {
    byHand(Mode.OFF, r -> r.maxAttempts(3));
    server.enqueue(status(503), ok("second"));

    assertThat(call(new HttpGet(server.url("/items")))).containsExactly("200", "second");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void inARetryOfOursAResendThePolicyDoesNotChooseNeedsAnAttemptLeft() throws Exception {
    // 502 is ours to retry; 503 is not (retryOn), so HttpClient may resend it.
    UnaryOperator<RetryPolicy.Builder> only502 = r -> r.retryOnStatuses(StatusSet.of("502"));
    byHand(r -> only502.apply(r).maxAttempts(2));
    server.enqueue(status(502)).otherwise(status(503));

    assertThat(call(new HttpGet(server.url("/a")))[0]).isEqualTo("503");
    // 502, our retry's 503, and no resend: it would be a third request.
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void inARetryOfOursAResendThePolicyDoesNotChooseIsMadeWithAnAttemptLeft() throws Exception {
    UnaryOperator<RetryPolicy.Builder> only502 = r -> r.retryOnStatuses(StatusSet.of("502"));
    byHand(r -> only502.apply(r).maxAttempts(3));
    server.enqueue(status(502), status(503), ok("resent"));

    assertThat(call(new HttpGet(server.url("/a")))).containsExactly("200", "resent");
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @Test
  void aDroppedGetIsRetriedByTheCallOnlyUpToMaxAttempts() throws Exception {
    byHand(r -> r.maxAttempts(3));
    server.otherwise(closeWithoutResponse());

    assertThatThrownBy(() -> call(new HttpGet(server.url("/items"))))
        .isInstanceOf(NoHttpResponseException.class);
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(retriesOfOurs()).isEqualTo(2);
  }

  /**
   * As ApacheRetrying4Test's: a chunked 503 over 8 KiB before a retry wait over 1 s, on a route
   * whose rate limit then refuses the retry, reaches the application's handler whole, as without
   * the agent, after one request: the retry's permit is reserved before the copy that would read
   * the body away (ClassicCall.copyLeavesWhole). Before, RateLimitedException.
   */
  @Test
  void aChunked503Over8KiBWhoseLongRetryWaitTheRateLimitRefusesReachesTheApplicationWhole()
      throws Exception {
    String large = "busy ".repeat(4 * 1024); // 20 KiB
    server.otherwise(
        status(503).body(large).framed(dev.retryagent.testing.ScriptedHttpServer.Framing.CHUNKED));
    client = HttpClients.custom().disableAutomaticRetries().build();
    String[] plain = call(new HttpGet(server.url("/items")));
    client.close();
    client =
        RetryExecHandler.addTo(
                HttpClients.custom().disableAutomaticRetries(),
                TestEngines.rateLimitedTo(1, java.time.Duration.ofSeconds(2), time, events))
            .build();

    assertThat(call(new HttpGet(server.url("/items")))).containsExactly(plain);
    assertThat(plain).containsExactly("503", large);
    assertThat(server.requestCount()).as("one each, none retried").isEqualTo(2);
    assertThat(time.waits()).as("no wait for a retry never made").isEmpty();
  }

  @Test
  void aShortRetryWaitOnARateLimitedRouteLeavesThePoolsConnectionToTheApplicationsOtherCalls()
      throws Exception {
    // As in ApacheRetrying4Test: a pool of one connection per route, a 503 with a small body
    // retried after 100 ms on a route the rate limit governs. Kept through the wait (a75f9d6), its
    // lease made another thread's call wait the whole backoff for a connection, and fail with
    // ConnectionRequestTimeoutException when its connection request timeout was shorter.
    PoolingHttpClientConnectionManager pool = new PoolingHttpClientConnectionManager();
    pool.setDefaultMaxPerRoute(1);
    server.otherwise(ok("done"));
    server.enqueue(status(503).body("busy, come back"));
    java.util.concurrent.atomic.AtomicReference<Object> other =
        new java.util.concurrent.atomic.AtomicReference<>();
    // During the retry's wait, another application thread calls the route. Its connection request
    // waits at most 2 s: the lease it waits for is held by the thread blocked here.
    dev.retryagent.engine.Sleeper duringTheWait =
        time.withOtherCallerAtFirstWait(
            () -> {
              HttpGet get = new HttpGet(server.url("/other"));
              get.setConfig(
                  org.apache.hc.client5.http.config.RequestConfig.custom()
                      .setConnectionRequestTimeout(org.apache.hc.core5.util.Timeout.ofSeconds(2))
                      .build());
              return client.execute(get, r -> EntityUtils.toString(r.getEntity()));
            },
            other);
    RetryEngine engine =
        TestEngines.rateLimited(time, TestEngines.neverRefilled(10), duringTheWait, events);
    client =
        RetryExecHandler.addTo(HttpClients.custom().setConnectionManager(pool), engine).build();

    assertThat(call(new HttpGet(server.url("/items")))[0]).isEqualTo("200");
    assertThat(other.get()).as("the other thread's call").isEqualTo("done");
    assertThat(server.awaitRequests(3)).isEqualTo(requests(3));
  }

  @Test
  void aStrategySetAfterAddToIsNotGovernedAndARetryLeavesRoomForItsResend() throws Exception {
    HttpClientBuilder b =
        RetryExecHandler.addTo(HttpClients.custom(), engine(Mode.ENFORCE, r -> r.maxAttempts(3)));
    client = b.setRetryStrategy(ONCE_AT_ONCE).build();
    server.otherwise(status(503));

    assertThat(call(new HttpGet(server.url("/items")))[0]).isEqualTo("503");
    // HttpClient sent it twice by itself: a retry would likely be two more, one too many.
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(giveUpReason()).isEqualTo(GiveUpReason.ATTEMPTS);
  }

  @Test
  void addToWrapsTheApplicationsOwnStrategyAndNeverTwice() throws Exception {
    HttpClientBuilder b = HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE);
    RetryEngine engine = engine(Mode.ENFORCE, r -> r);

    assertThat(GovernedRetryStrategy.govern(b)).isTrue();
    assertThat(GovernedRetryStrategy.govern(b)).isTrue();
    RetryExecHandler.addTo(b, engine);

    Object field = readStrategy(b);
    assertThat(field).isInstanceOf(GovernedRetryStrategy.class);
    assertThat(((GovernedRetryStrategy) field).own()).isSameAs(ONCE_AT_ONCE);
  }

  @Test
  void outsideACallOfOursHttpClientsStrategyDecidesAlone() {
    AlwaysResends own = new AlwaysResends();
    GovernedRetryStrategy governed = (GovernedRetryStrategy) GovernedRetryStrategy.around(own);

    BasicClassicHttpResponse a503 = new BasicClassicHttpResponse(503);
    assertThat(governed.retryRequest(a503, 1, null)).isTrue();
    assertThat(governed.retryRequest(new HttpGet("/"), new NoHttpResponseException("x"), 1, null))
        .isTrue();
    assertThat(governed.getRetryInterval(a503, 1, null)).isEqualTo(TimeValue.ofSeconds(7));
    assertThat(own.asked).isEqualTo(3);
  }

  @Test
  void aPassThroughCallInsideAnAttemptIsNotCountedForIt() throws Exception {
    RetryEngine engine = engine(Mode.ENFORCE, r -> r);
    RetryExecHandler.Attempt outer =
        new RetryExecHandler.Attempt(engine.newCall(FakeRequest.get()), 1);
    RetryExecHandler.CURRENT.set(outer);
    try {
      Object[] seen = new Object[1];
      ExecChain chain =
          (request, scope) -> {
            seen[0] = RetryExecHandler.CURRENT.get();
            return new BasicClassicHttpResponse(200);
          };
      RetryExecHandler.passThrough(new HttpGet("/"), null, chain);
      assertThat(seen[0]).isNull();
      assertThat(RetryExecHandler.CURRENT.get()).isSameAs(outer);
    } finally {
      RetryExecHandler.CURRENT.remove();
    }
  }

  private static Object readStrategy(HttpClientBuilder b) throws Exception {
    Field f = HttpClientBuilder.class.getDeclaredField("retryStrategy");
    f.setAccessible(true);
    return f.get(b);
  }

  /** A strategy that always wants to resend, after 7 s, and counts how often it was asked. */
  private static final class AlwaysResends implements HttpRequestRetryStrategy {
    int asked;

    @Override
    public boolean retryRequest(
        HttpRequest request, IOException exception, int execCount, HttpContext context) {
      asked++;
      return true;
    }

    @Override
    public boolean retryRequest(HttpResponse response, int execCount, HttpContext context) {
      asked++;
      return true;
    }

    @Override
    public TimeValue getRetryInterval(HttpResponse response, int execCount, HttpContext context) {
      asked++;
      return TimeValue.ofSeconds(7);
    }
  }

  /**
   * The application's own entity fails while HttpClient writes it (its source's IOException, not
   * the connection's). It was taken for the host's failure: a breaker that opens on one failure
   * opened and refused the host's next call, HttpClient's own resend of a repeatable entity after
   * it counted as the host's failure too, and a failure the policy retries (a timeout of the
   * application's source) was retried by us. Now the call ends as cancelled, with HttpClient's own
   * exception and the requests HttpClient alone sends.
   */
  @Test
  void aFailureOfTheApplicationsOwnEntityIsNotTheHostsAndEndsAsWithoutTheAgent() throws Exception {
    server.otherwise(ok("fine"));
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.maxAttempts(3),
            CircuitBreakerPolicy.builder()
                .countWindow(1)
                .minimumCalls(1)
                .openFor(java.time.Duration.ofMinutes(1))
                .build(),
            events);
    client =
        RetryExecHandler.addTo(HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE), engine).build();

    // A one-shot entity: HttpClient's retry never resends it, and throws the failure itself.
    assertThat(sideBySide(() -> upload(false, new IOException("disk"))))
        .isExactlyInstanceOf(IOException.class)
        .hasMessage("disk");
    // A repeatable one: HttpClient resends the PUT once by itself.
    assertThat(sideBySide(() -> upload(true, new IOException("disk"))))
        .isExactlyInstanceOf(IOException.class)
        .hasMessage("disk");
    // A timeout of the application's source, which the policy retries when it is the host's.
    assertThat(sideBySide(() -> upload(true, new SocketTimeoutException("Read timed out"))))
        .isExactlyInstanceOf(SocketTimeoutException.class);

    assertThat(retriesOfOurs()).isZero();
    assertThat(events)
        .noneSatisfy(e -> assertThat(e.type()).isEqualTo(RetryEvent.Type.BREAKER_REJECTED));
    // Each given up as the application's failure, not as a cancel nobody made.
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(
            GiveUpReason.APPLICATION_FAILED,
            GiveUpReason.APPLICATION_FAILED,
            GiveUpReason.APPLICATION_FAILED);
    // The breaker is closed: the host's next call goes through.
    assertThat(call(new HttpGet(server.url("/items")))).containsExactly("200", "fine");
  }

  /**
   * An entity that says it is longer than what it writes: HttpCore 5 writes what it has, raises no
   * error, and the server waits for the rest until the client's response timeout ends the request.
   * That timeout is of the application's making, not the host's: the call ends with it as
   * HttpClient alone ends it, neither retried nor a failure for the host's breaker. Before, a
   * breaker that opens on one failure opened and refused the host's next call. (One that writes
   * more than it says is cut at its length by HttpCore, with or without the agent.)
   */
  @Test
  void anEntityShorterThanItsLengthIsNotTheHostsFailure() throws Exception {
    server.otherwise(ok("fine"));
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.maxAttempts(3).retryOnExceptions(List.of("java.io.IOException")),
            CircuitBreakerPolicy.builder()
                .countWindow(1)
                .minimumCalls(1)
                .openFor(java.time.Duration.ofMinutes(1))
                .build(),
            events);
    client =
        RetryExecHandler.addTo(HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE), engine).build();
    java.util.concurrent.atomic.AtomicInteger writes =
        new java.util.concurrent.atomic.AtomicInteger();
    java.util.function.Supplier<HttpPut> shortPut =
        () -> {
          HttpPut put = shortPut(writes);
          // The server waits for the rest of the body: bounded by the client's response timeout.
          put.setConfig(
              org.apache.hc.client5.http.config.RequestConfig.custom()
                  .setResponseTimeout(org.apache.hc.core5.util.Timeout.ofMilliseconds(300))
                  .build());
          return put;
        };
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE).build()) {
      plain = catchThrowable(() -> c.execute(shortPut.get(), r -> r.getCode()));
    }
    assertThat(plain).isInstanceOf(SocketTimeoutException.class);
    int plainWrites = writes.getAndSet(0);

    Throwable ours = catchThrowable(() -> client.execute(shortPut.get(), r -> r.getCode()));

    assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
    assertThat(writes).hasValue(plainWrites);
    assertThat(retriesOfOurs()).isZero();
    // The breaker is closed: the host's next call goes through.
    assertThat(call(new HttpGet(server.url("/items")))).containsExactly("200", "fine");
  }

  /**
   * The server answers the short request itself: it waited for the rest and gave up, 408. That
   * answer is the host's reaction to the application's broken request, not the host's outcome: the
   * response goes to the application as HttpClient alone gives it, neither retried (the policy
   * retries 408 here) nor a failure for the breaker (which counts 408 here). Before, the call was
   * retried (the short body written again) and the breaker of one failure opened.
   */
  @Test
  void anAnswerToAnEntityShorterThanItsLengthIsTheApplicationsNotTheHosts() throws Exception {
    server.otherwise(status(408).waitingForBodyAtMost(200));
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.maxAttempts(3).retryOnStatuses(StatusSet.of("408")),
            CircuitBreakerPolicy.builder()
                .countWindow(1)
                .minimumCalls(1)
                .failOnStatuses(StatusSet.of("408"))
                .openFor(java.time.Duration.ofMinutes(1))
                .build(),
            events);
    client =
        RetryExecHandler.addTo(HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE), engine).build();
    java.util.concurrent.atomic.AtomicInteger writes =
        new java.util.concurrent.atomic.AtomicInteger();
    int requests = server.requestCount();
    String[] plain;
    try (CloseableHttpClient c = HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE).build()) {
      plain = c.execute(shortPut(writes), r -> new String[] {String.valueOf(r.getCode())});
    }
    assertThat(plain).containsExactly("408");
    int plainWrites = writes.getAndSet(0);
    int plainRequests = server.requestCount() - requests;

    String[] ours =
        client.execute(shortPut(writes), r -> new String[] {String.valueOf(r.getCode())});

    assertThat(ours).containsExactly(plain);
    assertThat(writes).hasValue(plainWrites);
    assertThat(server.requestCount() - requests).isEqualTo(2 * plainRequests);
    assertThat(retriesOfOurs()).isZero();
    assertThat(giveUpReason()).isEqualTo(GiveUpReason.APPLICATION_FAILED);
    // The breaker is closed: the host's next call goes through.
    server.otherwise(ok("fine"));
    assertThat(call(new HttpGet(server.url("/items")))).containsExactly("200", "fine");
  }

  /**
   * One rule for the rate-limit permit of an attempt the application's own failure ended: it stays
   * spent when the host got a whole request it may act on, and goes back when nothing or a cut
   * request went out. HttpCore 5 ends a chunked body it began when the entity fails (the server
   * reads a whole request: the permit stays spent); a body of a declared length that fails, or that
   * is shorter than its length (the server waited for the rest: an I/O failure or a 408), is cut
   * (the permit goes back, as for OkHttp, java.net.http and HttpURLConnection). Before, every one
   * kept it: with the host's bucket of one empty, its next call was refused.
   */
  @Test
  void theRateLimitPermitGoesBackOnlyWhenTheApplicationCutTheRequest() throws Exception {
    server.otherwise(ok("fine"));
    int requests = server.requestCount();
    // A chunked body HttpCore ends: the server got a request, and the permit stays spent.
    rateLimitedToOne();
    assertThat(catchThrowable(() -> client.execute(upload(false, new IOException("disk")), r -> 0)))
        .hasMessage("disk");
    await()
        .atMost(java.time.Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(server.requestCount()).isEqualTo(requests + 1));
    assertThatThrownBy(() -> call(new HttpGet(server.url("/items"))))
        .isInstanceOf(dev.retryagent.engine.RateLimitedException.class);

    // A body of a declared length that fails: cut, the permit back.
    rateLimitedToOne();
    int cutConnection = server.connectionCount(); // the fresh client's first
    HttpPut fixed = new HttpPut(server.url("/upload"));
    fixed.setEntity(
        new InputStreamEntity(
            source.open(new IOException("disk")), 100, ContentType.APPLICATION_OCTET_STREAM));
    assertThat(catchThrowable(() -> client.execute(fixed, r -> 0))).hasMessage("disk");
    // The server reads the cut PUT's head on a thread of its own, and takes the script's next
    // action then: late, it would take the 408 enqueued below for another request. Done with that
    // connection, it has taken its own.
    await().atMost(java.time.Duration.ofSeconds(5)).until(() -> server.isDoneWith(cutConnection));
    assertThat(call(new HttpGet(server.url("/items")))).containsExactly("200", "fine");

    // A short body answered 408: cut, the permit back.
    rateLimitedToOne();
    server.enqueue(status(408).waitingForBodyAtMost(200));
    int answered =
        client.execute(shortPut(new java.util.concurrent.atomic.AtomicInteger()), r -> r.getCode());
    assertThat(answered).isEqualTo(408);
    assertThat(call(new HttpGet(server.url("/items")))).containsExactly("200", "fine");

    // A short body the client's timeout ends: cut, the permit back.
    rateLimitedToOne();
    HttpPut timedOut = shortPut(new java.util.concurrent.atomic.AtomicInteger());
    timedOut.setConfig(
        org.apache.hc.client5.http.config.RequestConfig.custom()
            .setResponseTimeout(org.apache.hc.core5.util.Timeout.ofMilliseconds(300))
            .build());
    assertThat(catchThrowable(() -> client.execute(timedOut, r -> r.getCode())))
        .isInstanceOf(SocketTimeoutException.class);
    assertThat(call(new HttpGet(server.url("/items")))).containsExactly("200", "fine");
  }

  @Test
  void aRetriedGzipResponseReachesTheApplicationDecodedOnceAsAPlainOne() throws Exception {
    // HttpClient's ContentCompressionExec, below us, decodes each attempt's answer (its
    // Content-Encoding and Content-Length removed). Side by side with the plain client answered
    // 200 at once: the retried call (a 503 whose gzip is broken, then the 200) gives the same
    // status, headers and body, decoded once.
    String alone;
    try (CloseableHttpClient plain = HttpClients.createDefault()) {
      server.enqueue(ok("fine").gzipped());
      alone = plain.execute(new HttpGet(server.url("/gz")), GovernedRetryStrategyTest::seen);
    }
    byHand(b -> b);
    server.enqueue(status(503).brokenGzip(), ok("fine").gzipped());
    assertThat(client.execute(new HttpGet(server.url("/gz")), GovernedRetryStrategyTest::seen))
        .isEqualTo(alone)
        .endsWith("fine");
    assertThat(server.requests()).hasSize(3);
  }

  /** What the application sees of {@code r}: status, headers, body. */
  private static String seen(org.apache.hc.core5.http.ClassicHttpResponse r)
      throws IOException, org.apache.hc.core5.http.ParseException {
    StringBuilder b = new StringBuilder().append(r.getCode());
    for (org.apache.hc.core5.http.Header h : r.getHeaders()) {
      b.append(' ').append(h.getName()).append(": ").append(h.getValue());
    }
    return b.append(' ').append(EntityUtils.toString(r.getEntity())).toString();
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.EnumSource(Bodiless.class)
  void aRetriedResponseWithoutABodyLeavesItsConnectionToTheNextAttempt(Bodiless c)
      throws Exception {
    // Side by side with the plain client (its own retries off): nothing to read of the retried
    // response, so the retry goes out on its connection at once, as the plain client's next call
    // does.
    java.net.URI uri = java.net.URI.create(server.url("/r"));
    client = RetryExecHandler.addTo(HttpClients.custom(), engine(Mode.ENFORCE, c::policy)).build();
    try (CloseableHttpClient plain = HttpClients.custom().disableAutomaticRetries().build()) {
      c.sideBySide(server, () -> answer(plain, c, uri), () -> answer(client, c, uri), true, "");
    }
  }

  private static String answer(CloseableHttpClient client, Bodiless c, java.net.URI uri)
      throws IOException {
    return client.execute(
        new org.apache.hc.client5.http.classic.methods.HttpUriRequestBase(c.method, uri),
        r ->
            r.getCode() + " " + (r.getEntity() == null ? "" : EntityUtils.toString(r.getEntity())));
  }

  @Test
  void aRetriedResponseWithAnEndlessBodyHasItsConnectionClosedNotReadToItsEnd() throws Exception {
    // Side by side: the plain client (its own retries off: its strategy, too, reads a retried
    // body to its end) gives the application the 503 as its head arrives; the application's
    // cancel closes it unread (a close would read it to its end). Through us the retry comes at
    // once, on a connection of its own, the 503's closed past Discards.LIMIT, never read to its
    // end (1 GiB, sent until the client goes).
    try (CloseableHttpClient plain = HttpClients.custom().disableAutomaticRetries().build()) {
      server.enqueue(status(503).endless());
      HttpGet get = new HttpGet(server.url("/plain"));
      org.apache.hc.client5.http.impl.classic.CloseableHttpResponse r = plain.execute(get);
      assertThat(r.getCode()).isEqualTo(503);
      get.cancel();
      try {
        r.close();
      } catch (IOException closedByTheCancel) {
        // "Socket closed": what a close after the cancel tells the plain application
      }
    }
    byHand(b -> b);
    server.enqueue(status(503).endless(), ok("fine"));
    String[] answer =
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
            java.time.Duration.ofSeconds(10), () -> call(new HttpGet(server.url("/retried"))));
    assertThat(answer).containsExactly("200", "fine");
    await().until(() -> server.isDoneWith(1));
    assertThat(server.connectionCount()).isEqualTo(3);
  }

  @Test
  void aRetryHoldsNoPooledConnectionWhileItWaits() throws Exception {
    // The retried 503 is read and closed before the wait: another thread's call on a pool of one
    // connection runs during it, where a connection kept leased would make it fail after the
    // pool's connectionRequestTimeout.
    java.util.concurrent.CountDownLatch waiting = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch waitOver = new java.util.concurrent.CountDownLatch(1);
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(
                nanos -> {
                  waiting.countDown();
                  waitOver.await();
                })
            .scheduler(time)
            .build();
    PoolingHttpClientConnectionManager pool = poolOfOne();
    client =
        RetryExecHandler.addTo(
                leaseWithin200Ms(HttpClients.custom().setConnectionManager(pool)), engine)
            .build();
    server.enqueue(status(503), ok("other"), ok("fine"));
    java.util.concurrent.CompletableFuture<String[]> retried =
        java.util.concurrent.CompletableFuture.supplyAsync(
            () -> {
              try {
                return call(new HttpGet(server.url("/retried")));
              } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
            });
    try {
      assertThat(waiting.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      assertThat(pool.getTotalStats().getLeased()).isZero();
      assertThat(call(new HttpGet(server.url("/other")))).containsExactly("200", "other");
    } finally {
      waitOver.countDown();
    }
    assertThat(retried.get(10, java.util.concurrent.TimeUnit.SECONDS))
        .containsExactly("200", "fine");
    assertThat(server.connectionCount()).isEqualTo(1);
  }

  @Test
  void aCallThatTimedOutWaitingForAPooledConnectionGivesItsRateLimitPermitBack() throws Exception {
    // The application holds the pool's only connection (a response it has not closed), and its
    // next call waits connectionRequestTimeout for one: ConnectionRequestTimeoutException, nothing
    // sent, with or without the agent. That call's rate-limit permit stayed spent, a permit of the
    // host's bucket gone for a request the host never got, and the call after, which the host
    // would have served, was refused (RateLimitedException). With HttpClient's retries on (the
    // resend counter sees the exchange the lease ended) and off (nothing below to see it).
    whileThePoolIsHeld(
        GovernedRetryStrategyTest::leaseWithin200Ms,
        (c, pool) ->
            assertThatThrownBy(() -> c.execute(new HttpGet(server.url("/items")), r -> r.getCode()))
                .isInstanceOf(org.apache.hc.core5.http.ConnectionRequestTimeoutException.class));
  }

  @Test
  void aCallCancelledWhileItWaitedForAPooledConnectionGivesItsRateLimitPermitBack()
      throws Exception {
    // The application holds the pool's only connection, and cancels (HttpUriRequestBase.cancel())
    // its next call while that waits for one: HttpCore's pool throws CancellationException,
    // nothing sent, with or without the agent. That call's rate-limit permit stayed spent, and the
    // call after, which the host would have served, was refused (RateLimitedException). With
    // HttpClient's retries on (the resend counter sees the exchange the cancel ended) and off.
    whileThePoolIsHeld(
        b -> b,
        (c, pool) -> {
          HttpGet waiting = new HttpGet(server.url("/items"));
          java.util.concurrent.CompletableFuture<Throwable> failed =
              java.util.concurrent.CompletableFuture.supplyAsync(
                  () -> catchThrowable(() -> c.execute(waiting, r -> r.getCode())));
          await()
              .atMost(java.time.Duration.ofSeconds(10))
              .until(() -> pool.getTotalStats().getPending() == 1);
          waiting.cancel();
          assertThat(failed.get(10, java.util.concurrent.TimeUnit.SECONDS))
              .isInstanceOf(java.util.concurrent.CancellationException.class);
        });
  }

  @Test
  void aCallInterruptedWhileItWaitedForAPooledConnectionGivesItsRateLimitPermitBack()
      throws Exception {
    // The application holds the pool's only connection, and interrupts the thread of its next call
    // while that waits for one: HttpClient's lease ends in RequestFailedException("Request
    // aborted") around the InterruptedException, the flag set again, nothing sent, with or without
    // the agent. That call's rate-limit permit stayed spent (only a bare CancellationException or
    // a lease timeout counted as not sent), and the host's next call was refused
    // (RateLimitedException). HttpCore 5 leaks the pool's connection to the interrupted lease
    // (plain too: a call after it waits for ever), so the next call goes through another client
    // of the same engine, the same host's bucket.
    server.otherwise(ok("fine"));
    String plain = null;
    RetryEngine engine = TestEngines.rateLimitedTo(2, time, events);
    for (boolean ours : new boolean[] {false, true}) {
      PoolingHttpClientConnectionManager pool = poolOfOne();
      HttpClientBuilder b = HttpClients.custom().setConnectionManager(pool);
      try (CloseableHttpClient c = ours ? RetryExecHandler.addTo(b, engine).build() : b.build()) {
        org.apache.hc.client5.http.impl.classic.CloseableHttpResponse held =
            c.execute(new HttpGet(server.url("/held")));
        java.util.concurrent.CompletableFuture<String> failed =
            new java.util.concurrent.CompletableFuture<>();
        Thread caller =
            new Thread(
                () -> {
                  Throwable e =
                      catchThrowable(
                          () -> c.execute(new HttpGet(server.url("/items")), r -> r.getCode()));
                  failed.complete(
                      e
                          + " around "
                          + e.getCause()
                          + ", interrupted "
                          + Thread.currentThread().isInterrupted());
                });
        caller.start();
        await()
            .atMost(java.time.Duration.ofSeconds(10))
            .until(() -> pool.getTotalStats().getPending() == 1);
        caller.interrupt();
        String outcome = failed.get(10, java.util.concurrent.TimeUnit.SECONDS);
        if (ours) {
          assertThat(outcome).isEqualTo(plain);
        } else {
          plain = outcome;
          assertThat(plain)
              .isEqualTo(
                  "org.apache.hc.client5.http.impl.classic.RequestFailedException: Request aborted"
                      + " around java.lang.InterruptedException, interrupted true");
        }
        held.close();
      }
    }
    assertThat(server.awaitRequests(2)).as("the held calls only").isEqualTo(requests(2));
    try (CloseableHttpClient other = RetryExecHandler.addTo(HttpClients.custom(), engine).build()) {
      int status = other.execute(new HttpGet(server.url("/items")), r -> r.getCode());
      assertThat(status).as("the interrupted call's permit back").isEqualTo(200);
    }
  }

  /** What the application does with its client while the pool's one connection is held. */
  private interface WhileHeld {
    void run(CloseableHttpClient c, PoolingHttpClientConnectionManager pool) throws Exception;
  }

  /**
   * Side by side, the plain client and ours (a host's bucket of two, never refilled: the held
   * call's and one more), each on a pool of one connection and {@code configure}d, with
   * HttpClient's retries on and off: the application holds the pool's connection with a response it
   * has not closed, {@code failing} fails a call of its that sends nothing, then the application
   * closes the held response and the host's next call is served, 200, on the permit the failed call
   * did not keep. Two requests reach the server.
   */
  private void whileThePoolIsHeld(UnaryOperator<HttpClientBuilder> configure, WhileHeld failing)
      throws Exception {
    server.otherwise(ok("fine"));
    for (boolean retries : new boolean[] {true, false}) {
      for (boolean ours : new boolean[] {false, true}) {
        PoolingHttpClientConnectionManager pool = poolOfOne();
        HttpClientBuilder b = configure.apply(HttpClients.custom().setConnectionManager(pool));
        if (!retries) {
          b.disableAutomaticRetries();
        }
        int requests = server.requestCount();
        try (CloseableHttpClient c =
            ours
                ? RetryExecHandler.addTo(b, TestEngines.rateLimitedTo(2, time, events)).build()
                : b.build()) {
          org.apache.hc.client5.http.impl.classic.CloseableHttpResponse held =
              c.execute(new HttpGet(server.url("/held")));
          failing.run(c, pool);
          held.close();
          int after = c.execute(new HttpGet(server.url("/items")), r -> r.getCode());
          assertThat(after).as("retries %s, through the agent %s", retries, ours).isEqualTo(200);
        }
        assertThat(server.requestCount() - requests).isEqualTo(2);
      }
    }
  }

  @Test
  void aCallThatFoundNoPooledConnectionInTimeGivesUpAsPoolTimeoutNotCancelled(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    // The application holds the pool's only connection, and its next call finds none within
    // connectionRequestTimeout: ConnectionRequestTimeoutException, nothing sent, with or without
    // the agent. The agent counted it (give_ups_total reason="cancelled"), logged it ("cancelled
    // by the caller") and dead-lettered it (outcome and reason "cancelled"): a cancel nobody made.
    // With HttpClient's retries on and off.
    server.otherwise(ok("fine"));
    dev.retryagent.internal.observe.RetryMetrics metrics =
        new dev.retryagent.internal.observe.RetryMetrics();
    java.nio.file.Path file = dir.resolve("dead.jsonl");
    dev.retryagent.internal.observe.DeadLetterWriter deadLetters =
        new dev.retryagent.internal.observe.DeadLetterWriter(file, e -> {});
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .listener(metrics)
            .listener(deadLetters)
            .build();
    for (boolean retries : new boolean[] {true, false}) {
      for (boolean ours : new boolean[] {false, true}) {
        HttpClientBuilder b =
            leaseWithin200Ms(HttpClients.custom().setConnectionManager(poolOfOne()));
        if (!retries) {
          b.disableAutomaticRetries();
        }
        try (CloseableHttpClient c = ours ? RetryExecHandler.addTo(b, engine).build() : b.build()) {
          org.apache.hc.client5.http.impl.classic.CloseableHttpResponse held =
              c.execute(new HttpGet(server.url("/held")));
          assertThatThrownBy(() -> c.execute(new HttpGet(server.url("/items")), r -> r.getCode()))
              .as("retries %s, through the agent %s", retries, ours)
              .isInstanceOf(org.apache.hc.core5.http.ConnectionRequestTimeoutException.class);
          held.close();
        }
      }
    }
    deadLetters.close();
    assertThat(giveUps(metrics, GiveUpReason.POOL_TIMEOUT)).isEqualTo(2);
    assertThat(giveUps(metrics, GiveUpReason.CANCELLED)).isZero();
    List<String> lines = java.nio.file.Files.readAllLines(file);
    assertThat(lines).hasSize(2);
    for (String line : lines) {
      assertThat(line)
          .contains("\"outcome\":\"pool-timeout\"")
          .contains("\"reason\":\"pool-timeout\"");
    }
  }

  @Test
  void aCallWhoseLeaseThePoolFailedAtItsDeadlineGivesItsRateLimitPermitBack() throws Exception {
    // The pool fails a pending lease itself once its deadline passed (HttpCore's pool, when a
    // connection is released after the deadline and before the wait for the lease timed out):
    // HttpClient throws RequestFailedException around the pool's DeadlineTimeoutException, with or
    // without the agent, nothing sent. Only ConnectionRequestTimeoutException gave the permit
    // back: this one kept it spent, and the call after, which the host would have served, was
    // refused (RateLimitedException). A race on the real clock, made certain by a pool that fails
    // the lease so. With HttpClient's retries on and off.
    server.otherwise(ok("fine"));
    for (boolean retries : new boolean[] {true, false}) {
      for (boolean ours : new boolean[] {false, true}) {
        DeadlinePool pool = new DeadlinePool();
        HttpClientBuilder b = HttpClients.custom().setConnectionManager(pool);
        if (!retries) {
          b.disableAutomaticRetries();
        }
        events.clear();
        // A bucket of two, never refilled (the clock stands): the held call's, and one more.
        RetryEngine engine =
            TestEngines.engine(
                time,
                Mode.ENFORCE,
                r -> r,
                Policy.defaults().budget(),
                CircuitBreakerPolicy.defaults(),
                dev.retryagent.policy.RateLimitPolicy.builder()
                    .enabled(true)
                    .perSecond(1)
                    .burst(2)
                    .maxWait(java.time.Duration.ZERO)
                    .build(),
                events);
        int requests = server.requestCount();
        try (CloseableHttpClient c = ours ? RetryExecHandler.addTo(b, engine).build() : b.build()) {
          org.apache.hc.client5.http.impl.classic.CloseableHttpResponse held =
              c.execute(new HttpGet(server.url("/held")));
          pool.failNextLease = true;
          assertThatThrownBy(() -> c.execute(new HttpGet(server.url("/items")), r -> r.getCode()))
              .isInstanceOf(org.apache.hc.client5.http.impl.classic.RequestFailedException.class)
              .hasCauseInstanceOf(org.apache.hc.core5.util.DeadlineTimeoutException.class);
          held.close();
          int after = c.execute(new HttpGet(server.url("/items")), r -> r.getCode());
          assertThat(after).as("retries %s, through the agent %s", retries, ours).isEqualTo(200);
        }
        assertThat(server.requestCount() - requests).isEqualTo(2);
        if (ours) {
          assertThat(events)
              .singleElement()
              .satisfies(e -> assertThat(e.reason()).isEqualTo(GiveUpReason.POOL_TIMEOUT));
        }
      }
    }
  }

  /**
   * A pool of one connection whose next lease, once asked to, fails as HttpCore's pool fails a
   * pending lease at its deadline: the lease's get throws ExecutionException around {@code
   * DeadlineTimeoutException} (the manager passes it on; only its own wait's TimeoutException
   * becomes ConnectionRequestTimeoutException).
   */
  static final class DeadlinePool
      implements org.apache.hc.client5.http.io.HttpClientConnectionManager {
    final PoolingHttpClientConnectionManager pool = poolOfOne();
    volatile boolean failNextLease;

    @Override
    public org.apache.hc.client5.http.io.LeaseRequest lease(
        String id,
        org.apache.hc.client5.http.HttpRoute route,
        org.apache.hc.core5.util.Timeout timeout,
        Object state) {
      if (!failNextLease) {
        return pool.lease(id, route, timeout, state);
      }
      failNextLease = false;
      return new org.apache.hc.client5.http.io.LeaseRequest() {
        @Override
        public org.apache.hc.client5.http.io.ConnectionEndpoint get(
            org.apache.hc.core5.util.Timeout t) throws java.util.concurrent.ExecutionException {
          throw new java.util.concurrent.ExecutionException(
              org.apache.hc.core5.util.DeadlineTimeoutException.from(
                  org.apache.hc.core5.util.Deadline.MIN_VALUE));
        }

        @Override
        public boolean cancel() {
          return false;
        }
      };
    }

    @Override
    public void release(
        org.apache.hc.client5.http.io.ConnectionEndpoint endpoint,
        Object newState,
        TimeValue validDuration) {
      pool.release(endpoint, newState, validDuration);
    }

    @Override
    public void connect(
        org.apache.hc.client5.http.io.ConnectionEndpoint endpoint,
        TimeValue connectTimeout,
        HttpContext context)
        throws IOException {
      pool.connect(endpoint, connectTimeout, context);
    }

    @Override
    public void upgrade(
        org.apache.hc.client5.http.io.ConnectionEndpoint endpoint, HttpContext context)
        throws IOException {
      pool.upgrade(endpoint, context);
    }

    @Override
    public void close(org.apache.hc.core5.io.CloseMode mode) {
      pool.close(mode);
    }

    @Override
    public void close() {
      pool.close();
    }
  }

  /** The give-ups {@code metrics} counted for {@code reason}, every route and host. */
  static long giveUps(dev.retryagent.internal.observe.RetryMetrics metrics, GiveUpReason reason) {
    return metrics.series().stream().mapToLong(x -> x.counters().giveUps(reason)).sum();
  }

  /** A pool of one connection: a call waits for it while another holds it. */
  private static PoolingHttpClientConnectionManager poolOfOne() {
    PoolingHttpClientConnectionManager pool = new PoolingHttpClientConnectionManager();
    pool.setMaxTotal(1);
    pool.setDefaultMaxPerRoute(1);
    return pool;
  }

  /** {@code b}, its calls waiting 200 ms at most for a pooled connection. */
  private static HttpClientBuilder leaseWithin200Ms(HttpClientBuilder b) {
    return b.setDefaultRequestConfig(
        org.apache.hc.client5.http.config.RequestConfig.custom()
            .setConnectionRequestTimeout(org.apache.hc.core5.util.Timeout.ofMilliseconds(200))
            .build());
  }

  /** A fresh client whose host's bucket holds one permit, never refilled. */
  private void rateLimitedToOne() throws IOException {
    if (client != null) {
      client.close();
    }
    client =
        RetryExecHandler.addTo(
                HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE),
                TestEngines.rateLimitedTo(1, time, events))
            .build();
  }

  /** A PUT whose repeatable entity says 20 bytes and writes 8. */
  private HttpPut shortPut(java.util.concurrent.atomic.AtomicInteger writes) {
    HttpPut put = new HttpPut(server.url("/upload"));
    put.setEntity(
        new AbstractHttpEntity(ContentType.APPLICATION_OCTET_STREAM, null, false) {
          @Override
          public boolean isRepeatable() {
            return true;
          }

          @Override
          public long getContentLength() {
            return 20;
          }

          @Override
          public InputStream getContent() {
            return new java.io.ByteArrayInputStream(new byte[8]);
          }

          @Override
          public void writeTo(OutputStream out) throws IOException {
            writes.incrementAndGet();
            out.write(new byte[8]);
          }

          @Override
          public boolean isStreaming() {
            return false;
          }

          @Override
          public void close() {}
        });
    return put;
  }

  /**
   * As above, with a source that fails anew on each write, as a real file's or stream's read makes
   * a new exception each time. HttpClient's own resend of a repeatable entity writes a copy of the
   * application's request, not the attempt's (HttpRequestRetryExec copies scope.originalRequest),
   * so its entity was not watched: the resend's failure, a new exception, was taken for the host's
   * (the breaker of one failure opened, and the call ended with CircuitBreakerOpenException where
   * HttpClient alone throws the IOException).
   */
  @Test
  void anEntityThatFailsAnewOnHttpClientsOwnResendIsStillTheApplications() throws Exception {
    server.otherwise(ok("fine"));
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.maxAttempts(3),
            CircuitBreakerPolicy.builder()
                .countWindow(1)
                .minimumCalls(1)
                .openFor(java.time.Duration.ofMinutes(1))
                .build(),
            events);
    client =
        RetryExecHandler.addTo(HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE), engine).build();

    assertThat(sideBySide(() -> upload(true, () -> new IOException("disk"))))
        .isExactlyInstanceOf(IOException.class)
        .hasMessage("disk");
    assertThat(source.opened()).isEqualTo(2); // HttpClient resent it once, as without the agent

    assertThat(retriesOfOurs()).isZero();
    assertThat(events)
        .noneSatisfy(e -> assertThat(e.type()).isEqualTo(RetryEvent.Type.BREAKER_REJECTED));
    assertThat(call(new HttpGet(server.url("/items")))).containsExactly("200", "fine");
  }

  /** The sources of the entities {@link #upload} makes: one opened per write (an exchange). */
  private final FailingSource source = new FailingSource();

  /**
   * The failure of a request made by a plain client (the same strategy) and by ours, the same,
   * after the same exchanges: as many writes of the entity, each on a connection of its own that
   * the server saw (a failed write drops its connection). Returns ours.
   */
  private Throwable sideBySide(java.util.function.Supplier<HttpPut> request) throws IOException {
    int connections = server.connectionCount();
    int requests = server.requestCount();
    source.reset();
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE).build()) {
      plain = catchThrowable(() -> c.execute(request.get(), r -> r.getCode()));
    }
    int plainWrites = source.opened();
    assertThat(plainWrites).isPositive();
    awaitConnections(connections + plainWrites);
    int plainRequests = server.requestCount() - requests;

    source.reset();
    Throwable ours = catchThrowable(() -> client.execute(request.get(), r -> r.getCode()));
    assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
    assertThat(source.opened()).isEqualTo(plainWrites);
    awaitConnections(connections + 2 * plainWrites);
    // 5.x ends the chunked body it was writing as it closes the stream: the server may read it
    // whole, and answer.
    await()
        .atMost(java.time.Duration.ofSeconds(5))
        .untilAsserted(
            () -> assertThat(server.requestCount() - requests).isEqualTo(2 * plainRequests));
    return ours;
  }

  private void awaitConnections(int expected) {
    await()
        .atMost(java.time.Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(server.connectionCount()).isEqualTo(expected));
  }

  /** A PUT whose entity's own source fails with {@code failure} after its first bytes. */
  private HttpPut upload(boolean repeatable, IOException failure) {
    return upload(repeatable, () -> failure);
  }

  /**
   * A PUT whose entity's own source fails after its first bytes, with a new exception from {@code
   * failure} each time.
   */
  private HttpPut upload(boolean repeatable, java.util.function.Supplier<IOException> failure) {
    HttpPut put = new HttpPut(server.url("/upload"));
    if (!repeatable) {
      put.setEntity(
          new InputStreamEntity(source.open(failure), -1, ContentType.APPLICATION_OCTET_STREAM));
      return put;
    }
    put.setEntity(
        new AbstractHttpEntity(ContentType.APPLICATION_OCTET_STREAM, null, true) {
          @Override
          public boolean isRepeatable() {
            return true;
          }

          @Override
          public long getContentLength() {
            return -1;
          }

          @Override
          public InputStream getContent() {
            return source.open(failure);
          }

          @Override
          public void writeTo(OutputStream out) throws IOException {
            InputStream in = getContent();
            for (int b = in.read(); b >= 0; b = in.read()) {
              out.write(b);
            }
          }

          @Override
          public boolean isStreaming() {
            return false;
          }

          @Override
          public void close() {}
        });
    return put;
  }

  @Test
  void theRefusalOfAClosedClientIsNotTheHostsSuccessThatClosesItsBreaker() throws Exception {
    // A closed client refuses a call, or the retry of a call that waited while the application
    // closed it, with IllegalStateException "Connection pool shut down", nothing sent. Taken for
    // the host's answer, it was the half-open breaker's trial and its success: the breaker closed
    // without a request, and the failing host got every other client's calls again.
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.maxAttempts(1),
            CircuitBreakerPolicy.builder()
                .countWindow(2)
                .minimumCalls(2)
                .openFor(java.time.Duration.ofSeconds(1))
                .halfOpenCalls(1)
                .build(),
            events);
    client = RetryExecHandler.addTo(HttpClients.custom(), engine).build();
    server.otherwise(status(503));
    for (int i = 0; i < 2; i++) {
      assertThat(call(new HttpGet(server.url("/items")))[0]).isEqualTo("503");
    }
    time.advance(java.time.Duration.ofSeconds(2).toNanos()); // half-open: one trial
    CloseableHttpClient closed = RetryExecHandler.addTo(HttpClients.custom(), engine).build();
    closed.close();

    assertThatThrownBy(() -> closed.execute(new HttpGet(server.url("/items")), r -> r.getCode()))
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("Connection pool shut down");

    // The trial is still to be made: it fails, and the breaker opens again.
    assertThat(call(new HttpGet(server.url("/items")))[0]).isEqualTo("503");
    assertThatThrownBy(() -> call(new HttpGet(server.url("/items"))))
        .isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @Test
  void theApplicationsExecInterceptorsRunOncePerCallAboveOursAndOncePerAttemptUnderIt()
      throws Exception {
    // docs/apache-httpclient.md, "5.x: where our handler sits": ours is first in the chain, put
    // there when the builder is made (as the agent's hook does), so an exec interceptor the
    // application adds first afterwards sits above it, and one placed by an element of
    // HttpClient's own (before REDIRECT, last) sits under it: each of our attempts runs it again,
    // as HttpClient's own resend runs those under RETRY. Request interceptors run per exchange.
    // Side by side: a 503 HttpClient resends itself without us, and we retry with us.
    int[] plain = interceptorRuns(false);
    int[] ours = interceptorRuns(true);

    // first, before REDIRECT, last, request interceptor; requests on the wire
    assertThat(plain).containsExactly(1, 1, 2, 2, 2);
    assertThat(ours).containsExactly(1, 2, 2, 2, 2);
    assertThat(retriesOfOurs()).isEqualTo(1);
  }

  private int[] interceptorRuns(boolean withUs) throws Exception {
    java.util.concurrent.atomic.AtomicInteger[] runs =
        new java.util.concurrent.atomic.AtomicInteger[4];
    for (int i = 0; i < runs.length; i++) {
      runs[i] = new java.util.concurrent.atomic.AtomicInteger();
    }
    HttpClientBuilder b = HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE);
    if (withUs) {
      RetryExecHandler.addTo(b, engine(Mode.ENFORCE, r -> r.maxAttempts(3)));
    }
    b.addExecInterceptorFirst("app-first", counting(runs[0]));
    b.addExecInterceptorBefore(
        org.apache.hc.client5.http.impl.ChainElement.REDIRECT.name(),
        "app-before-redirect",
        counting(runs[1]));
    b.addExecInterceptorLast("app-last", counting(runs[2]));
    b.addRequestInterceptorFirst((request, entity, context) -> runs[3].incrementAndGet());
    int before = server.requestCount();
    server.enqueue(status(503), ok("done"));
    String got;
    try (CloseableHttpClient c = b.build()) {
      got =
          c.execute(
              new HttpGet(server.url("/items")),
              r -> r.getCode() + " " + EntityUtils.toString(r.getEntity()));
    }
    assertThat(got).isEqualTo("200 done");
    return new int[] {
      runs[0].get(), runs[1].get(), runs[2].get(), runs[3].get(), server.requestCount() - before
    };
  }

  private static org.apache.hc.client5.http.classic.ExecChainHandler counting(
      java.util.concurrent.atomic.AtomicInteger runs) {
    return (request, scope, chain) -> {
      runs.incrementAndGet();
      return chain.proceed(request, scope);
    };
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(
      strings = {
        "org.apache.hc.core5.http.ProtocolException",
        "org.apache.hc.core5.http.HttpException",
        "java.lang.RuntimeException"
      })
  void aProtocolFailureIsNeverRetriedWhateverRetryOnExceptionsNames(String named) throws Exception {
    // Redirected past maxRedirects: RedirectExec, below the handler, throws RedirectException (a
    // ProtocolException, an HttpException), which the handler carries through the retry loop as
    // a RuntimeException with it as cause. Before, a retryOn.exceptions naming one of these
    // matched the carrier or its cause and the call was retried: 2 requests an attempt, 6.
    byHand(r -> r.maxAttempts(3).retryOnExceptions(List.of(named)));
    server.otherwise(status(302).header("Location", "/again"));
    HttpGet get = new HttpGet(server.url("/items"));
    get.setConfig(
        org.apache.hc.client5.http.config.RequestConfig.custom().setMaxRedirects(1).build());

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> call(get))
        .isInstanceOf(org.apache.hc.client5.http.ClientProtocolException.class)
        .hasCauseInstanceOf(org.apache.hc.client5.http.RedirectException.class);
    assertThat(server.awaitRequests(2)).isEqualTo(ScriptedHttpServer.requests(2));
    assertThat(retriesOfOurs()).isZero();
  }
}
