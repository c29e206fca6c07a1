package dev.retryagent.apache4;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.util.ArrayList;
import java.util.List;
import org.apache.http.HttpEntity;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.client.methods.HttpGet;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.util.EntityUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** What {@link ApacheRetrying4} does before a call's first attempt, beside HttpClient's own. */
class ApacheRetrying4Test {
  private final RetryEngine engine =
      TestEngines.engine(
          new FakeTime(), Mode.ENFORCE, r -> r, CircuitBreakerPolicy.defaults(), new ArrayList<>());

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
      assertThat(server.requestCount()).as("one each, none retried").isEqualTo(2);
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
  @ValueSource(booleans = {false, true})
  void aResponseReleasedBeforeAWaitThatEndsPastTheDeadlineIsGivenBackAsItCame(boolean gzipped)
      throws Exception {
    // A 503 whose Retry-After (5 s, over the 1 s margin) has it released before the wait, which
    // ends 40 s late, past the 10 s deadline: the caller got the engine's IOException where
    // without the agent it had the 503. Now the copy kept as it was released (status line,
    // headers, body, the entity's details; gzipped: as HttpClient decoded it) is given back, as
    // HttpClient gives it without the agent, and nothing more is sent.
    FakeTime time = new FakeTime();
    List<RetryEvent> events = new ArrayList<>();
    RetryEngine late =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r ->
                r.deadline(java.time.Duration.ofSeconds(10))
                    .retryAfterMax(java.time.Duration.ofSeconds(5)),
            CircuitBreakerPolicy.defaults(),
            events);
    time.late(40_000_000_000L);
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient plain = HttpClients.createDefault();
        CloseableHttpClient ours = RetryingCloseableHttpClient.wrap(HttpClients.custom(), late)) {
      server.otherwise(ScriptedHttpServer.Action.ok("late"));

      String without = seen(plain, server, gzipped);
      String with = seen(ours, server, gzipped);

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

  /** What the caller sees of a 503 with a small body: all of it that HttpClient's API shows. */
  private static String seen(CloseableHttpClient client, ScriptedHttpServer server, boolean gzipped)
      throws Exception {
    ScriptedHttpServer.Action busy =
        ScriptedHttpServer.Action.status(503)
            .header("Retry-After", "5")
            .header("X-Busy", "yes")
            .body("busy, come back");
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
