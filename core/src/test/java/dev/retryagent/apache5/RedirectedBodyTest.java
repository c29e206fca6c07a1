package dev.retryagent.apache5;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.hc.client5.http.classic.methods.HttpPost;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.hc.core5.util.TimeValue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A POST with a repeatable entity redirected with 307 or 308, side by side: HttpClient 5 alone and
 * with our handler, on the same loopback server script. {@code RedirectExec} sends each hop as a
 * copy of the application's request (below our handler), entity and headers; HttpClient's retry
 * element resends a copy of it too. What the server receives and what the application gets must be
 * the same but for our retries, and every request of an attempt (its redirect hops and HttpClient's
 * own resends included) carries the attempt's number, as the JDK's and OkHttp's redirects and
 * resends of an attempt's request do.
 */
class RedirectedBodyTest {
  /** HttpClient's default strategy (a 429 or 503 resent once), without its 1 s wait. */
  private static final DefaultHttpRequestRetryStrategy ONCE_AT_ONCE =
      new DefaultHttpRequestRetryStrategy(1, TimeValue.ZERO_MILLISECONDS);

  private static final String ATTEMPT = "X-Retry-Attempt";

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

  private static HttpClientBuilder builder() {
    return HttpClients.custom().setRetryStrategy(ONCE_AT_ONCE);
  }

