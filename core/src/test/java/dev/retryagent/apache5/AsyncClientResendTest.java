package dev.retryagent.apache5;

import static dev.retryagent.testing.ScriptedHttpServer.Action.broken;
import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.reset;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.TransportFailure;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.ScriptedHttpServer.Fault;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import org.apache.hc.client5.http.async.methods.SimpleHttpRequest;
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse;
import org.apache.hc.client5.http.async.methods.SimpleRequestBuilder;
import org.apache.hc.client5.http.async.methods.SimpleRequestProducer;
import org.apache.hc.client5.http.async.methods.SimpleResponseConsumer;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.HttpAsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.core5.concurrent.FutureCallback;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.EntityDetails;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.HttpResponse;
import org.apache.hc.core5.http.nio.AsyncResponseConsumer;
import org.apache.hc.core5.http.nio.CapacityChannel;
import org.apache.hc.core5.http.protocol.HttpContext;
import org.apache.hc.core5.io.CloseMode;
import org.apache.hc.core5.util.TimeValue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * HttpClient 5.x async's own resends, side by side: the client alone and with our handler, on the
 * same loopback server script, which counts what reached it. Both clients have HttpClient's default
 * strategy but for its wait (none, so that no test waits in real time): one resend of an idempotent
 * request after an I/O failure, one of any request after a 429 or 503. Runs on the 5.1 of the build
 * (default execution) and on the newest 5.x (apache56).
 */
class AsyncClientResendTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final List<CloseableHttpAsyncClient> clients = new ArrayList<>();
  private UnaryOperator<RetryPolicy.Builder> retry = r -> r.maxAttempts(3);

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
    AsyncRetryExecHandler.RUNNING.clear();
  }

  private RetryEngine engine() {
    return TestEngines.builder(
            time,
            Mode.ENFORCE,
            retry,
            Policy.defaults().budget(),
            CircuitBreakerPolicy.defaults(),
            Policy.defaults().rateLimit())
        .listener(TestEngines.recorder(events))
        .listener(
            new RetryListener() {
              @Override
              public void onCallComplete(RetryEvent e) {
                events.add(e);
              }
            })
        .build();
  }

  private HttpAsyncClientBuilder builder() {
    return HttpAsyncClients.custom()
        .setRetryStrategy(new DefaultHttpRequestRetryStrategy(1, TimeValue.ZERO_MILLISECONDS));
  }

  private CloseableHttpAsyncClient plain() {
    return started(builder());
  }

  private CloseableHttpAsyncClient ours() {
    return started(AsyncRetryExecHandler.addTo(builder(), engine()));
  }

  private CloseableHttpAsyncClient started(HttpAsyncClientBuilder b) {
    CloseableHttpAsyncClient c = b.build();
    clients.add(c);
    c.start();
    return c;
  }

  /** What reached the server ("METHOD /path" each), then what the application heard. */
  private List<String> run(CloseableHttpAsyncClient c, SimpleHttpRequest request) throws Exception {
    return run(c, request, () -> {});
  }

  /**
   * As {@link #run(CloseableHttpAsyncClient, SimpleHttpRequest)}, {@code atHead} run at each head.
   */
  private List<String> run(CloseableHttpAsyncClient c, SimpleHttpRequest request, Runnable atHead)
      throws Exception {
    int before = server.requestCount();
    CompletableFuture<String> heard = new CompletableFuture<>();
    c.execute(
        SimpleRequestProducer.create(request),
        new HeadSeen(SimpleResponseConsumer.create(), atHead),
        new FutureCallback<SimpleHttpResponse>() {
          @Override
          public void completed(SimpleHttpResponse r) {
            heard.complete(r.getCode() + " " + r.getBodyText());
          }

          @Override
          public void failed(Exception e) {
            heard.complete("failed " + e.getClass().getName());
          }

          @Override
          public void cancelled() {
            heard.complete("cancelled");
          }
        });
    String got = heard.get(30, TimeUnit.SECONDS);
    List<String> seen =
        server.requests().subList(before, server.requestCount()).stream()
            .map(r -> r.method + " " + r.path)
            .collect(Collectors.toList());
    seen.add(got);
    return seen;
  }

  /** The application's consumer, which runs {@code atHead} as each response's head reaches it. */
  private static final class HeadSeen implements AsyncResponseConsumer<SimpleHttpResponse> {
    private final AsyncResponseConsumer<SimpleHttpResponse> consumer;
    private final Runnable atHead;

    HeadSeen(AsyncResponseConsumer<SimpleHttpResponse> consumer, Runnable atHead) {
      this.consumer = consumer;
      this.atHead = atHead;
    }

    @Override
    public void consumeResponse(
        HttpResponse response,
        EntityDetails details,
        HttpContext context,
        FutureCallback<SimpleHttpResponse> done)
        throws HttpException, IOException {
      consumer.consumeResponse(response, details, context, done);
      atHead.run();
    }

    @Override
    public void informationResponse(HttpResponse response, HttpContext context)
        throws HttpException, IOException {
      consumer.informationResponse(response, context);
    }

    @Override
    public void failed(Exception cause) {
      consumer.failed(cause);
    }

    @Override
    public void updateCapacity(CapacityChannel channel) throws IOException {
      consumer.updateCapacity(channel);
    }

    @Override
    public void consume(ByteBuffer src) throws IOException {
      consumer.consume(src);
    }

    @Override
    public void streamEnd(List<? extends Header> trailers) throws HttpException, IOException {
      consumer.streamEnd(trailers);
    }

    @Override
    public void releaseResources() {
      consumer.releaseResources();
    }
  }

  private static SimpleHttpRequest postWithoutKey(String url) {
    return SimpleRequestBuilder.post(url).setBody("{}", ContentType.APPLICATION_JSON).build();
  }

  private long ofType(RetryEvent.Type type) {
    return events.stream().filter(e -> e.type() == type).count();
  }

  @Test
  void theGetThatFollowsAPostsRedirectIsResentAfterA503AsWithoutTheAgent() throws Exception {
    // A POST without key answered 303: AsyncRedirectExec (above HttpClient's retry element in every
    // 5.x) follows it with a GET of its own, which the retry element resends after its 503.
    server
        .enqueue(status(303).header("Location", "/receipt"), status(503), ok("receipt"))
        .enqueue(status(303).header("Location", "/receipt"), status(503), ok("receipt"));

    List<String> plain = run(plain(), postWithoutKey(server.url("/pay")));
    List<String> ours = run(ours(), postWithoutKey(server.url("/pay")));

    assertThat(plain).containsExactly("POST /pay", "GET /receipt", "GET /receipt", "200 receipt");
    // Before: the resend was judged as the POST and refused: POST, GET, then the 503.
    assertThat(ours).isEqualTo(plain);
    assertThat(ofType(RetryEvent.Type.RETRY)).isZero();
  }

  @Test
  void theGetThatFollowsAPostsRedirectIsResentAfterAResetAsWithoutTheAgent() throws Exception {
    // The same GET, its connection reset before any answer: the retry element asks about the
    // request it would resend, the GET, safe to repeat.
    server
        .enqueue(status(303).header("Location", "/receipt"), reset(), ok("receipt"))
        .enqueue(status(303).header("Location", "/receipt"), reset(), ok("receipt"));

    List<String> plain = run(plain(), postWithoutKey(server.url("/pay")));
    List<String> ours = run(ours(), postWithoutKey(server.url("/pay")));

    assertThat(plain).containsExactly("POST /pay", "GET /receipt", "GET /receipt", "200 receipt");
    // Before: refused as the POST's resend: POST, GET, then the reset's SocketException.
    assertThat(ours).isEqualTo(plain);
    assertThat(ofType(RetryEvent.Type.RETRY)).isZero();
  }

  @Test
  void aPostRedirectedWith307IsStillNeverResentAfterA503() throws Exception {
    // A 307's hop is the POST again, without key: HttpClient alone resends it after the 503; with
    // the agent it is judged as the call's own request and refused, as before.
    server.enqueue(status(307).header("Location", "/pay2"), status(503)).otherwise(ok("paid"));

    List<String> ours = run(ours(), postWithoutKey(server.url("/pay")));

    assertThat(ours).containsExactly("POST /pay", "POST /pay2", "503 status 503");
  }

  @Test
  void aGetWhoseBodyBreaksAfterItsHeadReachedTheApplicationIsResentOnceAsWithoutTheAgent()
      throws Exception {
    // The 200's head goes up to the application's consumer, then its body is reset (held until
    // the head is there): HttpClient's retry element resends the GET once, and the resend's 503 is
    // not resent (its one resend is spent). 5.1 and 5.2 run that resend from the chain's head,
    // through our handler, after the call ended.
    CountDownLatch plainHead = new CountDownLatch(1);
    server.enqueue(broken(Fault.RESET_MID_BODY).heldAfter(0, plainHead)).otherwise(status(503));
    List<String> plain =
        run(plain(), SimpleRequestBuilder.get(server.url("/items")).build(), plainHead::countDown);
    CountDownLatch ourHead = new CountDownLatch(1);
    server.enqueue(broken(Fault.RESET_MID_BODY).heldAfter(0, ourHead));
    List<String> ours =
        run(ours(), SimpleRequestBuilder.get(server.url("/items")).build(), ourHead::countDown);

    assertThat(plain).containsExactly("GET /items", "GET /items", "503 status 503");
    // Before (5.1): the resend began a new call there, which retried the 503 up to maxAttempts:
    // GET, then GET, GET, GET, and the 503.
    assertThat(ours).isEqualTo(plain);
    assertThat(ofType(RetryEvent.Type.RETRY)).isZero();
    assertThat(ofType(RetryEvent.Type.CALL_COMPLETE)).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(
      value = Fault.class,
      names = {"TRUNCATED_CHUNK", "MALFORMED_CHUNK"})
  void aRetried503WhoseBodyBreaksIsRetriedByTheAgentAloneAndTheCallEnds(Fault fault)
      throws Exception {
    // The policy retries the 503 on its head; its body, read away while the retry waits, breaks
    // (the server closes mid-chunk, or sends a chunk size that is no number). HttpClient's retry
    // element, told of that I/O failure, resends a GET by itself: before, the call consented, the
    // resend's 200 went up to the application through the attempt's callback, and the agent's own
    // retry waited for that exchange's end forever: no CALL_COMPLETE, the call left running.
    server.enqueue(broken(503, fault), ok("done")).enqueue(broken(503, fault), ok("done"));

    List<String> plain = run(plain(), SimpleRequestBuilder.get(server.url("/items")).build());
    List<String> ours = run(ours(), SimpleRequestBuilder.get(server.url("/items")).build());

    assertThat(plain).containsExactly("GET /items", "GET /items", "200 done");
    assertThat(ours).isEqualTo(plain);
    await().atMost(Duration.ofSeconds(30)).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    // The second request was the agent's retry, not HttpClient's resend. Before, the resend was
    // counted as attempt 2, CALL_COMPLETE told at attempt 3, and the call stayed RUNNING.
    assertThat(events)
        .extracting(e -> e.type() + " " + e.attempt())
        .containsExactly("RETRY 1", "CALL_COMPLETE 2");
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
  }

  @Test
  void aRetried503WhoseBodyIsTooLongToReadAwayIsRetriedByTheAgentAloneAndTheCallEnds()
      throws Exception {
    // The agent reads at most 64 KiB of a retried body and fails the exchange past it, an
    // IOException HttpClient's retry element would resend the GET after. Its message reads as a
    // reset: a policy that retries no reset consented to that resend.
    retry = r -> r.maxAttempts(3).retryOnTransport(List.of(TransportFailure.CONNECT));
    server.enqueue(status(503).body("x".repeat(200_000)), ok("done"));

    List<String> ours = run(ours(), SimpleRequestBuilder.get(server.url("/items")).build());

    assertThat(ours).containsExactly("GET /items", "GET /items", "200 done");
    await().atMost(Duration.ofSeconds(30)).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertThat(events)
        .extracting(e -> e.type() + " " + e.attempt())
        .containsExactly("RETRY 1", "CALL_COMPLETE 2");
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
  }

  @Test
  void anUngovernedResendAfterARetriedBodyBrokeIsReadAwayAndTheCallsRetryGoesOn() throws Exception {
    // The application set its own strategy after addTo: HttpClient's resends are not asked about.
    // The policy retries the 502 (HttpClient's strategy does not) on its head; its body breaks,
    // and HttpClient resends the GET by itself: the resend's answer comes to the attempt whose
    // response the call retries. Before, it went up to the application and the call's retry
    // waited for that exchange's end forever. Now it is read away, and the call's retry, once
    // the resend's exchange is over, gives the application the call's outcome.
    CloseableHttpAsyncClient c =
        started(
            AsyncRetryExecHandler.addTo(builder(), engine())
                .setRetryStrategy(
                    new DefaultHttpRequestRetryStrategy(1, TimeValue.ZERO_MILLISECONDS)));
    server.enqueue(broken(502, Fault.TRUNCATED_CHUNK), status(504), ok("done"));

    List<String> ours = run(c, SimpleRequestBuilder.get(server.url("/items")).build());

    assertThat(ours).containsExactly("GET /items", "GET /items", "GET /items", "200 done");
    await().atMost(Duration.ofSeconds(30)).until(() -> ofType(RetryEvent.Type.CALL_COMPLETE) == 1);
    assertThat(ofType(RetryEvent.Type.RETRY)).isEqualTo(1);
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
  }
}
