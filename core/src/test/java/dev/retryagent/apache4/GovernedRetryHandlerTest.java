package dev.retryagent.apache4;

import static dev.retryagent.testing.ScriptedHttpServer.Action.closeWithoutResponse;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

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
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.net.SocketException;
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
import org.apache.http.entity.InputStreamEntity;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.DefaultHttpRequestRetryHandler;
import org.apache.http.impl.client.HttpClientBuilder;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.protocol.BasicHttpContext;
import org.apache.http.util.EntityUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

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
    // An I/O failure while the entity is written (the server resets the upload, or the entity's
    // own source fails so): HttpClient's handler says yes (not sent yet), and its RetryExec,
    // finding
    // the entity written and not repeatable, throws NonRepeatableRequestException. Governed, the
    // call refused (the body cannot be replayed) and the application got the bare SocketException.
    server.otherwise(status(200));
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      plain = catchThrowable(() -> c.execute(resetUpload(), r -> r.getStatusLine()));
    }
    assertThat(plain)
        .isExactlyInstanceOf(ClientProtocolException.class)
        .hasCauseExactlyInstanceOf(NonRepeatableRequestException.class)
        .hasRootCauseMessage("Connection reset");

    fromBuilder(Mode.ENFORCE, r -> r.maxAttempts(3));
    Throwable ours = catchThrowable(() -> client.execute(resetUpload(), r -> r.getStatusLine()));

    assertThat(ours)
        .isExactlyInstanceOf(ClientProtocolException.class)
        .hasCauseExactlyInstanceOf(NonRepeatableRequestException.class)
        .hasRootCauseMessage("Connection reset");
    assertThat(retriesOfOurs()).isZero();
    assertThat(events)
        .anySatisfy(e -> assertThat(e.reason()).isEqualTo(GiveUpReason.BODY_NOT_REPLAYABLE));
  }

  /** A PUT whose streamed entity fails with a reset after its first bytes. */
  private HttpPut resetUpload() {
    HttpPut put = new HttpPut(server.url("/upload"));
    InputStream source =
        new InputStream() {
          private int read;

          @Override
          public int read() throws IOException {
            if (read == 16) {
              throw new SocketException("Connection reset");
            }
            read++;
            return 'a';
          }
        };
    put.setEntity(new InputStreamEntity(source, -1));
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
}
