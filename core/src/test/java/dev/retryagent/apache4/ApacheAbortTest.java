package dev.retryagent.apache4;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

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
import org.apache.http.client.methods.HttpGet;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.util.EntityUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code abort()} of an HttpClient 4.5 request during an attempt: a real client on a loopback
 * server that answers late; the caller aborts once the server has the request.
 */
class ApacheAbortTest {
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private ScriptedHttpServer server;

  @AfterEach
  void stop() throws Exception {
    if (server != null) server.close();
  }

  private Throwable abortedCall(CloseableHttpClient client) throws Exception {
    int before = server.requestCount();
    HttpGet get = new HttpGet(server.url("/items"));
    CompletableFuture<Throwable> outcome =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                client.execute(
                    get,
                    (org.apache.http.client.ResponseHandler<String>)
                        r -> EntityUtils.toString(r.getEntity()));
                return null;
              } catch (Throwable e) {
                return e;
              }
            });
    await().atMost(Duration.ofSeconds(5)).until(() -> server.requestCount() > before);
    get.abort();
    return outcome.get(5, TimeUnit.SECONDS);
  }

  @Test
  void anAbortDuringAnAttemptFailsAsWithoutUsAndIsNotTheHostsFailureForTheBreaker()
      throws Exception {
    server = new ScriptedHttpServer();
    server.otherwise(status(200).body("ok").delay(3000));
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      plain = abortedCall(c);
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
    try (CloseableHttpClient c = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine)) {
      // HttpClient's abort() closes the socket: "Socket closed", as without us, and not retried.
      Throwable a = abortedCall(c);
      Throwable b = abortedCall(c);
      assertThat(a).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
      assertThat(b).isExactlyInstanceOf(plain.getClass());
      assertThat(server.awaitRequests(3)).isEqualTo(requests(3));
      // Two aborts in a window of two were two failures of the host: the breaker opened, and
      // refused the next call (CircuitBreakerOpenException) though the host answers.
      server.otherwise(status(200).body("ok"));
      String body =
          c.execute(
              new HttpGet(server.url("/x")),
              (org.apache.http.client.ResponseHandler<String>)
                  r -> EntityUtils.toString(r.getEntity()));
      assertThat(body).isEqualTo("ok");
    }
  }

  private static String body(CloseableHttpClient c, HttpGet get) throws Exception {
    return c.execute(
        get,
        (org.apache.http.client.ResponseHandler<String>) r -> EntityUtils.toString(r.getEntity()));
  }

  @Test
  void anAbortDuringTheWaitGivesTheCallUpAtTheAttemptItReachedAsWithoutUs() throws Exception {
    // SyncRetryLoop started the retry after the wait and counted it (GIVE_UP at attempt 2), though
    // HttpClient sent nothing for the aborted request.
    server = new ScriptedHttpServer();
    server.enqueue(status(503), status(200).body("second"), status(200).body("third"));
    java.util.concurrent.atomic.AtomicReference<Runnable> duringTheWait =
        new java.util.concurrent.atomic.AtomicReference<>();
    RetryEngine engine = TestEngines.rateLimitedTo(3, time, duringTheWait, events);
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      HttpGet get = new HttpGet(server.url("/plain"));
      get.abort();
      plain = org.assertj.core.api.Assertions.catchThrowable(() -> body(c, get));
    }
    try (CloseableHttpClient c = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine)) {
      HttpGet get = new HttpGet(server.url("/items"));
      duringTheWait.set(get::abort);

      Throwable ours = org.assertj.core.api.Assertions.catchThrowable(() -> body(c, get));

      assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
      assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
      assertThat(events)
          .extracting(e -> e.type() + " " + e.attempt() + " " + e.reason())
          .containsExactly("RETRY 1 null", "GIVE_UP 1 CANCELLED");
      // Of the 3 permits only the first attempt's is spent: any taken for the retry went back once.
      assertThat(body(c, new HttpGet(server.url("/x")))).isEqualTo("second");
      assertThat(body(c, new HttpGet(server.url("/x")))).isEqualTo("third");
      assertThat(
              org.assertj.core.api.Assertions.catchThrowable(
                  () -> body(c, new HttpGet(server.url("/x")))))
          .isInstanceOf(dev.retryagent.engine.RateLimitedException.class);
      assertThat(server.awaitRequests(3)).isEqualTo(requests(3));
    }
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  @SuppressWarnings("deprecation")
  void anAbortWhileTheFirstAttemptWaitsForItsPermitIsToldAsARefusedFirstAttempt(boolean deprecated)
      throws Exception {
    // abort() while the first attempt waits for the rate limit's permit: nothing is sent, the
    // caller gets what HttpClient throws for a request aborted before it went, and the call is
    // told as a first attempt the client refused (0 attempts), its permit back. The deprecated
    // DefaultHttpClient too, whose request director asks no isAborted() before it leases a
    // connection (the aborted request's cancellable closes the connection it leased).
    server = new ScriptedHttpServer();
    server.otherwise(status(200).body("fine"));
    java.util.concurrent.atomic.AtomicReference<Runnable> duringTheWait =
        new java.util.concurrent.atomic.AtomicReference<>();
    dev.retryagent.testing.EventLines told = new dev.retryagent.testing.EventLines();
    RetryEngine engine = TestEngines.onePermitASecond(time, duringTheWait, told);
    Throwable plain;
    try (CloseableHttpClient c =
        deprecated
            ? new org.apache.http.impl.client.DefaultHttpClient()
            : HttpClients.createDefault()) {
      HttpGet get = new HttpGet(server.url("/plain"));
      get.abort();
      plain = org.assertj.core.api.Assertions.catchThrowable(() -> body(c, get));
    }
    assertThat(server.awaitRequests(0)).as("the plain client sent nothing").isEqualTo(requests(0));
    try (CloseableHttpClient c =
        deprecated
            ? RetryingCloseableHttpClient.wrap(
                new org.apache.http.impl.client.DefaultHttpClient(), engine)
            : RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine)) {
      long first = time.nanoTime();
      assertThat(body(c, new HttpGet(server.url("/first")))).isEqualTo("fine");
      told.lines.clear();
      HttpGet get = new HttpGet(server.url("/items"));
      duringTheWait.set(get::abort);

      Throwable ours = org.assertj.core.api.Assertions.catchThrowable(() -> body(c, get));

      assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
      assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
      assertThat(told.lines)
          .containsExactly(
              "RATE_LIMITED 0", "ATTEMPT 1", "GIVE_UP 0 CANCELLED", "CALL_COMPLETE 0 CANCELLED");
      // The permit reserved for it (due 1 s after the first call's) went back: the next call's
      // is due then, not 1 s later.
      assertThat(body(c, new HttpGet(server.url("/next")))).isEqualTo("fine");
      assertThat(time.nanoTime() - first).isEqualTo(TimeUnit.SECONDS.toNanos(1));
    }
  }
}
