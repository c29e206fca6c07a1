package dev.retryagent.apache5;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.http.io.HttpClientResponseHandler;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;

/**
 * {@code cancel()} of an HttpClient 5 request during an attempt: a real client on a loopback server
 * that answers late; the caller cancels once the server has the request.
 */
class ApacheCancelTest {
  private static final HttpClientResponseHandler<String> BODY =
      r -> EntityUtils.toString(r.getEntity());
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private ScriptedHttpServer server;

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.close();
    }
  }

  private Throwable cancelledCall(CloseableHttpClient client) throws Exception {
    int before = server.requestCount();
    HttpGet get = new HttpGet(server.url("/items"));
    CompletableFuture<Throwable> outcome =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                client.execute(get, BODY);
                return null;
              } catch (Throwable e) {
                return e;
              }
            });
    await().atMost(Duration.ofSeconds(5)).until(() -> server.requestCount() > before);
    get.cancel();
    return outcome.get(5, TimeUnit.SECONDS);
  }

  @Test
  void aCancelDuringAnAttemptFailsAsWithoutUsAndIsNotTheHostsFailureForTheBreaker()
      throws Exception {
    server = new ScriptedHttpServer();
    server.otherwise(status(200).body("ok").delay(3000));
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      plain = cancelledCall(c);
    }
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.maxAttempts(3),
            CircuitBreakerPolicy.builder()
                .countWindow(2)
                .minimumCalls(2)
                .openFor(Duration.ofSeconds(100))
                .halfOpenCalls(1)
                .build(),
            events);
    try (CloseableHttpClient c = RetryExecHandler.addTo(HttpClients.custom(), engine).build()) {
      Throwable a = cancelledCall(c);
      Throwable b = cancelledCall(c);
      // HttpClient 5 fails it as "Request aborted" (RequestFailedException), a cancel already.
      assertThat(a).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
      assertThat(b).isExactlyInstanceOf(plain.getClass());
      assertThat(server.awaitRequests(3)).isEqualTo(requests(3));
      server.otherwise(status(200).body("ok"));
      assertThat(c.execute(new HttpGet(server.url("/x")), BODY)).isEqualTo("ok");
    }
  }

  @Test
  void aCancelDuringTheWaitGivesTheCallUpAtTheAttemptItReachedAsWithoutUs() throws Exception {
    // SyncRetryLoop started the retry after the wait and counted it (GIVE_UP at attempt 2), though
    // HttpClient sent nothing for the cancelled request.
    server = new ScriptedHttpServer();
    server.enqueue(status(503), status(200).body("second"), status(200).body("third"));
    java.util.concurrent.atomic.AtomicReference<Runnable> duringTheWait =
        new java.util.concurrent.atomic.AtomicReference<>();
    RetryEngine engine = TestEngines.rateLimitedTo(3, time, duringTheWait, events);
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      HttpGet get = new HttpGet(server.url("/plain"));
      get.cancel();
      plain = org.assertj.core.api.Assertions.catchThrowable(() -> c.execute(get, BODY));
    }
    try (CloseableHttpClient c = RetryExecHandler.addTo(HttpClients.custom(), engine).build()) {
      HttpGet get = new HttpGet(server.url("/items"));
      duringTheWait.set(get::cancel);

      Throwable ours = org.assertj.core.api.Assertions.catchThrowable(() -> c.execute(get, BODY));

      assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
      assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
      assertThat(events)
          .extracting(e -> e.type() + " " + e.attempt() + " " + e.reason())
          .containsExactly("RETRY 1 null", "GIVE_UP 1 CANCELLED");
      // Of the 3 permits only the first attempt's is spent: any taken for the retry went back once.
      assertThat(c.execute(new HttpGet(server.url("/x")), BODY)).isEqualTo("second");
      assertThat(c.execute(new HttpGet(server.url("/x")), BODY)).isEqualTo("third");
      assertThat(
              org.assertj.core.api.Assertions.catchThrowable(
                  () -> c.execute(new HttpGet(server.url("/x")), BODY)))
          .isInstanceOf(dev.retryagent.engine.RateLimitedException.class);
      assertThat(server.awaitRequests(3)).isEqualTo(requests(3));
    }
  }

  @Test
  void aCancelWhileTheFirstAttemptWaitsForItsPermitIsToldAsARefusedFirstAttempt() throws Exception {
    // cancel() while the first attempt waits for the rate limit's permit: nothing is sent, the
    // caller gets what HttpClient throws for a request cancelled before it went, and the call is
    // told as a first attempt the client refused (0 attempts), its permit back.
    server = new ScriptedHttpServer();
    server.otherwise(status(200).body("fine"));
    java.util.concurrent.atomic.AtomicReference<Runnable> duringTheWait =
        new java.util.concurrent.atomic.AtomicReference<>();
    dev.retryagent.testing.EventLines told = new dev.retryagent.testing.EventLines();
    RetryEngine engine = TestEngines.onePermitASecond(time, duringTheWait, told);
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      HttpGet get = new HttpGet(server.url("/plain"));
      get.cancel();
      plain = org.assertj.core.api.Assertions.catchThrowable(() -> c.execute(get, BODY));
    }
    try (CloseableHttpClient c = RetryExecHandler.addTo(HttpClients.custom(), engine).build()) {
      long first = time.nanoTime();
      assertThat(c.execute(new HttpGet(server.url("/first")), BODY)).isEqualTo("fine");
      told.lines.clear();
      HttpGet get = new HttpGet(server.url("/items"));
      duringTheWait.set(get::cancel);

      Throwable ours = org.assertj.core.api.Assertions.catchThrowable(() -> c.execute(get, BODY));

      assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
      assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
      assertThat(told.lines)
          .containsExactly(
              "RATE_LIMITED 0", "ATTEMPT 1", "GIVE_UP 0 CANCELLED", "CALL_COMPLETE 0 CANCELLED");
      // The permit reserved for it (due 1 s after the first call's) went back: the next call's
      // is due then, not 1 s later.
      assertThat(c.execute(new HttpGet(server.url("/next")), BODY)).isEqualTo("fine");
      assertThat(time.nanoTime() - first).isEqualTo(TimeUnit.SECONDS.toNanos(1));
    }
  }

  /** A call on a thread of its own, which is interrupted once the server has the request. */
  private String interruptedCall(CloseableHttpClient client) throws Exception {
    int before = server.requestCount();
    CompletableFuture<String> outcome = new CompletableFuture<>();
    Thread caller =
        new Thread(
            () -> {
              try {
                String answer =
                    client.execute(
                        new HttpGet(server.url("/items")),
                        r -> r.getCode() + " " + EntityUtils.toString(r.getEntity()));
                boolean flag = Thread.currentThread().isInterrupted();
                outcome.complete(answer + (flag ? ", interrupted" : ""));
              } catch (Throwable e) {
                outcome.complete(e.toString());
              }
            });
    caller.start();
    await().atMost(Duration.ofSeconds(5)).until(() -> server.requestCount() > before);
    caller.interrupt();
    return outcome.get(10, TimeUnit.SECONDS);
  }

  @Test
  void aThreadInterruptedDuringTheCallGetsThe502AsWithoutUsTheFlagKept() throws Exception {
    // HttpClient's blocking I/O finishes an attempt whatever the interrupt: without us the caller
    // gets the 502, its flag still set. With us the wait before the retry threw at once, and the
    // caller got an InterruptedIOException, the 502 lost. (Not a 503: HttpClient's own strategy
    // waits to resend that one itself, and that wait ends in an InterruptedIOException.)
    server = new ScriptedHttpServer();
    server.otherwise(status(502).delay(1500));
    RetryEngine engine =
        TestEngines.engine(
            time, Mode.ENFORCE, r -> r.maxAttempts(3), CircuitBreakerPolicy.defaults(), events);
    try (CloseableHttpClient plain = HttpClients.createDefault();
        CloseableHttpClient ours = RetryExecHandler.addTo(HttpClients.custom(), engine).build()) {
      assertThat(interruptedCall(plain)).isEqualTo("502 status 502, interrupted");
      assertThat(interruptedCall(ours)).isEqualTo("502 status 502, interrupted");
    }
    assertThat(server.awaitRequests(2)).as("one each, none retried").isEqualTo(requests(2));
  }

  /**
   * A call made on a thread whose interrupt flag is set already: its failure and the flag after.
   */
  private String preInterruptedCall(CloseableHttpClient client) throws Exception {
    CompletableFuture<String> outcome = new CompletableFuture<>();
    Thread caller =
        new Thread(
            () -> {
              Thread.currentThread().interrupt();
              String answer;
              try {
                answer = "" + client.execute(new HttpGet(server.url("/items")), BODY);
              } catch (Throwable e) {
                answer = e.getClass().getName() + ": " + e.getMessage();
              }
              outcome.complete(answer + ", interrupted " + Thread.currentThread().isInterrupted());
            });
    caller.start();
    return outcome.get(10, TimeUnit.SECONDS);
  }

  /**
   * HttpClient 5 refuses a thread interrupted before the call (its lease of a connection sees the
   * flag) and sends nothing: the caller gets the same failure and flag with or without us, and the
   * attempt gives its rate-limit permit back (a bucket of one still serves the next call) and is
   * not counted as one.
   */
  @Test
  void aThreadInterruptedBeforeTheCallFailsAsWithoutUsAndKeepsNoPermit() throws Exception {
    server = new ScriptedHttpServer();
    server.otherwise(status(200).body("ok"));
    dev.retryagent.internal.observe.RetryMetrics metrics =
        new dev.retryagent.internal.observe.RetryMetrics();
    RetryEngine engine = TestEngines.rateLimitedTo(1, time, events, metrics);
    try (CloseableHttpClient plain = HttpClients.createDefault();
        CloseableHttpClient ours = RetryExecHandler.addTo(HttpClients.custom(), engine).build()) {
      String without = preInterruptedCall(plain);
      assertThat(without)
          .isEqualTo("java.util.concurrent.CancellationException: null, interrupted true");
      assertThat(preInterruptedCall(ours)).isEqualTo(without);
      assertThat(server.requestCount()).as("nothing sent").isZero();
      // Nor counted as an attempt: attempts_total, JMX, the give-up's line and dead letter say 0.
      assertThat(metrics.route("test").attempts()).isZero();
      assertThat(events).singleElement().extracting(RetryEvent::attempt).isEqualTo(0);
      assertThat(ours.execute(new HttpGet(server.url("/x")), BODY)).isEqualTo("ok");
      assertThat(metrics.route("test").attempts()).isEqualTo(1);
    }
  }

  @Test
  void aRetrysWaitThatEndsPastTheDeadlineEndsTheCallWithTheAttemptsOutcome() throws Exception {
    // Each wait before a retry ends 40 s late (a paused JVM), past the 1 s deadline: the retry
    // went anyway with timeouts of 1 ms, the server got a request nobody waited for, and the
    // caller a SocketTimeoutException (or the retry's answer) instead of its outcome. (A reset
    // HttpClient resends itself at once, without a wait: the engine's tests take failures.)
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.deadline(Duration.ofSeconds(1)).retryAfterMax(Duration.ofSeconds(1)),
            CircuitBreakerPolicy.defaults(),
            events);
    time.late(40_000_000_000L);
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient ours = RetryExecHandler.addTo(HttpClients.custom(), engine).build()) {
      server.otherwise(ScriptedHttpServer.Action.ok("late"));
      // Near the deadline the 503 is kept through the wait: the caller reads it as it came.
      server.enqueue(status(503));
      String got =
          ours.execute(
              new HttpGet(server.url("/items")),
              r -> r.getCode() + " " + EntityUtils.toString(r.getEntity()));
      assertThat(got).isEqualTo("503 status 503");
      assertThat(server.requestCount()).isEqualTo(1);
    }
  }

  @ParameterizedTest
  @org.junit.jupiter.params.provider.CsvSource({
    "LENGTH, false",
    "LENGTH, true",
    "CHUNKED, false",
    "CHUNKED, true"
  })
  void aResponseReleasedBeforeAWaitThatEndsPastTheDeadlineIsGivenBackAsItCame(
      ScriptedHttpServer.Framing framing, boolean gzipped) throws Exception {
    // A 503 whose Retry-After (5 s, over the 1 s margin) has it released before the wait, which
    // ends 40 s late, past the 10 s deadline: the caller got the engine's IOException where
    // without the agent it had the 503. Now the copy kept as it was released (code, reason,
    // version, headers, body, the entity's details; gzipped: as HttpClient decoded it) is given
    // back, as HttpClient gives it without the agent, and nothing more is sent. Chunked too: the
    // copy and the release read it within their grace (Discards.Grace), and it has arrived.
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
            CircuitBreakerPolicy.defaults(),
            events);
    time.late(40_000_000_000L);
    // HttpClient's own retry off on both: without the agent it would resend the 503 itself.
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient plain = HttpClients.custom().disableAutomaticRetries().build();
        CloseableHttpClient ours =
            RetryExecHandler.addTo(HttpClients.custom().disableAutomaticRetries(), engine)
                .build()) {
      server.otherwise(ScriptedHttpServer.Action.ok("late"));

      String without = seen(plain, server, framing, gzipped);
      String with = seen(ours, server, framing, gzipped);

      assertThat(with).isEqualTo(without).contains("503", "Retry-After: 5", "busy, come back");
      assertThat(server.requestCount()).as("one each, none retried").isEqualTo(2);
      assertThat(events)
          .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
          .extracting(RetryEvent::reason)
          .containsExactly(GiveUpReason.DEADLINE);
      // The 503's connection went back to the pool as its body was read to its end for the
      // copy and the release, gzipped too: the release reads the body as it came, to the end
      // that gives the connection back, where HttpClient's decoder stops at the gzip trailer.
      HttpClientResponseHandler<String> body = r -> EntityUtils.toString(r.getEntity());
      assertThat(ours.execute(new HttpGet(server.url("/items")), body)).isEqualTo("late");
      assertThat(server.connectionCount())
          .as("one each, the next call on ours' first")
          .isEqualTo(2);
    }
  }

  /** What the caller sees of a 503 with a small body: all of it that HttpClient's API shows. */
  private static String seen(
      CloseableHttpClient client,
      ScriptedHttpServer server,
      ScriptedHttpServer.Framing framing,
      boolean gzipped)
      throws Exception {
    ScriptedHttpServer.Action busy =
        status(503)
            .header("Retry-After", "5")
            .header("X-Busy", "yes")
            .body("busy, come back")
            .framed(framing);
    server.enqueue(gzipped ? busy.gzipped() : busy);
    return client.execute(
        new HttpGet(server.url("/items")),
        r -> {
          HttpEntity e = r.getEntity();
          return r.getVersion()
              + " "
              + r.getCode()
              + " "
              + r.getReasonPhrase()
              + " "
              + java.util.Arrays.toString(r.getHeaders())
              + " locale "
              + r.getLocale()
              + " length "
              + e.getContentLength()
              + " type "
              + e.getContentType()
              + " encoding "
              + e.getContentEncoding()
              + " chunked "
              + e.isChunked()
              + " streaming "
              + e.isStreaming()
              + " repeatable "
              + e.isRepeatable()
              + " "
              + EntityUtils.toString(e);
        });
  }
}
