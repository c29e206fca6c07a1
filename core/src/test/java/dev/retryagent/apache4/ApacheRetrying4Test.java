package dev.retryagent.apache4;

import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.Sleeper;
import dev.retryagent.internal.Graces;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.InjectedScheduler;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.ScriptedHttpServer.Framing;
import dev.retryagent.testing.TestEngines;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.apache.http.HttpEntity;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.client.config.RequestConfig;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.client.methods.HttpGet;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.impl.conn.PoolingHttpClientConnectionManager;
import org.apache.http.util.EntityUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** What {@link ApacheRetrying4} does before a call's first attempt, beside HttpClient's own. */
class ApacheRetrying4Test {
  private final RetryEngine engine =
      TestEngines.engine(
          new FakeTime(), Mode.ENFORCE, r -> r, CircuitBreakerPolicy.defaults(), new ArrayList<>());

  @ParameterizedTest
  @ValueSource(
      strings = {
        "java.io.IOException",
        "org.apache.http.client.ClientProtocolException",
        "org.apache.http.HttpException"
      })
  void aProtocolFailureIsNeverRetriedWhateverRetryOnExceptionsNames(String named) throws Exception {
    // Redirected past maxRedirects: RedirectExec throws RedirectException (a ProtocolException, an
    // org.apache.http.HttpException), which InternalHttpClient wraps in a ClientProtocolException
    // (an IOException). Before, a retryOn.exceptions naming one of these matched it and the call
    // was retried: 2 requests an attempt, 6, each attempt a breaker failure.
    List<RetryEvent> events = new ArrayList<>();
    RetryEngine byName =
        TestEngines.engine(
            new FakeTime(),
            Mode.ENFORCE,
            r -> r.maxAttempts(3).retryOnExceptions(List.of(named)),
            CircuitBreakerPolicy.defaults(),
            events);
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient plain = HttpClients.createDefault();
        CloseableHttpClient ours = RetryingCloseableHttpClient.wrap(HttpClients.custom(), byName)) {
      server.otherwise(ScriptedHttpServer.Action.status(302).header("Location", "/again"));
      List<Throwable> thrown = new ArrayList<>();
      for (CloseableHttpClient c : List.of(plain, ours)) {
        HttpGet get = new HttpGet(server.url("/items"));
        get.setConfig(RequestConfig.custom().setMaxRedirects(1).build());
        thrown.add(catchThrowable(() -> c.execute(get).close()));
      }
      assertThat(thrown.get(0))
          .isInstanceOf(org.apache.http.client.ClientProtocolException.class)
          .hasCauseInstanceOf(org.apache.http.client.RedirectException.class);
      assertThat(thrown.get(1)).isExactlyInstanceOf(thrown.get(0).getClass());
      assertThat(thrown.get(1).getCause()).isExactlyInstanceOf(thrown.get(0).getCause().getClass());
      assertThat(server.awaitRequests(4)).as("2 each, none retried").isEqualTo(requests(4));
      assertThat(events).extracting(RetryEvent::type).doesNotContain(RetryEvent.Type.RETRY);
    }
  }

  @Test
  void aNullRequestFailsAsHttpClientFailsIt() throws Exception {
    // HttpClient's doExecute says "HTTP request may not be null" (IllegalArgumentException); the
    // agent, which takes doExecute over, threw its own NullPointerException("request") instead.
    HttpHost host = new HttpHost("127.0.0.1", 9); // nothing is sent
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      plain = catchThrowable(() -> c.execute(host, (HttpRequest) null));
    }
    assertThat(plain).isInstanceOf(IllegalArgumentException.class);

    try (CloseableHttpClient c = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine)) {
      Throwable ours = catchThrowable(() -> c.execute(host, (HttpRequest) null));
      assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
    }
  }

  @Test
  void aThreadInterruptedDuringTheCallGetsThe503AsWithoutTheAgentTheFlagKept() throws Exception {
    // HttpClient's blocking I/O finishes a call whatever the interrupt: without the agent the
    // caller gets the 503, its flag still set. With it the wait before the retry threw at once, and
    // the caller got an InterruptedIOException, the 503 lost.
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient plain = HttpClients.createDefault();
        CloseableHttpClient ours = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine)) {
      server.otherwise(ScriptedHttpServer.Action.status(503));
      for (CloseableHttpClient c : List.of(plain, ours)) {
        Thread.currentThread().interrupt();
        try (CloseableHttpResponse r = c.execute(new HttpGet(server.url("/items")))) {
          assertThat(r.getStatusLine().getStatusCode()).isEqualTo(503);
          assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("status 503");
          assertThat(Thread.currentThread().isInterrupted()).as("the caller's flag").isTrue();
        } finally {
          Thread.interrupted();
        }
      }
      assertThat(server.awaitRequests(2)).as("one each, none retried").isEqualTo(requests(2));
    }
  }

  /**
   * A chunked 503 over 8 KiB before a retry wait over 1 s, on a route whose rate limit then refuses
   * the retry: the application gets that 503, body whole, as without the agent, after one request.
   * The copy reads a body of no declared length away when it is over the limit, so the retry's
   * permit is now reserved before it, while the response is whole (copyLeavesWhole). Before, the
   * body was read away, the permit refused after the 2 s wait, and the call threw
   * RateLimitedException.
   */
  @Test
  void aChunked503Over8KiBWhoseLongRetryWaitTheRateLimitRefusesReachesTheApplicationWhole()
      throws Exception {
    FakeTime time = new FakeTime();
    String large = "busy ".repeat(4 * 1024); // 20 KiB
    RetryEngine limited =
        TestEngines.rateLimitedTo(1, java.time.Duration.ofSeconds(2), time, new ArrayList<>());
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient plain = HttpClients.createDefault();
        CloseableHttpClient ours =
            RetryingCloseableHttpClient.wrap(HttpClients.custom(), limited)) {
      server.otherwise(ScriptedHttpServer.Action.status(503).body(large).framed(Framing.CHUNKED));
      List<String> seen = new ArrayList<>();
      for (CloseableHttpClient c : List.of(plain, ours)) {
        try (CloseableHttpResponse r = c.execute(new HttpGet(server.url("/items")))) {
          assertThat(r.getEntity().isChunked()).isTrue();
          seen.add(r.getStatusLine().getStatusCode() + " " + EntityUtils.toString(r.getEntity()));
        }
      }
      assertThat(seen.get(1)).isEqualTo(seen.get(0)).isEqualTo("503 " + large);
      assertThat(server.requestCount()).as("one each, none retried").isEqualTo(2);
      assertThat(time.waits()).as("no wait for a retry never made").isEmpty();
    }
  }

  @Test
  void aRetrysWaitThatEndsPastTheDeadlineEndsTheCallWithTheAttemptsOutcome() throws Exception {
    // Each wait before a retry ends 40 s late (a paused JVM), past the 1 s deadline: the retry
    // went anyway with timeouts of 1 ms, the server got a request nobody waited for, and the
    // caller a SocketTimeoutException (or the retry's answer) instead of its outcome. (A reset
    // HttpClient resends itself at once, without a wait: the engine's tests take failures.)
    FakeTime time = new FakeTime();
    RetryEngine late =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r ->
                r.deadline(java.time.Duration.ofSeconds(1))
                    .retryAfterMax(java.time.Duration.ofSeconds(1)),
            CircuitBreakerPolicy.defaults(),
            new ArrayList<>());
    time.late(40_000_000_000L);
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient ours = RetryingCloseableHttpClient.wrap(HttpClients.custom(), late)) {
      server.otherwise(ScriptedHttpServer.Action.ok("late"));
      // Near the deadline the 503 is kept through the wait: the caller reads it as it came.
      server.enqueue(ScriptedHttpServer.Action.status(503));
      try (CloseableHttpResponse r = ours.execute(new HttpGet(server.url("/items")))) {
        assertThat(r.getStatusLine().getStatusCode()).isEqualTo(503);
        assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("status 503");
      }
      assertThat(server.requestCount()).isEqualTo(1);
    }
  }

  @ParameterizedTest
  @CsvSource({"LENGTH, false", "LENGTH, true", "CHUNKED, false", "CHUNKED, true"})
  void aResponseReleasedBeforeAWaitThatEndsPastTheDeadlineIsGivenBackAsItCame(
      Framing framing, boolean gzipped) throws Exception {
    // A 503 whose Retry-After (5 s, over the 1 s margin) has it released before the wait, which
    // ends 40 s late, past the 10 s deadline: the caller got the engine's IOException where
    // without the agent it had the 503. Now the copy kept as it was released (status line,
    // headers, body, the entity's details; gzipped: as HttpClient decoded it) is given back, as
    // HttpClient gives it without the agent, and nothing more is sent. Chunked too: the copy and
    // the release read it within their grace (Discards.Grace), and it has arrived.
    List<RetryEvent> events = new ArrayList<>();
    RetryEngine late = lateEngine(events);
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient plain = HttpClients.createDefault();
        CloseableHttpClient ours = RetryingCloseableHttpClient.wrap(HttpClients.custom(), late)) {
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
      try (CloseableHttpResponse next = ours.execute(new HttpGet(server.url("/items")))) {
        assertThat(EntityUtils.toString(next.getEntity())).isEqualTo("late");
      }
      assertThat(server.connectionCount())
          .as("one each, the next call on ours' first")
          .isEqualTo(2);
    }
  }

  @ParameterizedTest
  @org.junit.jupiter.params.provider.MethodSource("dev.retryagent.testing.HeldBodies#all")
  void aRetriedResponseWhoseBodyIsHeldIsLetGoWithoutWaitingForTheRest(
      Framing framing, boolean gzipped) throws Exception {
    // The 503's head and 4 bytes of its body arrive, the rest only when the test releases it (the
    // server's own bound: 10 s). HttpClient 4.5's default socket timeout is none. Without the agent
    // an application that closes the response unread has the 503 at its head; the retry waited
    // for the rest of a body nobody reads as long as the server held it, then went out on the
    // drained connection (a body with no length: on a new one, once the server closed it). Since
    // 805fed7 a body with a length HttpClient does not decode is read as far as it has arrived;
    // now a chunked one, one with no length and a gzipped one are read within a grace
    // (Discards.Grace), then their connection is closed: the retry goes out on a connection of
    // its own while the body is still held.
    ScriptedHttpServer.Action busy =
        ScriptedHttpServer.Action.status(503).body("busy busy busy").framed(framing);
    retriedWhileHeld(HttpClients.custom().build(), gzipped ? busy.gzipped() : busy);
  }

  /**
   * A call on {@code client}, wrapped, whose first answer is {@code busy}, its body held after 4
   * bytes until the call has ended: the retry's 200 came while the body was held, on a connection
   * of its own.
   */
  private void retriedWhileHeld(CloseableHttpClient client, ScriptedHttpServer.Action busy)
      throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient ours = RetryingCloseableHttpClient.wrap(client, engine)) {
      server.enqueue(busy.heldAfter(4, release), ScriptedHttpServer.Action.ok("done"));
      try (CloseableHttpResponse r = ours.execute(new HttpGet(server.url("/held")))) {
        assertThat(r.getStatusLine().getStatusCode()).isEqualTo(200);
        assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("done");
        assertThat(server.holdsEnded()).as("the 503's body still held").isZero();
      } finally {
        release.countDown();
      }
      assertThat(server.requestCount()).isEqualTo(2);
      assertThat(server.connectionCount()).as("the retry did not wait for the 503's").isEqualTo(2);
    }
  }

  @ParameterizedTest
  @org.junit.jupiter.params.provider.MethodSource("dev.retryagent.testing.HeldBodies#all")
  void aHeldBodysGraceRunsOnceOnTheSharedSchedulerNotOnTheEnginesOfTheLibraryUser(
      Framing framing, boolean gzipped) throws Exception {
    // A library user's engine with a scheduler of its own (a test's, say, driven by hand). The
    // grace of a retried body that cannot be read as far as it has arrived (chunked, with no
    // length, decoded) bounds a read from the network: it runs on the agent's shared scheduler, in
    // real time, as the client's own network timeouts do, whatever the engine's (on the engine's,
    // a held body waited up to the socket timeout unless the user ran the grace). And it is given
    // once: not once to the copy kept for a late wait and once more to the release after it (up to
    // 250 ms each before the retry, a body held after 8 KiB or after a decoded body's end).
    InjectedScheduler scheduler = new InjectedScheduler();
    RetryEngine own =
        TestEngines.builder(
                new FakeTime(),
                Mode.ENFORCE,
                r -> r,
                Policy.defaults().budget(),
                CircuitBreakerPolicy.defaults(),
                Policy.defaults().rateLimit())
            .scheduler(scheduler)
            .build();
    CountDownLatch release = new CountDownLatch(1);
    try (Graces graces = Graces.count();
        ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient ours = RetryingCloseableHttpClient.wrap(HttpClients.custom(), own)) {
      ScriptedHttpServer.Action busy =
          ScriptedHttpServer.Action.status(503).body("busy busy busy").framed(framing);
      server.enqueue(
          (gzipped ? busy.gzipped() : busy).heldAfter(4, release),
          ScriptedHttpServer.Action.ok("done"));
      try (CloseableHttpResponse r = ours.execute(new HttpGet(server.url("/held")))) {
        assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("done");
      } finally {
        release.countDown();
      }
      // A body of a length HttpClient does not decode is read as far as it has arrived: no grace.
      assertThat(graces.started()).isEqualTo(framing == Framing.LENGTH && !gzipped ? 0 : 1);
      assertThat(scheduler.graces()).isZero();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"LENGTH", "CHUNKED"})
  @SuppressWarnings("deprecation")
  void aHeldBodyOfTheDeprecatedDefaultHttpClientIsLetGoUnread(Framing framing) throws Exception {
    // As aRetriedResponseWhoseBodyIsHeld... on the deprecated DefaultHttpClient
    // (AbstractHttpClient), whose response's close reads the rest of the body
    // (CloseableHttpResponseProxy: EntityUtils.consume): a body with a length not all there was
    // to have its connection closed unread, and that close waited for the rest as long as the
    // server held it. Now the connection is aborted through HttpClient's stream of the body, which
    // never reads (RawBody.abort), then the response closed.
    retriedWhileHeld(
        new org.apache.http.impl.client.DefaultHttpClient(),
        ScriptedHttpServer.Action.status(503).body("busy busy busy").framed(framing));
  }

  @ParameterizedTest
  @org.junit.jupiter.params.provider.MethodSource("dev.retryagent.testing.HeldBodies#all")
  void aHeldBodyReleasedBeforeAWaitThatEndsPastTheDeadlineIsNotGivenBack(
      Framing framing, boolean gzipped) throws Exception {
    // As aResponseReleasedBeforeAWait... but the 503's body is held: the copy read it to its end
    // first, waiting as long as the server held it, and gave the 503 back. Now it reads what has
    // arrived (a length HttpClient does not decode), or reads within a grace (Discards.Grace): no
    // copy of a body not all there, and the call ends with the engine's IOException, as for a
    // body over 8 KiB, without waiting for the server.
    RetryEngine late = lateEngine(new ArrayList<>());
    CountDownLatch release = new CountDownLatch(1);
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient ours = RetryingCloseableHttpClient.wrap(HttpClients.custom(), late)) {
      ScriptedHttpServer.Action busy =
          ScriptedHttpServer.Action.status(503)
              .header("Retry-After", "5")
              .body("busy, come back")
              .framed(framing);
      server.enqueue((gzipped ? busy.gzipped() : busy).heldAfter(4, release));
      Throwable t;
      try {
        t = catchThrowable(() -> ours.execute(new HttpGet(server.url("/held"))).close());
        assertThat(server.holdsEnded()).as("the 503's body still held").isZero();
      } finally {
        release.countDown();
      }
      assertThat(t).isInstanceOf(java.io.IOException.class).hasMessageContaining("deadline");
      assertThat(server.requestCount()).isEqualTo(1);
    }
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aRetriedChunkedBodyThatHasArrivedKeepsItsConnection(boolean gzipped) throws Exception {
    // Read within the grace (Discards.Grace), a chunked body that has arrived is read to its end,
    // which gives its connection back for the retry, as before.
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient ours = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine)) {
      ScriptedHttpServer.Action busy =
          ScriptedHttpServer.Action.status(503).body("busy busy busy").framed(Framing.CHUNKED);
      server.enqueue(gzipped ? busy.gzipped() : busy, ScriptedHttpServer.Action.ok("done"));
      try (CloseableHttpResponse r = ours.execute(new HttpGet(server.url("/chunked")))) {
        assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("done");
      }
      assertThat(server.requestCount()).isEqualTo(2);
      assertThat(server.connectionCount()).as("the retry on the 503's connection").isEqualTo(1);
    }
  }

  @Test
  void aShortRetryWaitOnARateLimitedRouteLeavesThePoolsConnectionToTheApplicationsOtherCalls()
      throws Exception {
    // A route the rate limit governs, a pool of one connection per route: a 503 with a small body
    // is retried after 100 ms. Since a75f9d6 the 503 was kept through that wait, its lease held,
    // and another thread's call on the route waited the whole backoff for a connection: with a
    // connection request timeout shorter than the backoff it failed with
    // ConnectionPoolTimeoutException, a call the agent never retried, where without the agent
    // (and before a75f9d6) the 503's connection is free again at once. A body the agent can copy
    // is copied and released before the wait, as before: a refused retry ends with the copy.
    FakeTime time = new FakeTime();
    PoolingHttpClientConnectionManager pool = new PoolingHttpClientConnectionManager();
    pool.setDefaultMaxPerRoute(1);
    try (ScriptedHttpServer server = new ScriptedHttpServer()) {
      server.otherwise(ScriptedHttpServer.Action.ok("done"));
      server.enqueue(ScriptedHttpServer.Action.status(503).body("busy, come back"));
      java.util.concurrent.atomic.AtomicReference<CloseableHttpClient> client =
          new java.util.concurrent.atomic.AtomicReference<>();
      java.util.concurrent.atomic.AtomicReference<Object> other =
          new java.util.concurrent.atomic.AtomicReference<>();
      // During the retry's wait, another application thread calls the route. Its connection
      // request waits at most 2 s: the lease it waits for is held by the thread blocked here.
      Sleeper duringTheWait =
          time.withOtherCallerAtFirstWait(
              () -> {
                HttpGet get = new HttpGet(server.url("/other"));
                get.setConfig(RequestConfig.custom().setConnectionRequestTimeout(2000).build());
                try (CloseableHttpResponse r = client.get().execute(get)) {
                  return EntityUtils.toString(r.getEntity());
                }
              },
              other);
      RetryEngine engine =
          TestEngines.rateLimited(
              time, TestEngines.neverRefilled(10), duringTheWait, new ArrayList<>());
      client.set(
          RetryingCloseableHttpClient.wrap(
              HttpClients.custom().setConnectionManager(pool), engine));
      try (CloseableHttpResponse r = client.get().execute(new HttpGet(server.url("/items")))) {
        assertThat(EntityUtils.toString(r.getEntity())).isEqualTo("done");
      } finally {
        client.get().close();
      }
      assertThat(other.get()).as("the other thread's call").isEqualTo("done");
      assertThat(server.awaitRequests(3)).isEqualTo(requests(3));
    }
  }

  /**
   * An engine whose waits end 40 s late, past its 10 s deadline: a 503's Retry-After of 5 s (over
   * the 1 s margin) has it released before the wait.
   */
  private static RetryEngine lateEngine(List<RetryEvent> events) {
    FakeTime time = new FakeTime();
    time.late(40_000_000_000L);
    return TestEngines.engine(
        time,
        Mode.ENFORCE,
        r ->
            r.deadline(java.time.Duration.ofSeconds(10))
                .retryAfterMax(java.time.Duration.ofSeconds(5)),
        CircuitBreakerPolicy.defaults(),
        events);
  }

  /** What the caller sees of a 503 with a small body: all of it that HttpClient's API shows. */
  private static String seen(
      CloseableHttpClient client, ScriptedHttpServer server, Framing framing, boolean gzipped)
      throws Exception {
    ScriptedHttpServer.Action busy =
        ScriptedHttpServer.Action.status(503)
            .header("Retry-After", "5")
            .header("X-Busy", "yes")
            .body("busy, come back")
            .framed(framing);
    server.enqueue(gzipped ? busy.gzipped() : busy);
    try (CloseableHttpResponse r = client.execute(new HttpGet(server.url("/items")))) {
      HttpEntity e = r.getEntity();
      return r.getStatusLine()
          + " "
          + java.util.Arrays.toString(r.getAllHeaders())
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
    }
  }
}
