package dev.retryagent.apache4;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.util.ArrayList;
import java.util.List;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.client.methods.HttpGet;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.util.EntityUtils;
import org.junit.jupiter.api.Test;

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
}
