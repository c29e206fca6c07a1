package dev.retryagent.apache4;

import static dev.retryagent.testing.ScriptedHttpServer.Action.closeWithoutResponse;
import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.policy.TransportFailure;
import dev.retryagent.testing.Bodiless;
import dev.retryagent.testing.FailingSource;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;
import org.apache.http.NoHttpResponseException;
import org.apache.http.client.ClientProtocolException;
import org.apache.http.client.HttpRequestRetryHandler;
import org.apache.http.client.NonRepeatableRequestException;
import org.apache.http.client.methods.HttpGet;
import org.apache.http.client.methods.HttpPut;
import org.apache.http.entity.AbstractHttpEntity;
import org.apache.http.entity.InputStreamEntity;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.DefaultHttpRequestRetryHandler;
import org.apache.http.impl.client.HttpClientBuilder;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.impl.conn.PoolingHttpClientConnectionManager;
import org.apache.http.protocol.BasicHttpContext;
import org.apache.http.util.EntityUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * HttpClient 4.5's own retry handler, governed by the call in progress: a real 4.5 client on a
 * loopback server that drops connections without an answer (HttpClient resends a GET up to 3 times
 * by itself), the server counting requests.
 */
class GovernedRetryHandlerTest {
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

  /** By hand, from the builder: HttpClient's default handler, governed. */
  private void fromBuilder(Mode mode, UnaryOperator<RetryPolicy.Builder> retry) {
    client = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine(mode, retry));
  }

  private String get(String path) throws IOException {
    return client.execute(
        new HttpGet(server.url(path)),
        r -> {
          EntityUtils.consume(r.getEntity());
          return String.valueOf(r.getStatusLine().getStatusCode());
        });
  }

  private long retriesOfOurs() {
    return events.stream().filter(e -> e.type() == RetryEvent.Type.RETRY).count();
  }

  @Test
  void aDroppedGetIsRetriedByTheCallOnlyUpToMaxAttempts() {
    fromBuilder(Mode.ENFORCE, r -> r.maxAttempts(3));
    server.otherwise(closeWithoutResponse());

    assertThatThrownBy(() -> get("/items")).isInstanceOf(NoHttpResponseException.class);
    // HttpClient alone sends it 4 times; governed, it resends nothing and we retry twice.
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(retriesOfOurs()).isEqualTo(2);
  }

  @Test
  void withRetriesDisabledHttpClientResendsAsWithoutTheAgent() {
    fromBuilder(Mode.ENFORCE, r -> r.enabled(false));
    server.otherwise(closeWithoutResponse());

    assertThatThrownBy(() -> get("/items")).isInstanceOf(NoHttpResponseException.class);
    assertThat(server.requestCount()).isEqualTo(4);
  }

  @Test
  void inObserveModeHttpClientResendsAsWithoutTheAgent() {
    fromBuilder(Mode.OBSERVE, r -> r.maxAttempts(3));
    server.otherwise(closeWithoutResponse());

    assertThatThrownBy(() -> get("/items")).isInstanceOf(NoHttpResponseException.class);
    assertThat(server.requestCount()).isEqualTo(4);
  }

  @Test
  void inARetryOfOursAResendThePolicyDoesNotChooseNeedsAnAttemptLeft() {
    // a 503 is ours to retry, a dropped connection is not (retryOn.transport: connect only)
    fromBuilder(
        Mode.ENFORCE, r -> r.maxAttempts(2).retryOnTransport(EnumSet.of(TransportFailure.CONNECT)));
    server.enqueue(status(503)).otherwise(closeWithoutResponse());

    assertThatThrownBy(() -> get("/items")).isInstanceOf(NoHttpResponseException.class);
    // the 503, our retry dropped, and no resend: it would be a third request
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void aClientBuiltWithoutUsIsCountedAndARetryLeavesRoomForItsResends() {
    client =
        RetryingCloseableHttpClient.wrap(
            HttpClients.createDefault(), engine(Mode.ENFORCE, r -> r.maxAttempts(6)));
    server.otherwise(closeWithoutResponse());

    assertThatThrownBy(() -> get("/items")).isInstanceOf(NoHttpResponseException.class);
    // 4 requests by HttpClient alone in the first attempt; a retry would be 4 more: 8 > 6
    assertThat(server.requestCount()).isEqualTo(4);
    assertThat(events).anySatisfy(e -> assertThat(e.reason()).isEqualTo(GiveUpReason.ATTEMPTS));
  }

  @Test
  void aOneShotEntityThatFailedWhileWrittenFailsAsWithoutTheAgent() throws IOException {
    // An I/O failure while the entity is written (the server resets the upload): HttpClient's
    // handler says yes (not sent yet), and its RetryExec, finding the entity written and not
    // repeatable, throws NonRepeatableRequestException. Governed, the call refused (the body cannot
    // be replayed) and the application got the bare SocketException. (A failure of the entity's
    // own source is the application's: aFailureOfTheApplicationsOwnEntity... below.)
    server.otherwise(ScriptedHttpServer.Action.reset().beforeBody());
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      plain = catchThrowable(() -> c.execute(resetUpload(), r -> r.getStatusLine()));
    }
    assertThat(plain)
        .isExactlyInstanceOf(ClientProtocolException.class)
        .hasCauseExactlyInstanceOf(NonRepeatableRequestException.class)
        .hasRootCauseInstanceOf(SocketException.class);

    fromBuilder(Mode.ENFORCE, r -> r.maxAttempts(3));
    Throwable ours = catchThrowable(() -> client.execute(resetUpload(), r -> r.getStatusLine()));

    assertThat(ours)
        .isExactlyInstanceOf(ClientProtocolException.class)
        .hasCauseExactlyInstanceOf(NonRepeatableRequestException.class)
        .hasRootCauseInstanceOf(SocketException.class);
    assertThat(retriesOfOurs()).isZero();
    assertThat(events)
        .anySatisfy(e -> assertThat(e.reason()).isEqualTo(GiveUpReason.BODY_NOT_REPLAYABLE));
  }

  /**
   * A PUT whose streamed entity (256 MB, made as it is read) the server resets after its head: far
   * more than the connection's buffers, so a write fails with the reset (or a broken pipe).
   */
  private HttpPut resetUpload() {
    HttpPut put = new HttpPut(server.url("/upload"));
    InputStream source =
        new InputStream() {
          private long left = 256L << 20;

          @Override
          public int read() {
            return left-- > 0 ? 'a' : -1;
          }

          @Override
          public int read(byte[] b, int off, int len) {
            if (left <= 0) {
              return -1;
            }
            int n = (int) Math.min(len, left);
            java.util.Arrays.fill(b, off, off + n, (byte) 'a');
            left -= n;
            return n;
          }
        };
    put.setEntity(new InputStreamEntity(source, -1));
    return put;
  }

  /**
   * The application's own entity fails while HttpClient writes it (its source's IOException, not
   * the connection's). It was taken for the host's failure: a breaker that opens on one failure
   * opened and refused the host's next call, HttpClient's own resends of a repeatable entity after
   * it counted as the host's failures too, and a failure the policy retries (a timeout of the
   * application's source) was retried by us. Now the call ends as cancelled, with HttpClient's own
   * exception and the requests HttpClient alone sends.
   */
  @Test
  void aFailureOfTheApplicationsOwnEntityIsNotTheHostsAndEndsAsWithoutTheAgent() throws Exception {
    server.otherwise(status(200));
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
    client = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine);

    // A one-shot entity: HttpClient's handler says yes, RetryExec refuses to resend it.
    Throwable oneShot = sideBySide(() -> upload(false, new IOException("disk")));
    assertThat(oneShot)
        .isExactlyInstanceOf(ClientProtocolException.class)
        .hasCauseExactlyInstanceOf(NonRepeatableRequestException.class)
        .hasRootCauseMessage("disk");
    // A repeatable one: HttpClient resends the PUT (not sent yet) 3 times by itself.
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
    assertThat(get("/items")).isEqualTo("200");
  }

  /**
   * An entity that says it is longer than what it writes: HttpCore writes what it has, raises no
   * error, and the server waits for the rest until the client's socket timeout ends the request.
   * That timeout is of the application's making, not the host's: the call ends with it as
   * HttpClient alone ends it, neither retried nor a failure for the host's breaker. Before, a
   * breaker that opens on one failure opened and refused the host's next call, and the PUT was
   * retried, its short body written again. (One that writes more than it says is cut at its length
   * by HttpCore, with or without the agent: the request is whole, nothing to tell apart.)
   */
  @Test
  void anEntityShorterThanItsLengthIsNotTheHostsFailure() throws Exception {
    server.otherwise(status(200));
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r ->
                r.maxAttempts(3)
                    .retryOnTransport(EnumSet.allOf(TransportFailure.class))
                    .retryOnExceptions(List.of("java.io.IOException")),
            CircuitBreakerPolicy.builder()
                .countWindow(1)
                .minimumCalls(1)
                .openFor(java.time.Duration.ofMinutes(1))
                .build(),
            events);
    client = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine);
    java.util.concurrent.atomic.AtomicInteger writes =
        new java.util.concurrent.atomic.AtomicInteger();
    java.util.function.Supplier<HttpPut> shortPut =
        () -> {
          HttpPut put = shortPut(writes);
          // The server waits for the rest of the body: bounded by the client's read timeout.
          put.setConfig(
              org.apache.http.client.config.RequestConfig.custom().setSocketTimeout(300).build());
          return put;
        };
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      plain = catchThrowable(() -> c.execute(shortPut.get(), r -> r.getStatusLine()));
    }
    assertThat(plain).isInstanceOf(SocketTimeoutException.class);
    int plainWrites = writes.getAndSet(0);

    Throwable ours = catchThrowable(() -> client.execute(shortPut.get(), r -> r.getStatusLine()));

    assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
    assertThat(writes).hasValue(plainWrites);
    assertThat(retriesOfOurs()).isZero();
    // The breaker is closed: the host's next call goes through.
    assertThat(get("/items")).isEqualTo("200");
  }

  /** A PUT whose entity says 20 bytes and writes 8, counting its writes. */
  private HttpPut shortPut(java.util.concurrent.atomic.AtomicInteger writes) {
    HttpPut put = new HttpPut(server.url("/upload"));
    put.setEntity(
        new org.apache.http.entity.ByteArrayEntity(new byte[8]) {
          @Override
          public long getContentLength() {
            return 20;
          }

          @Override
          public void writeTo(OutputStream out) throws IOException {
            writes.incrementAndGet();
            super.writeTo(out);
          }
        });
    return put;
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
    client = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine);
    java.util.concurrent.atomic.AtomicInteger writes =
        new java.util.concurrent.atomic.AtomicInteger();
    java.util.function.Supplier<HttpPut> shortPut =
        () -> {
          HttpPut put = shortPut(writes);
          return put;
        };
    int requests = server.requestCount();
    int plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      plain = c.execute(shortPut.get(), r -> r.getStatusLine().getStatusCode());
    }
    assertThat(plain).isEqualTo(408);
    int plainWrites = writes.getAndSet(0);
    int plainRequests = server.requestCount() - requests;

    int ours = client.execute(shortPut.get(), r -> r.getStatusLine().getStatusCode());

    assertThat(ours).isEqualTo(plain);
    assertThat(writes).hasValue(plainWrites);
    assertThat(server.requestCount() - requests).isEqualTo(2 * plainRequests);
    assertThat(retriesOfOurs()).isZero();
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.APPLICATION_FAILED);
    // The breaker is closed: the host's next call goes through.
    server.otherwise(status(200));
    assertThat(get("/items")).isEqualTo("200");
  }

  /**
   * One rule for the rate-limit permit of an attempt the application's own failure ended: it stays
   * spent when the host got a whole request it may act on, and goes back when nothing or a cut
   * request went out. HttpCore 4.4 never ends a body whose entity failed (it closes the stream only
   * after writeTo returned), chunked or not, and a body shorter than its length leaves the server
   * waiting for the rest: every such request is cut, and the permit goes back, as for OkHttp,
   * java.net.http and HttpURLConnection. Before, each kept it: with the host's bucket of one empty,
   * its next call was refused (RateLimitedException).
   */
  @Test
  void theRateLimitPermitOfARequestTheApplicationCutGoesBack() throws Exception {
    server.otherwise(status(200));
    int requests = server.requestCount();
    // A chunked body whose source fails: cut, never a request at the server.
    rateLimitedToOne();
    int chunkedConnection = server.connectionCount(); // the fresh client's first
    assertThat(catchThrowable(() -> client.execute(upload(false, new IOException("disk")), r -> 0)))
        .hasRootCauseMessage("disk");
    assertThat(server.requestCount()).isEqualTo(requests);
    assertThat(get("/items")).isEqualTo("200");

    // A body of a declared length whose source fails: cut, the permit back.
    rateLimitedToOne();
    int fixedConnection = server.connectionCount();
    HttpPut fixed = new HttpPut(server.url("/upload"));
    fixed.setEntity(new InputStreamEntity(source.open(new IOException("disk")), 100));
    assertThat(catchThrowable(() -> client.execute(fixed, r -> 0))).hasRootCauseMessage("disk");
    assertThat(get("/items")).isEqualTo("200");
    // The server may read a cut request's head (on a thread of its own, one a connection) and takes
    // the script's next action then: late, it would take the 408 enqueued below for another
    // request, which would get the 200 that waits for its whole body. Done with both connections,
    // it has taken its own.
    await()
        .atMost(java.time.Duration.ofSeconds(5))
        .until(() -> server.isDoneWith(chunkedConnection) && server.isDoneWith(fixedConnection));

    // A short body answered 408: cut, the permit back.
    rateLimitedToOne();
    server.enqueue(status(408).waitingForBodyAtMost(200));
    HttpPut shortPut = new HttpPut(server.url("/upload"));
    shortPut.setEntity(
        new org.apache.http.entity.ByteArrayEntity(new byte[8]) {
          @Override
          public long getContentLength() {
            return 20;
          }
        });
    int answered = client.execute(shortPut, r -> r.getStatusLine().getStatusCode());
    assertThat(answered).isEqualTo(408);
    assertThat(get("/items")).isEqualTo("200");
  }

  @Test
  void aRetriedGzipResponseReachesTheApplicationDecodedOnceAsAPlainOne() throws Exception {
    // HttpClient's ResponseContentEncoding, below us, decodes each attempt's answer (its
    // Content-Encoding and Content-Length removed). Side by side with the plain client answered
    // 200 at once: the retried call (a 503 whose gzip is broken, then the 200) gives the same
    // status, headers and body, decoded once.
    String alone;
    try (CloseableHttpClient plain = HttpClients.createDefault()) {
      server.enqueue(ok("fine").gzipped());
      alone = plain.execute(new HttpGet(server.url("/gz")), GovernedRetryHandlerTest::seen);
    }
    fromBuilder(Mode.ENFORCE, b -> b);
    server.enqueue(status(503).brokenGzip(), ok("fine").gzipped());
    assertThat(client.execute(new HttpGet(server.url("/gz")), GovernedRetryHandlerTest::seen))
        .isEqualTo(alone)
        .endsWith("fine");
    assertThat(server.requests()).hasSize(3);
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(strings = {"plain", "gzipped", "gzipped 1 MiB"})
  void aRetriedResponseGoesBackToThePoolGzippedOrNot(String body) throws Exception {
    // A gzipped 503 was read through HttpClient's decoder, which stops at the gzip trailer,
    // before the end of the body as it came, the end that gives the connection back: the
    // response's close then closed the connection, and the retry opened a second one. The body is
    // read as it came now, within Discards.LIMIT of its bytes on the wire: 1 MiB of text that
    // gzips to a few KiB keeps its connection too (decoded, it was past the limit).
    fromBuilder(Mode.ENFORCE, b -> b);
    ScriptedHttpServer.Action busy =
        status(503).body(body.endsWith("MiB") ? "busy".repeat(1 << 18) : "busy, come back");
    server.enqueue(body.equals("plain") ? busy : busy.gzipped(), ok("fine").gzipped());
    assertThat(client.execute(new HttpGet(server.url("/gz")), GovernedRetryHandlerTest::seen))
        .endsWith("fine");
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(server.connectionCount()).as("the retry on the 503's connection").isEqualTo(1);
  }

  /** What the application sees of {@code r}: status, headers, body. */
  private static String seen(org.apache.http.HttpResponse r) throws IOException {
    StringBuilder b = new StringBuilder().append(r.getStatusLine().getStatusCode());
    for (org.apache.http.Header h : r.getAllHeaders()) {
      b.append(' ').append(h.getName()).append(": ").append(h.getValue());
    }
    return b.append(' ').append(EntityUtils.toString(r.getEntity())).toString();
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.EnumSource(Bodiless.class)
  void aRetriedResponseWithoutABodyLeavesItsConnectionToTheNextAttempt(Bodiless c)
      throws Exception {
    // Side by side: nothing to read of the retried response, so the retry goes out on its
    // connection at once, as the plain client's next call does.
    java.net.URI uri = java.net.URI.create(server.url("/r"));
    fromBuilder(Mode.ENFORCE, c::policy);
    try (CloseableHttpClient plain = HttpClients.createDefault()) {
      c.sideBySide(server, () -> answer(plain, c, uri), () -> answer(client, c, uri), true, "");
    }
  }

  private static String answer(CloseableHttpClient client, Bodiless c, java.net.URI uri)
      throws IOException {
    return client.execute(
        org.apache.http.client.methods.RequestBuilder.create(c.method).setUri(uri).build(),
        r ->
            r.getStatusLine().getStatusCode()
                + " "
                + (r.getEntity() == null ? "" : EntityUtils.toString(r.getEntity())));
  }

  @Test
  void aRetriedResponseWithAnEndlessBodyHasItsConnectionClosedNotReadToItsEnd() throws Exception {
    // Side by side: the plain client gives the application the 503 as its head arrives (closing
    // the response closes its connection unread). Through us the retry comes at once, on a
    // connection of its own, the 503's closed past Discards.LIMIT, never read to its end (1 GiB,
    // sent until the client goes).
    try (CloseableHttpClient plain = HttpClients.createDefault()) {
      server.enqueue(status(503).endless());
      try (org.apache.http.client.methods.CloseableHttpResponse r =
          plain.execute(new HttpGet(server.url("/plain")))) {
        assertThat(r.getStatusLine().getStatusCode()).isEqualTo(503);
      }
    }
    fromBuilder(Mode.ENFORCE, b -> b);
    server.enqueue(status(503).endless(), ok("fine"));
    String body =
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
            java.time.Duration.ofSeconds(10),
            () ->
                client.execute(
                    new HttpGet(server.url("/retried")), r -> EntityUtils.toString(r.getEntity())));
    assertThat(body).isEqualTo("fine");
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
        RetryingCloseableHttpClient.wrap(
            leaseWithin200Ms(HttpClients.custom().setConnectionManager(pool)), engine);
    server.enqueue(
        status(503), ScriptedHttpServer.Action.ok("other"), ScriptedHttpServer.Action.ok("fine"));
    java.util.concurrent.CompletableFuture<String> retried =
        java.util.concurrent.CompletableFuture.supplyAsync(
            () -> {
              try {
                return client.execute(
                    new HttpGet(server.url("/retried")), r -> EntityUtils.toString(r.getEntity()));
              } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
            });
    try {
      assertThat(waiting.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      assertThat(pool.getTotalStats().getLeased()).isZero();
      String other =
          client.execute(
              new HttpGet(server.url("/other")), r -> EntityUtils.toString(r.getEntity()));
      assertThat(other).isEqualTo("other");
    } finally {
      waitOver.countDown();
    }
    assertThat(retried.get(10, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo("fine");
    assertThat(server.connectionCount()).isEqualTo(1);
  }

  @Test
  void aCallThatTimedOutWaitingForAPooledConnectionGivesItsRateLimitPermitBack() throws Exception {
    // The application holds the pool's only connection (a response it has not closed), and its
    // next call waits connectionRequestTimeout for one: ConnectionPoolTimeoutException, nothing
    // sent, with or without the agent. That call's rate-limit permit stayed spent, a permit of the
    // host's bucket gone for a request the host never got, and the call after, which the host
    // would have served, was refused (RateLimitedException).
    whileThePoolIsHeld(
        GovernedRetryHandlerTest::leaseWithin200Ms,
        (c, pool) ->
            assertThatThrownBy(
                    () ->
                        c.execute(
                            new HttpGet(server.url("/items")),
                            r -> r.getStatusLine().getStatusCode()))
                .isInstanceOf(org.apache.http.conn.ConnectionPoolTimeoutException.class));
  }

  @Test
  void aCallThatFoundNoPooledConnectionInTimeGivesUpAsPoolTimeoutNotCancelled(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    // The application holds the pool's only connection, and its next call finds none within
    // connectionRequestTimeout: ConnectionPoolTimeoutException, nothing sent, with or without the
    // agent. The agent counted it (give_ups_total reason="cancelled"), logged it ("cancelled by
    // the caller") and dead-lettered it (outcome and reason "cancelled"): a cancel nobody made.
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
    for (boolean ours : new boolean[] {false, true}) {
      HttpClientBuilder b =
          leaseWithin200Ms(HttpClients.custom().setConnectionManager(poolOfOne()));
      try (CloseableHttpClient c = ours ? RetryingCloseableHttpClient.wrap(b, engine) : b.build()) {
        org.apache.http.client.methods.CloseableHttpResponse held =
            c.execute(new HttpGet(server.url("/held")));
        assertThatThrownBy(
                () ->
                    c.execute(
                        new HttpGet(server.url("/items")), r -> r.getStatusLine().getStatusCode()))
            .as("through the agent %s", ours)
            .isInstanceOf(org.apache.http.conn.ConnectionPoolTimeoutException.class);
        held.close();
      }
    }
    deadLetters.close();
    assertThat(giveUps(metrics, GiveUpReason.POOL_TIMEOUT)).isEqualTo(1);
    assertThat(giveUps(metrics, GiveUpReason.CANCELLED)).isZero();
    List<String> lines = java.nio.file.Files.readAllLines(file);
    assertThat(lines).hasSize(1);
    assertThat(lines.get(0))
        .contains("\"outcome\":\"pool-timeout\"")
        .contains("\"reason\":\"pool-timeout\"");
  }

  /** The give-ups {@code metrics} counted for {@code reason}, every route and host. */
  static long giveUps(dev.retryagent.internal.observe.RetryMetrics metrics, GiveUpReason reason) {
    return metrics.series().stream().mapToLong(x -> x.counters().giveUps(reason)).sum();
  }

  @Test
  void aCallAbortedWhileItWaitedForAPooledConnectionGivesItsRateLimitPermitBack() throws Exception {
    // The application holds the pool's only connection, and aborts (HttpRequestBase.abort()) its
    // next call while that waits for one: RequestAbortedException, nothing sent, with or without
    // the agent. That call's rate-limit permit stayed spent, and the call after, which the host
    // would have served, was refused (RateLimitedException).
    whileThePoolIsHeld(
        b -> b,
        (c, pool) -> {
          HttpGet waiting = new HttpGet(server.url("/items"));
          java.util.concurrent.CompletableFuture<Throwable> failed =
              java.util.concurrent.CompletableFuture.supplyAsync(
                  () -> catchThrowable(() -> c.execute(waiting, r -> r.getStatusLine())));
          await()
              .atMost(java.time.Duration.ofSeconds(10))
              .until(() -> pool.getTotalStats().getPending() == 1);
          waiting.abort();
          assertThat(failed.get(10, java.util.concurrent.TimeUnit.SECONDS))
              .isInstanceOf(org.apache.http.impl.execchain.RequestAbortedException.class);
        });
  }

  /** What the application does with its client while the pool's one connection is held. */
  private interface WhileHeld {
    void run(CloseableHttpClient c, PoolingHttpClientConnectionManager pool) throws Exception;
  }

  /**
   * Side by side, the plain client and ours (a host's bucket of two, never refilled: the held
   * call's and one more), each on a pool of one connection and {@code configure}d: the application
   * holds the pool's connection with a response it has not closed, {@code failing} fails a call of
   * its that sends nothing, then the application closes the held response and the host's next call
   * is served, 200, on the permit the failed call did not keep. Two requests reach the server.
   */
  private void whileThePoolIsHeld(UnaryOperator<HttpClientBuilder> configure, WhileHeld failing)
      throws Exception {
    server.otherwise(ScriptedHttpServer.Action.ok("fine"));
    for (boolean ours : new boolean[] {false, true}) {
      PoolingHttpClientConnectionManager pool = poolOfOne();
      HttpClientBuilder b = configure.apply(HttpClients.custom().setConnectionManager(pool));
      int requests = server.requestCount();
      try (CloseableHttpClient c =
          ours
              ? RetryingCloseableHttpClient.wrap(b, TestEngines.rateLimitedTo(2, time, events))
              : b.build()) {
        org.apache.http.client.methods.CloseableHttpResponse held =
            c.execute(new HttpGet(server.url("/held")));
        failing.run(c, pool);
        held.close();
        int after =
            c.execute(new HttpGet(server.url("/items")), r -> r.getStatusLine().getStatusCode());
        assertThat(after).as("through the agent %s", ours).isEqualTo(200);
      }
      assertThat(server.requestCount() - requests).isEqualTo(2);
    }
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
        org.apache.http.client.config.RequestConfig.custom()
            .setConnectionRequestTimeout(200)
            .build());
  }

  /**
   * A retry the rate limit refuses after a 503 whose body is longer than a copy takes (8 KiB) ends
   * with that 503 and its whole body, as without the agent: kept through the retry's short wait,
   * the retry's permit asked for before it went, its connection then back to the pool as the
   * application reads it. Before, it was released at the decision, and the call failed with the
   * rate limit's exception ("...released for the retry"). A body a copy takes is copied and
   * released before the wait instead, its lease free for the application's other calls: the call
   * ends with the copy, which the caller cannot tell from the 503.
   */
  @ParameterizedTest
  @ValueSource(ints = {20_000, 100})
  void aRetryTheRateLimitRefusesAfterA503EndsWithThat503WhateverItsBody(int length)
      throws Exception {
    StringBuilder page = new StringBuilder();
    while (page.length() < length) {
      page.append("busy, come back later. ");
    }
    rateLimitedToOne();
    server.enqueue(status(503).body(page.toString()), ok("never"));

    String got =
        client.execute(
            new HttpGet(server.url("/items")),
            r -> r.getStatusLine().getStatusCode() + " " + EntityUtils.toString(r.getEntity()));

    assertThat(got).isEqualTo("503 " + page);
    assertThat(server.requestCount()).as("the retry not made").isEqualTo(1);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.RATE_LIMITED);
  }

  /** A fresh client whose host's bucket holds one permit, never refilled. */
  private void rateLimitedToOne() throws IOException {
    if (client != null) {
      client.close();
    }
    client =
        RetryingCloseableHttpClient.wrap(
            HttpClients.custom(), TestEngines.rateLimitedTo(1, time, events));
  }

  /** The sources of the entities {@link #upload} makes: one opened per write (an exchange). */
  private final FailingSource source = new FailingSource();

  /**
   * The failure of a request made by a plain client and by ours, the same, after the same
   * exchanges: as many writes of the entity, each on a connection of its own that the server saw (a
   * failed write drops its connection). Returns ours.
   */
  private Throwable sideBySide(java.util.function.Supplier<HttpPut> request) throws IOException {
    int connections = server.connectionCount();
    int requests = server.requestCount();
    source.reset();
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      plain = catchThrowable(() -> c.execute(request.get(), r -> r.getStatusLine()));
    }
    int plainWrites = source.opened();
    assertThat(plainWrites).isPositive();
    awaitConnections(connections + plainWrites);
    int plainRequests = server.requestCount() - requests;

    source.reset();
    Throwable ours = catchThrowable(() -> client.execute(request.get(), r -> r.getStatusLine()));
    assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
    assertThat(ours.getCause() == null ? null : ours.getCause().getClass())
        .isEqualTo(plain.getCause() == null ? null : plain.getCause().getClass());
    assertThat(source.opened()).isEqualTo(plainWrites);
    awaitConnections(connections + 2 * plainWrites);
    assertThat(server.requestCount() - requests).isZero(); // no body was ever whole
    return ours;
  }

  private void awaitConnections(int expected) {
    await()
        .atMost(java.time.Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(server.connectionCount()).isEqualTo(expected));
  }

  /** A PUT whose entity's own source fails with {@code failure} after its first bytes. */
  private HttpPut upload(boolean repeatable, IOException failure) {
    HttpPut put = new HttpPut(server.url("/upload"));
    if (!repeatable) {
      put.setEntity(new InputStreamEntity(source.open(failure), -1));
      return put;
    }
    put.setEntity(
        new AbstractHttpEntity() {
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
        });
    return put;
  }

  @Test
  void theBuildersOwnHandlerIsTheOneGoverned() throws Exception {
    HttpRequestRetryHandler once = new DefaultHttpRequestRetryHandler(1, false);
    HttpClientBuilder b = HttpClients.custom().setRetryHandler(once);

    assertThat(GovernedRetryHandler.govern(b)).isTrue();
    assertThat(GovernedRetryHandler.govern(b)).isTrue();

    Field f = HttpClientBuilder.class.getDeclaredField("retryHandler");
    f.setAccessible(true);
    Object handler = f.get(b);
    assertThat(handler).isInstanceOf(GovernedRetryHandler.class);
    assertThat(((GovernedRetryHandler) handler).own()).isSameAs(once);
  }

  @Test
  void outsideACallOfOursHttpClientsHandlerDecidesAlone() {
    HttpRequestRetryHandler governed =
        GovernedRetryHandler.around(DefaultHttpRequestRetryHandler.INSTANCE);
    BasicHttpContext context = new BasicHttpContext();
    context.setAttribute("http.request", new HttpGet("/"));

    assertThat(governed.retryRequest(new NoHttpResponseException("x"), 1, context)).isTrue();
    assertThat(governed.retryRequest(new NoHttpResponseException("x"), 4, context)).isFalse();
  }

  @Test
  void theRefusalOfAClosedClientIsNotTheHostsSuccessThatClosesItsBreaker() throws Exception {
    // As for 5.x (GovernedRetryStrategyTest): a closed client's "Connection pool shut down" was
    // the half-open breaker's trial and its success, without a request.
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
    client = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine);
    server.otherwise(status(503));
    for (int i = 0; i < 2; i++) {
      assertThat(get("/items")).startsWith("503");
    }
    time.advance(java.time.Duration.ofSeconds(2).toNanos()); // half-open: one trial
    CloseableHttpClient closed = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine);
    closed.close();

    assertThatThrownBy(() -> closed.execute(new HttpGet(server.url("/items"))))
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("Connection pool shut down");

    // The trial is still to be made: it fails, and the breaker opens again.
    assertThat(get("/items")).startsWith("503");
    assertThatThrownBy(() -> get("/items"))
        .isInstanceOf(dev.retryagent.engine.CircuitBreakerOpenException.class);
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @Test
  void theGetHttpClientFollowsAPostWithoutKeyWithIsResentAsWithoutUs() throws Exception {
    // A POST without key answered 303: HttpClient follows it with a GET, whose connection drops,
    // and its handler resends that GET (safe to send again; the POST is not resent).
    String[] plain = postRedirectedToADroppedGet(false);
    String[] ours = postRedirectedToADroppedGet(true);

    assertThat(plain)
        .containsExactly("200 receipt", "POST /charges", "GET /receipt", "GET /receipt");
    assertThat(ours).containsExactly(plain);
  }

  private String[] postRedirectedToADroppedGet(boolean withUs) throws Exception {
    org.apache.http.impl.client.HttpClientBuilder b = HttpClients.custom();
    int before = server.requestCount();
    server.enqueue(
        status(303).header("Location", "/receipt"), closeWithoutResponse(), ok("receipt"));
    String got;
    try (CloseableHttpClient c =
        withUs
            ? RetryingCloseableHttpClient.wrap(b, engine(Mode.ENFORCE, r -> r.maxAttempts(3)))
            : b.build()) {
      org.apache.http.client.methods.HttpPost post =
          new org.apache.http.client.methods.HttpPost(server.url("/charges"));
      post.setEntity(new org.apache.http.entity.StringEntity("{}", "UTF-8"));
      got =
          c.execute(
              post,
              r -> r.getStatusLine().getStatusCode() + " " + EntityUtils.toString(r.getEntity()));
    } catch (IOException e) {
      got = e.toString();
    }
    List<String> seen = new java.util.ArrayList<>();
    seen.add(got);
    server.requests().stream().skip(before).forEach(r -> seen.add(r.method + " " + r.path));
    return seen.toArray(new String[0]);
  }
}
