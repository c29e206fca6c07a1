package dev.retryagent.apache5;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.hc.client5.http.async.AsyncExecCallback;
import org.apache.hc.client5.http.async.AsyncExecChain;
import org.apache.hc.client5.http.async.AsyncExecChainHandler;
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse;
import org.apache.hc.client5.http.async.methods.SimpleRequestBuilder;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.HttpAsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManager;
import org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManagerBuilder;
import org.apache.hc.core5.concurrent.FutureCallback;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.HttpRequest;
import org.apache.hc.core5.http.nio.AsyncEntityProducer;
import org.apache.hc.core5.io.CloseMode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * How far the application's {@code Future.cancel} reaches, made as soon as {@code execute} returns
 * (the differential suite's cancel-before), at points of the call made certain instead of left to
 * the race between the caller and HttpClient's I/O thread: before the request is handed on, and
 * while it waits for a connection. The same client with and without the handler, which must agree:
 * what the callback hears, on which thread, and what reaches the server.
 *
 * <p>Not here: a cancel once the exchange is under way. HttpClient 5.1.3 may not reach it, with or
 * without the handler: its connect element sets the lease as the future's dependency after the
 * lease's callback, which may have set the exchange's already (a pooled connection, or a new one
 * the I/O thread connected first), so the cancel goes to the finished lease and the exchange runs
 * on, holding its connection (seen both ways, on a pooled connection with the body held).
 */
class AsyncCancelReachTest {
  private static final Duration LONG = Duration.ofSeconds(30);

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final List<CloseableHttpAsyncClient> clients = new ArrayList<>();

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    server.otherwise(ok("fine"));
  }

  @AfterEach
  void stop() throws IOException {
    for (CloseableHttpAsyncClient c : clients) {
      c.close(CloseMode.IMMEDIATE);
    }
    server.close();
    AsyncRetryExecHandler.RUNNING.clear();
  }

  /**
   * A client of one pooled connection, HttpClient's own retries off, with the handler or without;
   * {@code first}, the application's own chain element, put before everything (the handler too).
   */
  private CloseableHttpAsyncClient client(boolean withHandler, AsyncExecChainHandler first) {
    PoolingAsyncClientConnectionManager pool =
        PoolingAsyncClientConnectionManagerBuilder.create()
            .setMaxConnPerRoute(1)
            .setMaxConnTotal(1)
            .build();
    HttpAsyncClientBuilder b =
        HttpAsyncClients.custom().disableAutomaticRetries().setConnectionManager(pool);
    if (withHandler) {
      AsyncRetryExecHandler.addTo(
          b,
          TestEngines.engine(
              time, Mode.ENFORCE, r -> r.maxAttempts(3), CircuitBreakerPolicy.defaults(), events));
    }
    if (first != null) {
      b.addExecInterceptorFirst("application-first", first); // last added first: before ours
    }
    CloseableHttpAsyncClient c = b.build();
    clients.add(c);
    c.start();
    return c;
  }

  /** What the application's callback heard, on which thread, how often. */
  private static final class Heard implements FutureCallback<SimpleHttpResponse> {
    final CompletableFuture<String> outcome = new CompletableFuture<>();
    final AtomicInteger times = new AtomicInteger();
    volatile String thread;

    private void heard(String what) {
      thread = Thread.currentThread().getName();
      times.incrementAndGet();
      outcome.complete(what);
    }

    @Override
    public void completed(SimpleHttpResponse r) {
      heard(r.getCode() + " " + r.getBodyText());
    }

    @Override
    public void failed(Exception e) {
      heard("failed " + e.getClass().getSimpleName());
    }

    @Override
    public void cancelled() {
      heard("cancelled");
    }

    String await() throws Exception {
      return outcome.get(LONG.getSeconds(), TimeUnit.SECONDS);
    }
  }

  private List<String> paths() {
    return server.requests().stream().map(r -> r.path).collect(Collectors.toList());
  }

  /** A call to {@code path} that must come back 200: the pool's one connection was let go. */
  private void followUp(CloseableHttpAsyncClient c, String path) throws Exception {
    Heard h = new Heard();
    c.execute(SimpleRequestBuilder.get(server.url(path)).build(), h);
    assertThat(h.await()).isEqualTo("200 fine");
  }

  /**
   * The application's own first element cancels the client's future before the request goes on
   * (what a cancel on another thread does when it comes before the request is handed on): the
   * cancel is the call's end, and nothing reaches the server, with the handler as without.
   */
  @ParameterizedTest(name = "with the handler: {0}")
  @ValueSource(booleans = {false, true})
  void aCancelBeforeTheRequestIsHandedOnSendsNothing(boolean withHandler) throws Exception {
    AsyncExecChainHandler cancelsFirst =
        new AsyncExecChainHandler() {
          @Override
          public void execute(
              HttpRequest request,
              AsyncEntityProducer producer,
              AsyncExecChain.Scope scope,
              AsyncExecChain chain,
              AsyncExecCallback callback)
              throws HttpException, IOException {
            if (request.getPath().equals("/cancelled")) {
              scope.cancellableDependency.cancel();
            }
            chain.proceed(request, producer, scope, callback);
          }
        };
    CloseableHttpAsyncClient c = client(withHandler, cancelsFirst);

    Heard heard = new Heard();
    c.execute(SimpleRequestBuilder.get(server.url("/cancelled")).build(), heard);

    assertThat(heard.await()).isEqualTo("cancelled");
    assertThat(heard.thread).isEqualTo(Thread.currentThread().getName());
    followUp(c, "/after"); // hangs if the cancelled call kept the pool's one connection
    assertThat(paths()).containsExactly("/after");
    assertThat(heard.times.get()).isEqualTo(1);
    assertThat(AsyncRetryExecHandler.RUNNING).isEmpty();
  }

  /**
   * Cancelled as soon as {@code execute} returns while the call waits for the pool's only
   * connection, which another call holds: HttpClient's cancel of that lease must reach it through
   * the handler (it must not stand between the client's future and the exchange below it), so the
   * cancelled request never goes out on the connection once it is free.
   */
  @ParameterizedTest(name = "with the handler: {0}")
  @ValueSource(booleans = {false, true})
  void aCancelWhileTheCallWaitsForAConnectionReachesItsLease(boolean withHandler) throws Exception {
    CloseableHttpAsyncClient c = client(withHandler, null);
    CountDownLatch release = new CountDownLatch(1);
    server.enqueue(ok("slow body").heldAfter(1, release));
    Heard slow = new Heard();
    c.execute(SimpleRequestBuilder.get(server.url("/slow")).build(), slow);
    await().atMost(LONG).until(() -> server.requestCount() == 1);

    Heard heard = new Heard();
    Future<SimpleHttpResponse> f =
        c.execute(SimpleRequestBuilder.get(server.url("/cancelled")).build(), heard);
    assertThat(f.cancel(true)).isTrue();
    release.countDown();

    assertThat(heard.await()).isEqualTo("cancelled");
    assertThat(heard.thread).isEqualTo(Thread.currentThread().getName());
    assertThat(slow.await()).isEqualTo("200 slow body");
    followUp(c, "/after");
    assertThat(paths()).containsExactly("/slow", "/after");
    assertThat(heard.times.get()).isEqualTo(1);
  }
}