  /** Ours, retrying a keyed POST's 503 ({@code retryOn}: {@code statuses}). */
  private CloseableHttpClient withHandler(StatusSet statuses) {
    return RetryExecHandler.addTo(
            builder(),
            TestEngines.engine(
                time,
                Mode.ENFORCE,
                r ->
                    r.maxAttempts(3)
                        .unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY)
                        .attemptHeader(ATTEMPT)
                        .retryOnStatuses(statuses),
                CircuitBreakerPolicy.defaults(),
                events))
        .build();
  }

  private HttpPost keyedPost() {
    HttpPost post = new HttpPost(server.url("/start"));
    post.setHeader("Idempotency-Key", "k-1");
    post.setEntity(new StringEntity("{\"n\":1}", ContentType.APPLICATION_JSON));
    assertThat(post.getEntity().isRepeatable()).isTrue();
    return post;
  }

  private ScriptedHttpServer.Action redirect(int status) {
    return status(status).header("Location", server.url("/target"));
  }

  /** What the application gets: the status and body, or the exception (its cause's type). */
  private String call(HttpPost post) {
    try {
      return client.execute(post, r -> r.getCode() + " " + EntityUtils.toString(r.getEntity()));
    } catch (IOException e) {
      return e.getClass().getSimpleName()
          + (e.getCause() == null ? "" : " caused by " + e.getCause().getClass().getSimpleName());
    }
  }

  /** Each request the server got: method, path, body, key; and apart, its attempt header. */
  private List<String> requests() {
    return server.requests().stream()
        .map(r -> r.method + " " + r.path + " " + r.body + " key=" + r.header("Idempotency-Key"))
        .collect(Collectors.toList());
  }

  private List<String> attemptHeaders() {
    return server.requests().stream()
        .map(r -> String.valueOf(r.header(ATTEMPT)))
        .collect(Collectors.toList());
  }

  private long retriesOfOurs() {
    return events.stream().filter(e -> e.type() == RetryEvent.Type.RETRY).count();
  }

  @Test
  void aPostRedirectedWith307IsSentWithItsBodyToBothAsWithoutUs() throws Exception {
    client = builder().build();
    server.enqueue(redirect(307), ok("done"));
    String plain = call(keyedPost());
    List<String> plainRequests = requests();
    server.close();
    client.close();

    server = new ScriptedHttpServer();
    client = withHandler(StatusSet.of("503"));
    server.enqueue(redirect(307), ok("done"));
    String ours = call(keyedPost());

    assertThat(ours).isEqualTo(plain).isEqualTo("200 done");
    assertThat(requests())
        .isEqualTo(plainRequests)
        .containsExactly("POST /start {\"n\":1} key=k-1", "POST /target {\"n\":1} key=k-1");
    // The redirect's hop is part of attempt 1. Before, it carried no attempt header: HttpClient
    // copies the application's request for it, below our handler.
    assertThat(attemptHeaders()).containsExactly("1", "1");
    assertThat(retriesOfOurs()).isZero();
  }

  /**
   * /start answers 308 to /target, which answers 503 the first time and 200 the next. HttpClient's
   * retry element sits below the redirects and resends a copy of the application's request, to
   * /start, whose 308 {@code RedirectExec} then takes for a circular redirect (5.1.3).
   */
  private void enqueue308Then503Then200() {
    server.enqueue(redirect(308), status(503), redirect(308), ok("done"));
  }

  private static final String START = "POST /start {\"n\":1} key=k-1";
  private static final String TARGET = "POST /target {\"n\":1} key=k-1";
  private static final String CIRCULAR =
      "ClientProtocolException caused by CircularRedirectException";

  @Test
  void aPostRedirectedWith308Then503IsRetriedByUsWhereHttpClientAloneResendsIt() throws Exception {
    // HttpClient alone: its retry element resends the 503 once, to /start, and fails there.
    client = builder().build();
    enqueue308Then503Then200();
    assertThat(call(keyedPost())).isEqualTo(CIRCULAR);
    assertThat(requests()).containsExactly(START, TARGET, START);
    server.close();
    client.close();

    // With us, the policy retries a keyed POST's 503: HttpClient does not resend it; our retry
    // sends the application's request again from the start, and the redirect is followed again,
    // the same body and key on each request: the failure retried became a success.
    server = new ScriptedHttpServer();
    client = withHandler(StatusSet.of("503"));
    enqueue308Then503Then200();

    assertThat(call(keyedPost())).isEqualTo("200 done");
    assertThat(requests()).containsExactly(START, TARGET, START, TARGET);
    // Before, each hop to /target carried no attempt header.
    assertThat(attemptHeaders()).containsExactly("1", "1", "2", "2");
    assertThat(retriesOfOurs()).isEqualTo(1);
  }

  @Test
  void aResendOfHttpClientsOwnAfterA308CarriesTheAttemptsNumber() throws Exception {
    client = builder().build();
    enqueue308Then503Then200();
    String plain = call(keyedPost());
    List<String> plainRequests = requests();
    server.close();
    client.close();

    // The policy retries only 502: the 503 is HttpClient's to resend, as without us.
    server = new ScriptedHttpServer();
    client = withHandler(StatusSet.of("502"));
    enqueue308Then503Then200();

    assertThat(call(keyedPost())).isEqualTo(plain).isEqualTo(CIRCULAR);
    assertThat(requests()).isEqualTo(plainRequests).containsExactly(START, TARGET, START);
    // HttpClient's resend is a request of attempt 1 (counted as an attempt of the call), as is the
    // redirect's hop. Before, only the first carried the header: HttpClient copies the
    // application's request for the others.
    assertThat(attemptHeaders()).containsExactly("1", "1", "1");
    assertThat(retriesOfOurs()).isZero();
  }

  /**
   * An entity that fails on the redirect's hop (its source gone by its second write): the
   * application's failure, as on the first write. {@code RedirectExec} sends a copy of the
   * application's request below our handler; {@code ResendCounter} watches its entity as it watches
   * the attempt's. Were the failure taken for the host's, a breaker that one failure opens would
   * refuse the host's next call.
   */
  @Test
  void anEntityThatFailsOnTheRedirectsHopIsTheApplicationsFailureAsOnItsFirstWrite()
      throws Exception {
    client = builder().build();
    server.enqueue(redirect(307), ok("done"));
    String plain = call(postFailingOnItsSecondWrite());
    // The hop's head, its body cut: the server records it as the client closes the connection.
    awaitRequests(2);
    List<String> plainRequests = requests();
    server.close();
    client.close();

    server = new ScriptedHttpServer();
    client =
        RetryExecHandler.addTo(
                builder(),
                TestEngines.engine(
                    time,
                    Mode.ENFORCE,
                    r ->
                        r.maxAttempts(3)
                            .unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY)
                            .retryOnExceptions(List.of("java.io.IOException")),
                    CircuitBreakerPolicy.builder()
                        .countWindow(1)
                        .minimumCalls(1)
                        .openFor(java.time.Duration.ofMinutes(1))
                        .build(),
                    events))
            .build();
    server.enqueue(redirect(307), ok("done"));

    assertThat(call(postFailingOnItsSecondWrite())).isEqualTo(plain).isEqualTo("IOException");
    awaitRequests(2);
    assertThat(requests()).isEqualTo(plainRequests);
    assertThat(retriesOfOurs()).isZero();
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.APPLICATION_FAILED);
    // The breaker heard no failure: the host's next call goes through.
    server.enqueue(ok("next"));
    assertThat(call(keyedPost())).isEqualTo("200 next");
  }

  private void awaitRequests(int n) {
    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(server.requests()).hasSize(n));
  }

  /** A keyed POST whose repeatable entity's source is gone by its second write. */
  private HttpPost postFailingOnItsSecondWrite() {
    HttpPost post = new HttpPost(server.url("/start"));
    post.setHeader("Idempotency-Key", "k-1");
    java.util.concurrent.atomic.AtomicInteger writes =
        new java.util.concurrent.atomic.AtomicInteger();
    byte[] body = "{\"n\":1}".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    post.setEntity(
        new org.apache.hc.core5.http.io.entity.AbstractHttpEntity(
            ContentType.APPLICATION_JSON, null) {
          @Override
          public boolean isRepeatable() {
            return true;
          }

          @Override
          public long getContentLength() {
            return body.length;
          }

          @Override
          public java.io.InputStream getContent() {
            return new java.io.ByteArrayInputStream(body);
          }

          @Override
          public boolean isStreaming() {
            return false;
          }

          @Override
          public void close() {}

          @Override
          public void writeTo(java.io.OutputStream out) throws IOException {
            if (writes.incrementAndGet() > 1) {
              throw new IOException("disk gone");
            }
            out.write(body);
          }
        });
    return post;
  }
}
