package dev.retryagent.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.engine.Sleeper;
import dev.retryagent.internal.jdk.HeldGraces;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.TestEngines;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A request body publisher of the application's that completes its body and fails later, breaking
 * Flow's rules (the JDK's own {@code PullPublisher} can throw just after it completed): the failure
 * comes after the retry of the attempt was decided, at a moment the test chooses. Through the JDK
 * alone the call has the attempt's response (the late signal goes to a subscriber that is done).
 * Through the decorator: a failure before the retry starts ends the call with the attempt before
 * it, as without the agent, never an exception of ours and never a replay of a copy not whole; a
 * failure once the retry was made changes neither the copy it sends nor how its attempt is judged.
 * After a response that cannot be given back (a page over 8 KiB) the copy is fixed for the retry as
 * that response is let go, and a failure after that is as one once the retry was made. HTTP/1.1 on
 * loopback; the engine's time injected.
 */
class LateBodyFailureTest {
  enum Way {
    SEND,
    SEND_ASYNC
  }

  private final HttpClient real =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private FakeTime time;
  // Run as a retry is decided (on the thread deciding, before the response's body is read).
  private volatile Runnable onRetry = () -> {};
  private ScriptedServer server;

  @BeforeEach
  void start() throws IOException {
    time = new FakeTime();
  }

  @AfterEach
  void stop() throws IOException {
    if (server != null) {
      server.close();
    }
  }

  /**
   * The source fails during the retry's wait, after the 503 was decided retried: the call ends with
   * that 503 (its body as the server sent it), as through the JDK alone, given up as the body not
   * replayable; the server got one request. Before, the retry's attempt threw
   * IllegalStateException("body cannot be sent again") at the caller in place of the 503.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aSourceThatFailsDuringTheWaitEndsTheCallWithTheResponseBeforeIt(Way way) throws Exception {
    server = new ScriptedServer(List.of("503"), null);
    LateFailing body = new LateFailing();
    AtomicBoolean fired = new AtomicBoolean();
    Runnable inTheWait =
        () -> {
          if (fired.compareAndSet(false, true)) {
            body.failLate();
          }
        };
    HttpRequest put =
        HttpRequest.newBuilder(URI.create(server.url("/v1/files/7"))).PUT(body).build();

    HttpResponse<String> alone = call(real, way, put, new LateFailing(), true);
    assertThat(alone.statusCode()).isEqualTo(503);
    assertThat(alone.body()).isEqualTo("busy");
    assertThat(server.received()).containsExactly("abcd");
    server.clearReceived();

    HttpResponse<String> response = call(wrapped(inTheWait), way, put, body, false);

    assertThat(fired).isTrue();
    assertThat(response.statusCode()).isEqualTo(503);
    assertThat(response.body()).isEqualTo("busy");
    assertThat(server.received()).containsExactly("abcd");
    assertThat(events) // the retry decided is told, then given up: not made
        .anyMatch(
            e ->
                e.type() == RetryEvent.Type.GIVE_UP
                    && e.reason() == GiveUpReason.BODY_NOT_REPLAYABLE);
  }

  /** A 503's page over the 8 KiB a retried response's body is kept to (ResponseAccess). */
  static final String BIG = "busy ".repeat(2000);

