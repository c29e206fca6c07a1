package dev.retryagent.apache5;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.PushingH2cServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse;
import org.apache.hc.client5.http.async.methods.SimpleRequestBuilder;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.H2AsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.core5.concurrent.FutureCallback;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.io.CloseMode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The async handler on HttpClient's HTTP/2-only client ({@code HttpAsyncClients.customHttp2()},
 * {@code H2AsyncClientBuilder}) against a loopback h2c server (prior knowledge) that counts the
 * streams it was sent; waits on fake time. Run on 5.1.3 and (core's {@code apache56} execution)
 * 5.6.5.
 */
class AsyncRetryExecHandlerH2Test {
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private PushingH2cServer server;
  private CloseableHttpAsyncClient client;

  @BeforeEach
  void start() throws IOException {
    server = PushingH2cServer.priorKnowledge().answeringWholeRequests();
  }

  @AfterEach
  void stop() throws IOException {
    if (client != null) {
      client.close(CloseMode.IMMEDIATE);
    }
    server.close();
  }

  private RetryEngine engine(UnaryOperator<RetryPolicy.Builder> retry) {
    return TestEngines.engine(time, Mode.ENFORCE, retry, CircuitBreakerPolicy.defaults(), events);
  }

  private CloseableHttpAsyncClient started(H2AsyncClientBuilder b) {
    client = b.build();
    client.start();
    return client;
  }

  /** The library's handler (3 attempts) on a client of its own, HttpClient's own retries off. */
  private CloseableHttpAsyncClient withHandler() {
    return started(
        AsyncRetryExecHandler.addTo(
            HttpAsyncClients.customHttp2().disableAutomaticRetries(),
            engine(r -> r.maxAttempts(3))));
  }

  /** The outcome the application's callback heard, with its thread's name. */
  private static String call(CloseableHttpAsyncClient c, SimpleRequestBuilder request)
      throws Exception {
    CompletableFuture<String> outcome = new CompletableFuture<>();
    c.execute(
        request.build(),
        new FutureCallback<SimpleHttpResponse>() {
          @Override
          public void completed(SimpleHttpResponse r) {
            outcome.complete(r.getCode() + " " + r.getVersion() + " on " + thread());
          }

          @Override
          public void failed(Exception e) {
            outcome.complete("failed " + e.getClass().getSimpleName() + " on " + thread());
          }

          @Override
          public void cancelled() {
            outcome.complete("cancelled on " + thread());
          }
        });
    return outcome.get(30, TimeUnit.SECONDS);
  }

  private static String thread() {
    return Thread.currentThread().getName().replaceAll("[0-9]+", "N");
  }

  @Test
  void a503GetIsRetriedUntilTheServerAnswers200OnTheClientsOwnThread() throws Exception {
    CloseableHttpAsyncClient c = withHandler();
    server.enqueue(503, 503, 200);

    assertThat(call(c, SimpleRequestBuilder.get(server.url("/items"))))
        .isEqualTo("200 HTTP/2.0 on httpclient-dispatch-N");
    assertThat(server.requestStreams()).hasSize(3);
  }

  @Test
  void aPostWithoutIdempotencyKeyIsNeverResent() throws Exception {
    CloseableHttpAsyncClient c = withHandler();
    server.enqueue(503, 200);

    assertThat(
            call(
                c,
                SimpleRequestBuilder.post(server.url("/pay"))
                    .setBody("{}", ContentType.APPLICATION_JSON)))
        .startsWith("503 ");
    assertThat(server.requestStreams()).hasSize(1);
  }

  @Test
  void aStreamTheServerRefusedIsSentAgain() throws Exception {
    CloseableHttpAsyncClient c = withHandler();
    server.enqueueReset(PushingH2cServer.REFUSED_STREAM).enqueue(200);

    assertThat(call(c, SimpleRequestBuilder.get(server.url("/items"))))
        .isEqualTo("200 HTTP/2.0 on httpclient-dispatch-N");
    assertThat(server.requestStreams()).hasSize(2);
  }

  @Test
  void closingTheClientDuringAWaitEndsItAtOnceWithTheEarlierResponse() throws Exception {
    // The HTTP/2-only builder takes the same closeable as the other async builder: the close is
    // heard at once, not when the 5 s wait ends.
    CloseableHttpAsyncClient c = withHandler();
    time.holdTasks();
    server.enqueue(503, "retry-after", "5").enqueue(200);

    CompletableFuture<String> outcome =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return call(c, SimpleRequestBuilder.get(server.url("/items")));
              } catch (Exception e) {
                return e.toString();
              }
            });
    await().atMost(Duration.ofSeconds(30)).until(() -> time.heldTasks() == 1);
    c.close(CloseMode.GRACEFUL);
    assertThat(time.waits()).endsWith(0L); // the wait ended at once
    time.runHeldTasks();

    assertThat(outcome.get(30, TimeUnit.SECONDS)).startsWith("503 HTTP/2.0 on ");
    assertThat(server.requestStreams()).hasSize(1);
  }

  @Test
  void theAgentsInstallGovernsHttpClientsDefaultStrategy() throws Exception {
    // As the agent's hook does it, on a builder just made: HttpClient's default strategy, which
    // would resend a 503 once after 1 s, is governed; the policy's retries take its place.
    CloseableHttpAsyncClient c =
        started(
            AsyncRetryExecHandler.install(
                HttpAsyncClients.customHttp2(),
                new AsyncRetryExecHandler(engine(r -> r.maxAttempts(3)))));
    server.enqueue(503, 503, 503, 503, 503);

    assertThat(call(c, SimpleRequestBuilder.get(server.url("/items")))).startsWith("503 ");
    assertThat(server.requestStreams()).hasSize(3);
    assertThat(events.stream().filter(e -> e.type() == RetryEvent.Type.RETRY).count()).isEqualTo(2);
  }

  @Test
  void addToSetsAsideAHandlerOfOursTheBuilderHasAlready() throws Exception {
    // As beside the agent: its hook installed a handler (5 attempts, another engine) when the
    // builder was made, then the application adds the library's (3 attempts).
    List<RetryEvent> agents = new CopyOnWriteArrayList<>();
    H2AsyncClientBuilder b =
        AsyncRetryExecHandler.install(
            HttpAsyncClients.customHttp2(),
            new AsyncRetryExecHandler(
                TestEngines.engine(
                    time,
                    Mode.ENFORCE,
                    r -> r.maxAttempts(5),
                    CircuitBreakerPolicy.defaults(),
                    agents)));
    CloseableHttpAsyncClient c =
        started(AsyncRetryExecHandler.addTo(b, engine(r -> r.maxAttempts(3))));
    server.enqueue(503, 503, 503, 503, 503);

    assertThat(call(c, SimpleRequestBuilder.get(server.url("/items")))).startsWith("503 ");
    assertThat(server.requestStreams()).hasSize(3);
    assertThat(agents).isEmpty();
  }
}
