package dev.retryagent.jdk;

import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandler;
import java.net.http.HttpResponse.BodyHandlers;
import java.net.http.HttpResponse.BodySubscribers;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A java.net.http response released for a retry whose wait then ends past the call's deadline
 * (guarantees.md, Load and time 6): {@code send} and {@code sendAsync} give it to the application's
 * handler as the plain client does, compared field by field with the plain client's response from
 * the same loopback server. Each wait ends 40 s late (the engine's fake clock), past the 10 s
 * deadline; Retry-After 5 s has the response released before the wait.
 */
class GiveBackAfterALateWaitTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final HttpClient plain =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private HttpClient ours;
  private RetryEngine engine;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    server.otherwise(ScriptedHttpServer.Action.ok("late"));
    engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r ->
                r.deadline(Duration.ofSeconds(10))
                    .retryAfterMax(Duration.ofSeconds(5))
                    // The attempt is the agent's copy of the request: request() must not show it.
                    .attemptHeader("X-Attempt"),
            CircuitBreakerPolicy.defaults(),
            events);
    ours = RetryingHttpClient.wrap(plain, engine);
    time.late(40_000_000_000L);
  }

  /**
   * A client with an executor of its own, as the agent runs every give-back on one (it reaches the
   * JDK's pool, which the library may not: then the give-back runs where the call ends).
   */
  private final java.util.concurrent.ExecutorService pool =
      java.util.concurrent.Executors.newCachedThreadPool();

  private final HttpClient plainOnPool =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).executor(pool).build();

  @AfterEach
  void stop() throws IOException {
    server.close();
    pool.shutdownNow();
  }

  private HttpRequest get() {
    return HttpRequest.newBuilder(URI.create(server.url("/items")))
        .header("X-Own", "mine")
        .timeout(Duration.ofSeconds(30))
        .build();
  }

  private void enqueueBusy(String body) {
    server.enqueue(
        ScriptedHttpServer.Action.status(503)
            .header("Retry-After", "5")
            .header("X-Busy", "yes")
            .body(body));
  }

  /** How the application reads the body, each a different subscriber of the JDK's. */
  enum Reading {
    STRING(BodyHandlers.ofString()),
    BYTES(
        info ->
            BodySubscribers.mapping(
                BodySubscribers.ofByteArray(), b -> new String(b, StandardCharsets.UTF_8))),
    // Its getBody() completes at once; the bytes come as the application reads, on its thread,
    // one buffer at a time as the stream asks.
    STREAM(
        info ->
            BodySubscribers.mapping(
                BodySubscribers.ofInputStream(), GiveBackAfterALateWaitTest::readAll)),
    LINES(
        info ->
            BodySubscribers.mapping(
                BodySubscribers.ofLines(StandardCharsets.UTF_8),
                l -> String.join("\n", (Iterable<String>) l::iterator)));

    final BodyHandler<String> handler;

    Reading(BodyHandler<String> handler) {
      this.handler = handler;
    }
  }

  private static String readAll(InputStream in) {
    try (InputStream s = in) {
      return new String(s.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  enum Way {
    SEND,
    SEND_ASYNC
  }

  /**
   * The call through {@code client} the {@code way} given. Asynchronously, each wait is held until
   * the handler is seen not applied before it ends (on the fake scheduler's thread, as a wait ends
   * on the engine's), and the plain client's future too is read with get().
   */
  private <T> HttpResponse<T> call(
      Way way, HttpClient client, BodyHandler<T> handler, AtomicInteger applied) throws Exception {
    if (way == Way.SEND) {
      return client.send(get(), handler);
    }
    if (client == plain) {
      return client.sendAsync(get(), handler).get(20, TimeUnit.SECONDS);
    }
    time.holdTasks();
    CompletableFuture<HttpResponse<T>> f = client.sendAsync(get(), handler);
    await().atMost(Duration.ofSeconds(20)).until(() -> time.heldTasks() == 1);
    assertThat(applied).as("not applied before the wait").hasValue(0);
    time.runHeldTasks();
    return f.get(20, TimeUnit.SECONDS);
  }

  @ParameterizedTest
  @EnumSource(Reading.class)
  void aResponseReleasedBeforeAWaitThatEndsPastTheDeadlineIsGivenBackAsItCame(Reading reading)
      throws Exception {
    // Before: the call failed with the agent's IOException ("... ended past the call's deadline
    // ..., and the response had been released for the retry") where the plain client gave the 503.
    int calls = 0;
    for (Way way : Way.values()) {
      for (String body : new String[] {"busy, come back", "", "b".repeat(8192), "two\nlines"}) {
        AtomicInteger applied = new AtomicInteger();
        List<Integer> waitsWhenApplied = new CopyOnWriteArrayList<>();
        BodyHandler<String> counting =
            info -> {
              applied.incrementAndGet();
              waitsWhenApplied.add(time.waits().size());
              return reading.handler.apply(info);
            };
        int waitsBefore = time.waits().size();
        enqueueBusy(body);
        String without = seen(call(way, plain, reading.handler, null));
        enqueueBusy(body);
        String with = seen(call(way, ours, counting, applied));
        calls++;

        assertThat(with).as(way + ", " + body.length() + " bytes").isEqualTo(without);
        assertThat(with).contains("503", body);
        // The handler has effects (ofFile writes): applied once, at the end, never before the wait.
        assertThat(applied).hasValue(1);
        assertThat(waitsWhenApplied).containsExactly(waitsBefore + 1);
      }
    }
    assertThat(server.requestCount()).as("one each, none retried").isEqualTo(2 * calls);
    assertThat(server.requests())
        .extracting(r -> r.header("X-Attempt"))
        .containsOnly(null, "1")
        .filteredOn(h -> h != null)
        .hasSize(calls);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .hasSize(calls)
        .containsOnly(GiveUpReason.DEADLINE);
  }

  @Test
  void aSendAsyncCancelledDuringTheWaitNeverAppliesTheHandler() throws Exception {
    // The copy kept through the wait goes with the call's end: the late task finds nothing to
    // give, the handler is never applied, nothing more is sent.
    AtomicInteger applied = new AtomicInteger();
    BodyHandler<String> counting =
        info -> {
          applied.incrementAndGet();
          return BodySubscribers.ofString(StandardCharsets.UTF_8);
        };
    enqueueBusy("busy, come back");
    time.holdTasks();
    CompletableFuture<HttpResponse<String>> f = ours.sendAsync(get(), counting);
    await().atMost(Duration.ofSeconds(20)).until(() -> time.heldTasks() == 1);
    assertThat(f.cancel(true)).isTrue();
    time.runHeldTasks();
    assertThat(f).isCancelled();
    assertThat(applied).hasValue(0);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
  }

  @Test
  void anInterruptWhileSendAwaitsTheHandlersBodyEndsTheCallAsTheJdkEndsIt() throws Exception {
    // A subscriber whose body never completes: send waits for it, and the caller's interrupt ends
    // the call with send's own InterruptedException (no message), the flag cleared, as the JDK's.
    // What its subscriber is told is the JDK's (JDK 20+, 17.0.17+: onError "Request cancelled" on
    // the caller's thread; before: nothing): before, the replay stopped without telling it.
    List<List<String>> told = new CopyOnWriteArrayList<>();
    for (HttpClient client : new HttpClient[] {plain, ours}) {
      CountDownLatch applied = new CountDownLatch(1);
      NeverEnding subscriber = new NeverEnding();
      told.add(subscriber.told);
      BodyHandler<String> never =
          info -> {
            applied.countDown();
            return subscriber;
          };
      enqueueBusy("busy, come back");
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      AtomicReference<Boolean> flag = new AtomicReference<>();
      Thread caller =
          new Thread(
              () -> {
                try {
                  client.send(get(), never);
                } catch (Throwable t) {
                  thrown.set(t);
                  flag.set(Thread.currentThread().isInterrupted());
                }
              },
              "the-caller");
      caller.start();
      assertThat(applied.await(20, TimeUnit.SECONDS)).isTrue();
      await().atMost(Duration.ofSeconds(20)).until(() -> caller.getState() == Thread.State.WAITING);
      caller.interrupt();
      caller.join(20_000);
      assertThat(caller.isAlive()).isFalse();
      assertThat(thrown.get()).isInstanceOf(InterruptedException.class).hasMessage(null);
      assertThat(flag.get()).isFalse();
    }
    assertThat(told.get(1)).isEqualTo(told.get(0));
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
  }

  /**
   * A body subscriber that asks for nothing until told and never completes its body; it records
   * what it is told, and on which thread.
   */
  static class NeverEnding implements HttpResponse.BodySubscriber<String> {
    final List<String> told = new CopyOnWriteArrayList<>();
    // Open once both onSubscribe and getBody were called: the give-back asks getBody after
    // onSubscribe returned, so a cancel then never meets a signal still running (one told when
    // it returns, on its thread: guarantees.md 6); the JDK asks them in its own order.
    final CountDownLatch subscribed = new CountDownLatch(2);
    volatile Flow.Subscription subscription;

    @Override
    public java.util.concurrent.CompletionStage<String> getBody() {
      subscribed.countDown();
      return new CompletableFuture<>();
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
      this.subscription = subscription;
      subscribed.countDown();
    }

    @Override
    public void onNext(List<ByteBuffer> item) {
      told.add("onNext on " + Thread.currentThread().getName());
    }

    @Override
    public void onError(Throwable throwable) {
      told.add("onError " + throwable + " on " + Thread.currentThread().getName());
    }

    @Override
    public void onComplete() {
      told.add("onComplete on " + Thread.currentThread().getName());
    }
  }

  /** Where a handler's and its subscriber's signals ran: the thread names, numbers as N. */
  private static BodyHandler<String> recordingThreads(List<String> threads) {
    return info -> {
      threads.add("apply on " + pattern());
      HttpResponse.BodySubscriber<String> own = BodySubscribers.ofString(StandardCharsets.UTF_8);
      return new HttpResponse.BodySubscriber<>() {
        @Override
        public java.util.concurrent.CompletionStage<String> getBody() {
          return own.getBody();
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
          threads.add("onSubscribe on " + pattern());
          own.onSubscribe(s);
        }

        @Override
        public void onNext(List<ByteBuffer> item) {
          threads.add("onNext on " + pattern());
          own.onNext(item);
        }

        @Override
        public void onError(Throwable t) {
          threads.add("onError on " + pattern());
          own.onError(t);
        }

        @Override
        public void onComplete() {
          threads.add("onComplete on " + pattern());
          own.onComplete();
        }
      };
    };
  }

  private static String pattern() {
    return Thread.currentThread().getName().replaceAll("[0-9]+", "N");
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void theHandlerAndItsSubscriberRunOnTheClientsExecutorAsTheJdkRunsThem(Way way) throws Exception {
    // Before: on the caller's thread (send) or the JDK's async pool (sendAsync), where the JDK
    // runs them on the executor the application gave the client (read in HttpClientImpl and
    // Http1Response, JDK 17 and 25); sendAsync's dependent stages on the async pool, as the JDK's.
    AtomicInteger n = new AtomicInteger();
    java.util.concurrent.ExecutorService own =
        java.util.concurrent.Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "app-executor-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    try {
      HttpClient plainWithOwn =
          HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).executor(own).build();
      HttpClient oursWithOwn = RetryingHttpClient.wrap(plainWithOwn, engine);
      String asyncPool =
          CompletableFuture.supplyAsync(GiveBackAfterALateWaitTest::pattern)
              .get(20, TimeUnit.SECONDS);
      List<String> expected =
          List.of(
              "apply on app-executor-N",
              "onSubscribe on app-executor-N",
              "onNext on app-executor-N",
              "onComplete on app-executor-N");
      for (HttpClient client : new HttpClient[] {plainWithOwn, oursWithOwn}) {
        List<String> threads = new CopyOnWriteArrayList<>();
        enqueueBusy("busy, come back");
        HttpResponse<String> r;
        if (way == Way.SEND) {
          r = client.send(get(), recordingThreads(threads));
          if (client == plainWithOwn) {
            // The JDK's send runs them there too, but on the caller's thread when the response
            // was read before the caller subscribed (now and then): not compared signal by signal.
            assertThat(threads).hasSize(4);
            continue;
          }
        } else {
          if (client == oursWithOwn) {
            time.holdTasks();
          }
          CompletableFuture<HttpResponse<String>> f =
              client.sendAsync(get(), recordingThreads(threads));
          CompletableFuture<String> dependent = f.thenApply(x -> pattern());
          if (client == oursWithOwn) {
            await().atMost(Duration.ofSeconds(20)).until(() -> time.heldTasks() == 1);
            time.runHeldTasks();
          }
          r = f.get(20, TimeUnit.SECONDS);
          String ranOn = dependent.get(20, TimeUnit.SECONDS);
          if (!ranOn.equals(pattern())) { // not the test's thread: the plain future completed late
            assertThat(ranOn).as("a dependent stage").isEqualTo(asyncPool);
          }
        }
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(r.body()).isEqualTo("busy, come back");
        assertThat(threads)
            .as(client == plainWithOwn ? "the JDK" : "given back")
            .isEqualTo(expected);
      }
    } finally {
      own.shutdownNow();
    }
  }

  @Test
  void withoutAnExecutorOfItsOwnTheLibraryCannotReachTheJdksPool() {
    // The JDK's own pool is in java.net.http's internal package, closed to the class path: the
    // library runs the give-back where the call ends (the agent opens the package to itself).
    assertThat(dev.retryagent.internal.jdk.ClientExecutor.of(plain)).isNull();
    java.util.concurrent.Executor own = Runnable::run;
    assertThat(
            dev.retryagent.internal.jdk.ClientExecutor.of(
                HttpClient.newBuilder().executor(own).build()))
        .isSameAs(own);
  }

  @ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
  void aCancelWhileTheBodyIsReadStopsItAsTheJdkStopsIt(boolean mayInterrupt) throws Exception {
    // Before: any cancel stopped the replay without telling the subscriber. The JDK: cancel(true)
    // tells it onError("Request cancelled") on the cancelling thread (JDK 20+, 17.0.17+; before,
    // nothing); cancel(false) leaves the exchange alone, and the body goes on as it asks.
    // On clients with an executor of their own, as the agent runs every give-back (it reaches the
    // JDK's pool): where the library cannot reach it, the give-back runs inline where the call
    // ends, and a cancel as onSubscribe returns may come before the loop holds the give-back.
    HttpClient oursOnPool = RetryingHttpClient.wrap(plainOnPool, engine);
    List<List<String>> told = new CopyOnWriteArrayList<>();
    for (HttpClient client : new HttpClient[] {plainOnPool, oursOnPool}) {
      NeverEnding subscriber = new NeverEnding();
      CompletableFuture<HttpResponse<String>> f =
          sendAsyncBusy(client, client == oursOnPool, subscriber);
      assertThat(subscriber.subscribed.await(20, TimeUnit.SECONDS)).isTrue();
      assertThat(f.cancel(mayInterrupt)).isTrue();
      if (!mayInterrupt) {
        subscriber.subscription.request(1);
        await()
            .atMost(Duration.ofSeconds(20))
            .until(() -> subscriber.told.stream().anyMatch(t -> t.startsWith("onComplete")));
      }
      told.add(
          subscriber.told.stream()
              .map(t -> t.replaceAll(" on .*", ""))
              .collect(java.util.stream.Collectors.toList()));
      if (mayInterrupt) {
        assertThat(subscriber.told)
            .allMatch(t -> t.endsWith(" on " + Thread.currentThread().getName()));
      }
    }
    assertThat(told.get(1)).isEqualTo(told.get(0));
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
  }

  @Test
  void aCancelWhileTheSubscriberSubscribesIsToldOnTheCancellingThreadOnceItReturns()
      throws Exception {
    // cancel(true) while the handler's subscriber was still in onSubscribe on the client's
    // executor: the JDK (HttpBodySubscriberWrapper's subscriptionLock, JDK 20+, 17.0.17+) waits for
    // onSubscribe to return, then tells onError on the cancelling thread before cancel returns.
    // Before, the give-back's cancel returned at once and onError came later, on the executor's
    // thread (a test that looked right after its cancel found nothing told, now and then). On a
    // client with an executor of its own, as the agent runs every give-back (it reaches the JDK's
    // pool); where the library cannot reach it, the give-back runs where the call ends.
    HttpClient oursOnPool = RetryingHttpClient.wrap(plainOnPool, engine);
    List<List<String>> told = new CopyOnWriteArrayList<>();
    for (HttpClient client : new HttpClient[] {plainOnPool, oursOnPool}) {
      CountDownLatch entered = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      NeverEnding subscriber =
          new NeverEnding() {
            @Override
            public void onSubscribe(Flow.Subscription subscription) {
              entered.countDown();
              try {
                release.await(20, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              super.onSubscribe(subscription);
            }
          };
      CompletableFuture<HttpResponse<String>> f =
          sendAsyncBusy(client, client == oursOnPool, subscriber);
      assertThat(entered.await(20, TimeUnit.SECONDS)).isTrue();
      List<String> toldWhenCancelReturned = new CopyOnWriteArrayList<>();
      Thread canceller =
          new Thread(
              () -> {
                f.cancel(true);
                toldWhenCancelReturned.addAll(subscriber.told);
              },
              "canceller");
      canceller.start();
      await()
          .atMost(Duration.ofSeconds(20))
          .until(
              () ->
                  canceller.getState() == Thread.State.WAITING
                      || canceller.getState() == Thread.State.TERMINATED);
      release.countDown();
      canceller.join(20_000);
      assertThat(canceller.isAlive()).isFalse();
      told.add(toldWhenCancelReturned);
    }
    assertThat(told.get(1)).isEqualTo(told.get(0));
    assertThat(told.get(0)) // nothing told before JDK 20 and 17.0.17
        .isSubsetOf(List.of("onError java.io.IOException: Request cancelled on canceller"));
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
  }

  /**
   * {@code client.sendAsync} of a 503 with {@code subscriber}; {@code ours}: its retry's wait,
   * held, ends past the deadline, and the 503 is given back.
   */
  private CompletableFuture<HttpResponse<String>> sendAsyncBusy(
      HttpClient client, boolean ours, NeverEnding subscriber) {
    enqueueBusy("busy, come back");
    if (ours) {
      time.holdTasks();
    }
    CompletableFuture<HttpResponse<String>> f = client.sendAsync(get(), info -> subscriber);
    if (ours) {
      await().atMost(Duration.ofSeconds(20)).until(() -> time.heldTasks() == 1);
      time.runHeldTasks();
    }
    return f;
  }

  /** All that HttpResponse shows the application, its request's too. */
  private static String seen(HttpResponse<String> r) {
    HttpRequest q = r.request();
    return r.statusCode()
        + " "
        + r.headers().map()
        + " body ["
        + r.body()
        + "] version "
        + r.version()
        + " uri "
        + r.uri()
        + " tls "
        + r.sslSession().isPresent()
        + " previous "
        + r.previousResponse().isPresent()
        + " string "
        + r
        + " request "
        + q.method()
        + " "
        + q.uri()
        + " "
        + q.headers().map()
        + " "
        + q.timeout()
        + " "
        + q.version()
        + " "
        + q.expectContinue()
        + " "
        + q.bodyPublisher().isPresent();
  }

  /** The call {@code way} makes with {@code ours}, its failure as the caller gets it. */
  private org.assertj.core.api.ThrowableAssert.ThrowingCallable sent(Way way) {
    return () -> {
      if (way == Way.SEND) {
        ours.send(get(), BodyHandlers.ofString());
      } else {
        try {
          ours.sendAsync(get(), BodyHandlers.ofString()).get(20, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          throw e.getCause();
        }
      }
    };
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aBodyOverTheLimitIsNotGivenBack(Way way) throws Exception {
    // Over 8 KiB the body is dropped as before: the call fails with the engine's IOException.
    enqueueBusy("b".repeat(8193));
    assertThatThrownBy(sent(way))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("ended past the call's deadline");
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Way.class)
  void aBodyHeldPastTheRetrysGraceIsNotGivenBack(Way way) throws Exception {
    // The 503's head and 4 bytes of its body arrive, the rest only when the test releases it (the
    // server's own bound: 10 s). Before, the agent waited for the rest as long as the server held
    // it, then gave the whole 503 back. Now the body is let go once the retry's grace is over
    // (DiscardedBody.grace): not whole, it cannot be given back, and the call fails as one over
    // the limit does, without waiting for the server.
    CountDownLatch release = new CountDownLatch(1);
    server.enqueue(
        ScriptedHttpServer.Action.status(503)
            .header("Retry-After", "5")
            .body("busy busy busy")
            .heldAfter(4, release));
    try {
      assertThatThrownBy(sent(way))
          .isInstanceOf(IOException.class)
          .hasMessageContaining("ended past the call's deadline");
      assertThat(server.requestCount()).isEqualTo(1);
    } finally {
      release.countDown();
    }
  }

  /** Handlers and subscribers that fail, as the application's may. */
  enum Failing {
    HANDLER_THROWS(
        info -> {
          throw new IllegalStateException("no 503 here");
        }),
    HANDLER_REFUSES(
        info -> {
          throw new IllegalArgumentException("refused");
        }),
    ON_NEXT_THROWS(BodyHandlers.fromSubscriber(new Throwing())),
    // Not through fromSubscriber: its adapter completes the body asynchronously even when
    // onComplete throws, and races the onError that follows (the JDK's own outcome varies).
    ON_COMPLETE_THROWS(info -> new ThrowingAtComplete()),
    BODY_FAILS(
        info ->
            BodySubscribers.mapping(
                BodySubscribers.ofString(StandardCharsets.UTF_8),
                s -> {
                  throw new java.io.UncheckedIOException(new IOException("cannot map " + s));
                }));

    final BodyHandler<Object> handler;

    @SuppressWarnings("unchecked")
    Failing(BodyHandler<?> handler) {
      this.handler = (BodyHandler<Object>) handler;
    }
  }

  /** A subscriber of the application's that throws from onNext. */
  static final class Throwing implements Flow.Subscriber<List<ByteBuffer>> {
    @Override
    public void onSubscribe(Flow.Subscription s) {
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> item) {
      throw new IllegalStateException("onNext broke");
    }

    @Override
    public void onError(Throwable throwable) {}

    @Override
    public void onComplete() {}
  }

  /** A body subscriber whose onComplete throws; its body ends with what onError tells it. */
  static final class ThrowingAtComplete implements HttpResponse.BodySubscriber<Object> {
    private final CompletableFuture<Object> body = new CompletableFuture<>();

    @Override
    public java.util.concurrent.CompletionStage<Object> getBody() {
      return body;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> item) {}

    @Override
    public void onError(Throwable throwable) {
      body.completeExceptionally(throwable);
    }

    @Override
    public void onComplete() {
      throw new IllegalStateException("onComplete broke");
    }
  }

  @ParameterizedTest
  @EnumSource(Failing.class)
  void aHandlerOrSubscriberThatFailsFailsTheGivenBackCallAsTheJdkFailsIt(Failing failing)
      throws Exception {
    enqueueBusy("busy, come back");
    String without = thrown(() -> plain.send(get(), failing.handler));
    enqueueBusy("busy, come back");
    String with = thrown(() -> ours.send(get(), failing.handler));
    // The JDK: IOException (IllegalArgumentException as such) around the handler's or the
    // subscriber's exception (an onComplete that throws: told onError with it).
    assertThat(with).isEqualTo(without);

    // sendAsync: the future fails as the JDK's does, seen as a dependent stage sees it.
    enqueueBusy("busy, come back");
    without = failed(plain.sendAsync(get(), failing.handler));
    enqueueBusy("busy, come back");
    with = failed(ours.sendAsync(get(), failing.handler));
    assertThat(with).isEqualTo(without);
    assertThat(server.requestCount()).isEqualTo(4);
  }

  /** How a dependent stage sees the future's end: the throwable's chain, or the response. */
  private static String failed(CompletableFuture<? extends HttpResponse<?>> f) throws Exception {
    return f.handle(
            (r, e) -> {
              if (e == null) {
                return "no exception: " + r.statusCode() + " " + r.body();
              }
              StringBuilder b = new StringBuilder();
              for (Throwable t = e; t != null; t = t.getCause()) {
                b.append(t.getClass().getName()).append(": ").append(t.getMessage()).append(" / ");
              }
              return b.toString();
            })
        .get(20, TimeUnit.SECONDS);
  }

  private interface Send {
    HttpResponse<?> send() throws Exception;
  }

  /** The exception as the application sees it: its class and message, and its cause's. */
  private static String thrown(Send send) {
    try {
      HttpResponse<?> r = send.send();
      return "no exception: " + r.statusCode() + " " + r.body();
    } catch (Exception e) {
      Throwable c = e.getCause();
      return e.getClass().getName()
          + ": "
          + e.getMessage()
          + (c == null ? "" : " caused by " + c.getClass().getName() + ": " + c.getMessage());
    }
  }
}