  /**
   * The source fails during the retry's wait after a 503 whose page is over the 8 KiB a retried
   * response's body is kept to (ResponseAccess.GIVE_BACK_LIMIT), so it cannot be given back: of a
   * known length (Content-Length) or not (chunked). Through the JDK alone the call has the 503 and
   * its page. Through the decorator the copy, whole when the response was let go, was fixed for the
   * retry then, and the retry is sent from it (the same 4 bytes the server got whole): the call has
   * the retry's 200, a retried failure become a later success. Before, the body was checked only
   * after the wait, found failed, and the call ended with the engine's IOException ("the retry ...
   * was not made: the request body's source failed after it was sent"), where without the agent the
   * application has the response.
   */
  @ParameterizedTest
  @CsvSource({"SEND,503big", "SEND_ASYNC,503big", "SEND,503chunked", "SEND_ASYNC,503chunked"})
  void aSourceThatFailsDuringTheWaitAfterAPageOverTheGiveBackLimitIsRetriedFromTheCopy(
      Way way, String answer) throws Exception {
    server = new ScriptedServer(List.of(answer), null);
    LateFailing body = new LateFailing();
    AtomicBoolean fired = new AtomicBoolean();
    Runnable inTheWait =
        () -> {
          if (fired.compareAndSet(false, true)) {
            body.failLate();
          }
        };
    HttpRequest put =
        HttpRequest.newBuilder(URI.create(server.url("/v1/files/7"))).PUT(body).build();

    HttpResponse<String> alone = call(real, way, put, new LateFailing(), true);
    assertThat(alone.statusCode()).isEqualTo(503);
    assertThat(alone.body()).isEqualTo(BIG);
    assertThat(server.received()).containsExactly("abcd");
    server.clearReceived();

    HttpResponse<String> response = call(wrapped(inTheWait), way, put, body, false);

    assertThat(fired).isTrue();
    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body()).isEqualTo("ok");
    assertThat(server.received()).containsExactly("abcd", "abcd");
    assertThat(events).filteredOn(e -> e.type() == RetryEvent.Type.RETRY).hasSize(1);
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.GIVE_UP);
  }

  /**
   * As {@link #aSourceThatFailsDuringTheWaitAfterAPageOverTheGiveBackLimitIsRetriedFromTheCopy},
   * the source failing once the retry was decided on the 503's head (Content-Length over the limit)
   * while the server holds the rest of the page, before the response's copy is let go: the body was
   * fixed at the head, the only moment such a response is whole, and the retry is sent from it.
   * Before (and with the body fixed only as the copy is let go), the call ended with the engine's
   * IOException once the wait was over.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aSourceThatFailsAfterTheHeadOfAPageOverTheGiveBackLimitIsRetriedFromTheCopy(Way way)
      throws Exception {
    LateFailing body = new LateFailing();
    server = new ScriptedServer(List.of("503slow"), null);
    server.midBody =
        () -> {
          Awaitility.await()
              .atMost(Duration.ofSeconds(10))
              .until(() -> events.stream().anyMatch(e -> e.type() == RetryEvent.Type.RETRY));
          body.failLate();
        };
    HttpRequest put =
        HttpRequest.newBuilder(URI.create(server.url("/v1/files/7"))).PUT(body).build();

    HttpResponse<String> response = call(wrapped(() -> {}), way, put, body, false);

    assertThat(body.failedLate).isTrue();
    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body()).isEqualTo("ok");
    assertThat(server.received()).containsExactly("abcd", "abcd");
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.GIVE_UP);
  }

  /**
   * As {@link #aSourceThatFailsAfterTheHeadOfAPageOverTheGiveBackLimitIsRetriedFromTheCopy}, the
   * page chunked (no Content-Length, so nothing is known of its length at the head): the source
   * fails once the retry was decided, after the head and the page's first 100 bytes, before the 8
   * KiB a retried response is kept to (after its completion: LateFailing#failAfterCompletion).
   * Through the JDK alone the call has the 503 and its page. Through the decorator the copy is
   * found failed as the page runs past 8 KiB, where the response would be let go: the retry is not
   * made, and the call ends with this response, its whole page given to the application's handler
   * (a string, or a stream the application reads), as through the JDK alone; the server got one
   * request. Before, the response was let go and the call ended with the engine's IOException ("the
   * retry ... was not made").
   */
  @ParameterizedTest
  @CsvSource({"SEND,false", "SEND_ASYNC,false", "SEND,true", "SEND_ASYNC,true"})
  void aSourceThatFailsBeforeAChunkedPageRunsPastTheGiveBackLimitEndsTheCallWithIt(
      Way way, boolean stream) throws Exception {
    server = new ScriptedServer(List.of("503chunkedSlow"), null);
    LateFailing first = new LateFailing();
    server.midBody = first::failAfterCompletion;
    HttpRequest alonePut =
        HttpRequest.newBuilder(URI.create(server.url("/v1/files/7"))).PUT(first).build();
    HttpResponse<String> alone = callReading(real, way, alonePut, stream);
    assertThat(first.failedLate).isTrue();
    assertThat(alone.statusCode()).isEqualTo(503);
    assertThat(alone.body()).isEqualTo(BIG);
    assertThat(server.received()).containsExactly("abcd");
    server.clearReceived();

    LateFailing body = new LateFailing();
    // The source fails as the retry is decided on the head, before the response's body is read
    // (so before its grace, which would otherwise fix a copy still whole); the rest of the page
    // is sent once it has.
    onRetry = body::failAfterCompletion;
    server.midBody =
        () -> Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> body.failedLate);
    HttpRequest put =
        HttpRequest.newBuilder(URI.create(server.url("/v1/files/7"))).PUT(body).build();

    HttpResponse<String> response = callReading(wrapped(() -> {}), way, put, stream);

    assertThat(body.failedLate).isTrue();
    assertThat(response.statusCode()).isEqualTo(alone.statusCode());
    assertThat(response.body()).isEqualTo(BIG);
    assertThat(response.headers().map()).isEqualTo(alone.headers().map());
    assertThat(server.received()).containsExactly("abcd");
    assertThat(events)
        .anyMatch(
            e ->
                e.type() == RetryEvent.Type.GIVE_UP
                    && e.reason() == GiveUpReason.BODY_NOT_REPLAYABLE);
  }

  /**
   * As {@link #aSourceThatFailsBeforeAChunkedPageRunsPastTheGiveBackLimitEndsTheCallWithIt}, the
   * server holding the rest of the page (after its first 100 bytes, within the 8 KiB) until the
   * response's grace is over: the grace finds the copy not whole and the call ends with this
   * response, handed to the application's handler there. The handler is applied, and its subscriber
   * subscribed, on the executor the application gave the client, as the JDK runs them (and as a
   * response given back after a late wait is: GiveBackAfterALateWaitTest), and it gets the whole
   * page. Before, they ran on the thread ending the grace (the agent's shared scheduler, here the
   * server's thread ending it by hand): the agent's thread context for the application's code, and
   * a handler that blocks held up the pool every client's retry waits run on. The grace is ended by
   * hand (HeldGraces), no real wait.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aChunkedPageHeldPastItsGraceIsHandedOverOnTheClientsExecutor(Way way) throws Exception {
    AtomicInteger n = new AtomicInteger();
    ExecutorService own =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "app-executor-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    try (HeldGraces graces = HeldGraces.hold()) {
      HttpClient plainWithOwn =
          HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).executor(own).build();
      server = new ScriptedServer(List.of("503chunkedSlow"), null);
      LateFailing first = new LateFailing();
      server.midBody = first::failAfterCompletion;
      HttpRequest alonePut =
          HttpRequest.newBuilder(URI.create(server.url("/v1/files/7"))).PUT(first).build();
      HttpResponse<String> alone =
          callWith(plainWithOwn, way, alonePut, recordingThreads(new CopyOnWriteArrayList<>()));
      assertThat(alone.statusCode()).isEqualTo(503);
      assertThat(alone.body()).isEqualTo(BIG);
      server.clearReceived();

      LateFailing body = new LateFailing();
      onRetry = body::failAfterCompletion; // before the grace, which would fix a whole copy
      server.midBody =
          () -> {
            Awaitility.await()
                .atMost(Duration.ofSeconds(10))
                .until(() -> body.failedLate && graces.held() == 1);
            graces.endAll(); // on the server's thread, in place of the agent's scheduler
          };
      HttpRequest put =
          HttpRequest.newBuilder(URI.create(server.url("/v1/files/7"))).PUT(body).build();
      List<String> threads = new CopyOnWriteArrayList<>();

      HttpResponse<String> response =
          callWith(wrapped(plainWithOwn, () -> {}), way, put, recordingThreads(threads));

      assertThat(response.statusCode()).isEqualTo(503);
      assertThat(response.body()).isEqualTo(BIG);
      assertThat(response.headers().map()).isEqualTo(alone.headers().map());
      assertThat(server.received()).containsExactly("abcd");
      assertThat(events)
          .anyMatch(
              e ->
                  e.type() == RetryEvent.Type.GIVE_UP
                      && e.reason() == GiveUpReason.BODY_NOT_REPLAYABLE);
      assertThat(threads)
          .startsWith("apply on app-executor-N", "onSubscribe on app-executor-N")
          .endsWith("onComplete")
          .doesNotContain("onError");
    } finally {
      own.shutdownNow();
    }
  }

  /** Records the thread of each of the handler's and its subscriber's steps (digits as N). */
  private static HttpResponse.BodyHandler<String> recordingThreads(List<String> threads) {
    return info -> {
      threads.add("apply on " + pattern());
      HttpResponse.BodySubscriber<String> own =
          HttpResponse.BodySubscribers.ofString(StandardCharsets.US_ASCII);
      return new HttpResponse.BodySubscriber<>() {
        @Override
        public CompletionStage<String> getBody() {
          return own.getBody();
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
          threads.add("onSubscribe on " + pattern());
          own.onSubscribe(s);
        }

        @Override
        public void onNext(List<ByteBuffer> item) {
          own.onNext(item);
        }

        @Override
        public void onError(Throwable t) {
          threads.add("onError");
          own.onError(t);
        }

        @Override
        public void onComplete() {
          threads.add("onComplete");
          own.onComplete();
        }
      };
    };
  }

  private static String pattern() {
    return Thread.currentThread().getName().replaceAll("[0-9]+", "N");
  }

  private static <T> HttpResponse<T> callWith(
      HttpClient client, Way way, HttpRequest put, HttpResponse.BodyHandler<T> handler)
      throws Exception {
    if (way == Way.SEND) {
      return client.send(put, handler);
    }
    try {
      return client.sendAsync(put, handler).get(20, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw new AssertionError(e.getCause());
    }
  }

  /**
   * As {@link #aSourceThatFailsDuringTheWaitEndsTheCallWithTheResponseBeforeIt}, after an attempt
   * that failed (the server closed without an answer, an IOException the policy retries): the call
   * ends with that attempt's failure, of the JDK's type and message, as through the JDK alone; the
   * server got one request. Before, IllegalStateException("body cannot be sent again").
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aSourceThatFailsDuringTheWaitEndsTheCallWithTheFailureBeforeIt(Way way) throws Exception {
    server = new ScriptedServer(List.of("close"), null);
    LateFailing body = new LateFailing();
    AtomicBoolean fired = new AtomicBoolean();
    Runnable inTheWait =
        () -> {
          if (fired.compareAndSet(false, true)) {
            body.failLate();
          }
        };
    HttpRequest put =
        HttpRequest.newBuilder(URI.create(server.url("/v1/files/7"))).PUT(body).build();

    Throwable alone = failure(real, way, put, new LateFailing(), true);
    assertThat(server.received()).containsExactly("abcd");
    server.clearReceived();

    Throwable failure = failure(wrapped(inTheWait), way, put, body, false);

    assertThat(fired).isTrue();
    assertThat(failure).isInstanceOf(alone.getClass()).hasMessage(alone.getMessage());
    assertThat(server.received()).containsExactly("abcd");
    assertThat(events)
        .anyMatch(
            e ->
                e.type() == RetryEvent.Type.GIVE_UP
                    && e.reason() == GiveUpReason.BODY_NOT_REPLAYABLE);
  }

  /**
   * {@link #call}, the body read as a string, or ({@code stream}) as an InputStream the caller
   * reads to its end, 1 KiB at a time: status, headers and the text read.
   */
  private static HttpResponse<String> callReading(
      HttpClient client, Way way, HttpRequest put, boolean stream) throws Exception {
    if (!stream) {
      return call(client, way, put, null, false);
    }
    HttpResponse<InputStream> r =
        way == Way.SEND
            ? client.send(put, HttpResponse.BodyHandlers.ofInputStream())
            : client
                .sendAsync(put, HttpResponse.BodyHandlers.ofInputStream())
                .get(20, TimeUnit.SECONDS);
    ByteArrayOutputStream read = new ByteArrayOutputStream();
    try (InputStream in = r.body()) {
      byte[] b = new byte[1024];
      for (int n = in.read(b); n >= 0; n = in.read(b)) {
        read.write(b, 0, n);
      }
    }
    String text = read.toString(StandardCharsets.US_ASCII);
    return new HttpResponse<String>() {
      @Override
      public int statusCode() {
        return r.statusCode();
      }

      @Override
      public HttpRequest request() {
        return r.request();
      }

      @Override
      public java.util.Optional<HttpResponse<String>> previousResponse() {
        return java.util.Optional.empty();
      }

      @Override
      public java.net.http.HttpHeaders headers() {
        return r.headers();
      }

      @Override
      public String body() {
        return text;
      }

      @Override
      public java.util.Optional<javax.net.ssl.SSLSession> sslSession() {
        return r.sslSession();
      }

      @Override
      public URI uri() {
        return r.uri();
      }

      @Override
      public HttpClient.Version version() {
        return r.version();
      }
    };
  }

  private static Throwable failure(
      HttpClient client, Way way, HttpRequest put, LateFailing body, boolean fresh) {
    try {
      call(client, way, put, body, fresh);
    } catch (AssertionError e) {
      return e.getCause(); // sendAsync's
    } catch (Exception e) {
      return e;
    }
    throw new AssertionError("no failure");
  }

  /**
   * The source fails while the retry, sent from the copy, is at the server, which then closes the
   * connection without an answer (the host's failure, an IOException the policy retries): that
   * failure is the host's and is retried, from the same whole copy, and the third attempt's 200 is
   * the call's. Before, the old subscription's failure was read as the retry's own: its failure was
   * taken for the application's, and the call ended with it, not retried.
   */
  @ParameterizedTest
  @EnumSource(Way.class)
  void aSourceThatFailsDuringTheRetryChangesNeitherItsCopyNorItsJudgement(Way way)
      throws Exception {
    LateFailing body = new LateFailing();
    server = new ScriptedServer(List.of("503", "close", "200"), body::failLate);
    HttpRequest put =
        HttpRequest.newBuilder(URI.create(server.url("/v1/files/7"))).PUT(body).build();

    HttpResponse<String> response = call(wrapped(() -> {}), way, put, body, false);

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body()).isEqualTo("ok");
    assertThat(body.failedLate).isTrue();
    assertThat(server.received()).containsExactly("abcd", "abcd", "abcd");
    assertThat(events).filteredOn(e -> e.type() == RetryEvent.Type.RETRY).hasSize(2);
  }

  private HttpClient wrapped(Runnable inTheWait) {
    return wrapped(real, inTheWait);
  }

  private HttpClient wrapped(HttpClient client, Runnable inTheWait) {
    Sleeper sleeper =
        n -> {
          inTheWait.run();
          time.sleep(n);
        };
    Scheduler scheduler =
        (task, delayNanos) -> {
          inTheWait.run();
          return time.schedule(task, delayNanos);
        };
    RetryEngine engine =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                b -> b.retryOnExceptions(List.of("java.io.IOException")),
                Policy.defaults().budget(),
                CircuitBreakerPolicy.defaults(),
                Policy.defaults().rateLimit())
            .sleeper(sleeper)
            .scheduler(scheduler)
            .listener(
                new RetryListener() {
                  @Override
                  public void onRetry(RetryEvent e) {
                    events.add(e);
                    onRetry.run();
                  }

                  @Override
                  public void onGiveUp(RetryEvent e) {
                    events.add(e);
                  }
                })
            .build();
    return RetryingHttpClient.wrap(client, engine);
  }

  private static HttpResponse<String> call(
      HttpClient client, Way way, HttpRequest put, LateFailing body, boolean fresh)
      throws Exception {
    HttpRequest r =
        fresh ? HttpRequest.newBuilder(put.uri()).PUT(body).build() : put; // one source a call
    if (way == Way.SEND) {
      return client.send(r, HttpResponse.BodyHandlers.ofString());
    }
    try {
      return client.sendAsync(r, HttpResponse.BodyHandlers.ofString()).get(20, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw new AssertionError(e.getCause());
    }
  }

  /**
   * Sends "abcd" and completes at its first request; {@link #failLate} then signals {@code onError}
   * to that first subscriber, as a publisher that breaks Flow's rules does.
   */
  static final class LateFailing implements HttpRequest.BodyPublisher {
    private final List<Flow.Subscriber<? super ByteBuffer>> subscribers =
        Collections.synchronizedList(new ArrayList<>());
    volatile boolean failedLate;
    volatile boolean completed; // its first subscriber was told onComplete

    @Override
    public long contentLength() {
      return 4;
    }

    @Override
    public void subscribe(Flow.Subscriber<? super ByteBuffer> s) {
      subscribers.add(s);
      AtomicBoolean sent = new AtomicBoolean();
      s.onSubscribe(
          new Flow.Subscription() {
            @Override
            public void request(long n) {
              if (sent.compareAndSet(false, true)) {
                s.onNext(ByteBuffer.wrap("abcd".getBytes(StandardCharsets.US_ASCII)));
                s.onComplete();
                completed = true;
              }
            }

            @Override
            public void cancel() {}
          });
    }

    /**
     * {@link #failLate} once the completion was told: the server may have the 4 bytes (and answer)
     * before the JDK's thread has gone on to tell it, and a failure before it is not a late one.
     */
    void failAfterCompletion() {
      Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> completed);
      failLate();
    }

    void failLate() {
      if (!failedLate) {
        failedLate = true;
        subscribers.get(0).onError(new IOException("disk"));
      }
    }
  }

  /**
   * A loopback HTTP/1.1 server that reads each request (Content-Length framed) and answers the next
   * of its script: "503" (body "busy"), "200" (body "ok"), "503big" / "503chunked" (body {@link
   * #BIG}, of a Content-Length / chunked), "503slow" (as "503big", running {@code midBody} after
   * the head and the page's first 100 bytes), or "close" (closes without an answer, after running
   * {@code beforeClose}); past the script's end, "200". Connection: close.
   */
  static final class ScriptedServer implements AutoCloseable {
    private final ServerSocket socket = new ServerSocket();
    private final List<String> script;
    private final Runnable beforeClose;
    // "503slow": run once the head and the page's first bytes are sent, before the rest.
    volatile Runnable midBody = () -> {};
    private final List<String> received = new CopyOnWriteArrayList<>();
    private int next;
    private final Thread thread;

    ScriptedServer(List<String> script, Runnable beforeClose) throws IOException {
      this.script = script;
      this.beforeClose = beforeClose;
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      thread = new Thread(this::serve, "scripted-http");
      thread.setDaemon(true);
      thread.start();
    }

    String url(String path) {
      return "http://127.0.0.1:" + socket.getLocalPort() + path;
    }

    List<String> received() {
      return new ArrayList<>(received);
    }

    synchronized void clearReceived() {
      received.clear();
      next = 0;
    }

    private synchronized String nextAction() {
      return next < script.size() ? script.get(next++) : "200";
    }

    private void serve() {
      while (!socket.isClosed()) {
        try (Socket s = socket.accept()) {
          s.setSoTimeout(10_000);
          InputStream in = s.getInputStream();
          String line = readLine(in);
          if (line == null || line.isEmpty()) {
            continue;
          }
          long length = 0;
          for (String h = readLine(in); h != null && !h.isEmpty(); h = readLine(in)) {
            String lower = h.toLowerCase(Locale.ROOT);
            if (lower.startsWith("content-length:")) {
              length = Long.parseLong(h.substring(h.indexOf(':') + 1).trim());
            }
          }
          ByteArrayOutputStream body = new ByteArrayOutputStream();
          for (long i = 0; i < length; i++) {
            int b = in.read();
            if (b < 0) {
              break;
            }
            body.write(b);
          }
          received.add(body.toString(StandardCharsets.US_ASCII));
          String action = nextAction();
          OutputStream out = s.getOutputStream();
          if (action.equals("close")) {
            if (beforeClose != null) {
              beforeClose.run();
            }
            continue; // closed by the try, no answer
          }
          if (action.equals("503chunked")) {
            out.write(
                ("HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n"
                        + "Connection: close\r\n\r\n"
                        + Integer.toHexString(BIG.length())
                        + "\r\n"
                        + BIG
                        + "\r\n0\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            continue;
          }
          if (action.equals("503chunkedSlow")) {
            out.write(
                ("HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n"
                        + "Connection: close\r\n\r\n64\r\n"
                        + BIG.substring(0, 100)
                        + "\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            midBody.run();
            out.write(
                (Integer.toHexString(BIG.length() - 100)
                        + "\r\n"
                        + BIG.substring(100)
                        + "\r\n0\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            continue;
          }
          if (action.equals("503slow")) {
            out.write(
                ("HTTP/1.1 503 Service Unavailable\r\nContent-Length: "
                        + BIG.length()
                        + "\r\nConnection: close\r\n\r\n"
                        + BIG.substring(0, 100))
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            midBody.run();
            out.write(BIG.substring(100).getBytes(StandardCharsets.US_ASCII));
            out.flush();
            continue;
          }
          String text = action.equals("503") ? "busy" : action.equals("503big") ? BIG : "ok";
          String status = action.equals("503big") ? "503" : action;
          out.write(
              ("HTTP/1.1 "
                      + status
                      + (status.equals("503") ? " Service Unavailable" : " OK")
                      + "\r\nContent-Length: "
                      + text.length()
                      + "\r\nConnection: close\r\n\r\n"
                      + text)
                  .getBytes(StandardCharsets.US_ASCII));
          out.flush();
        } catch (IOException e) {
          if (socket.isClosed()) {
            return;
          }
        }
      }
    }

    private static String readLine(InputStream in) throws IOException {
      StringBuilder b = new StringBuilder();
      for (int c = in.read(); c >= 0; c = in.read()) {
        if (c == '\n') {
          int end = b.length();
          return end > 0 && b.charAt(end - 1) == '\r' ? b.substring(0, end - 1) : b.toString();
        }
        b.append((char) c);
      }
      return b.length() == 0 ? null : b.toString();
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }
}
