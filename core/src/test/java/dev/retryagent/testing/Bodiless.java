package dev.retryagent.testing;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.testing.ScriptedHttpServer.Action;

/**
 * Retried responses without a body, each client's tests side by side with the plain client: the
 * retried response has nothing to read, so its connection serves the next attempt at once (no
 * connection closed for nothing, no wait for a body that will not come). Each case is a call the
 * server answers {@link #retried} then {@link #then}.
 */
public enum Bodiless {
  /** A HEAD answered 503 with the Content-Length (1000) of a body it does not send. */
  HEAD_503("HEAD", status(503).body("x".repeat(1000)), "", ok("fine"), 503),
  /** A 503 with Content-Length: 0. */
  EMPTY_503("GET", status(503).body(""), "", ok("fine"), 503),
  /** A 204 (no Content-Length, no body), which a policy naming 204 retries. */
  NO_CONTENT("GET", status(204).body(""), "", ok("fine"), 204),
  /** A 304 with the Content-Length (1000) of the body it does not send, the policy naming 304. */
  NOT_MODIFIED("GET", status(304).body("x".repeat(1000)), "", ok("fine"), 304),
  /** A 503 after an unasked 100 Continue. */
  CONTINUE_THEN_503("GET", status(503).body("busy").afterInterim(100), "busy", ok("fine"), 503),
  /** A 503, then the 200, each after a 103 Early Hints. */
  EARLY_HINTS(
      "GET", status(503).body("busy").afterInterim(103), "busy", ok("fine").afterInterim(103), 503);

  /** The request's method. */
  public final String method;

  /** The first answer, the retried one. */
  public final Action retried;

  /** The body of {@link #retried} as the application reads it. */
  public final String retriedBody;

  /** The answer after it. */
  public final Action then;

  /** The status of {@link #retried}. */
  public final int status;

  Bodiless(String method, Action retried, String retriedBody, Action then, int status) {
    this.method = method;
    this.retried = retried;
    this.retriedBody = retriedBody;
    this.then = then;
    this.status = status;
  }

  /** The policy that retries {@link #status} (the default's statuses and it). */
  public RetryPolicy.Builder policy(RetryPolicy.Builder b) {
    return b.retryOnStatuses(StatusSet.of("429", "502", "503", "504", "204", "304"));
  }

  /** One call of a client: its answer as "status body", the response released. */
  public interface Call {
    String answer() throws Exception;
  }

  /**
   * The case side by side: {@code plain} has the retried answer, then the 200; {@code ours}, the
   * same client through the agent, has the 200 (10 s at most each: no wait for a body that will not
   * come), the retry on the retried answer's connection exactly when {@code plain}'s second call
   * went on its first's, which it does unless {@code plainKeepsIt} is false. A client that takes a
   * 103 for the final response (OkHttp 3, HttpURLConnection) gives it to the application, ours as
   * plain.
   */
  public void sideBySide(
      ScriptedHttpServer server, Call plain, Call ours, boolean plainKeepsIt, String what) {
    server.enqueue(retried);
    String first = within10s(plain);
    if (first.startsWith("103 ")) {
      server.enqueue(retried);
      assertThat(within10s(ours)).as(what).isEqualTo(first);
      return;
    }
    assertThat(first).as(what).isEqualTo(status + " " + retriedBody);
    server.enqueue(then);
    assertThat(within10s(plain)).isEqualTo("200 " + body("fine"));
    boolean kept = lastTwoOnOneConnection(server);
    assertThat(kept).as("%s: plain keeps the connection", what).isEqualTo(plainKeepsIt);
    int requests = server.requestCount();
    server.enqueue(retried, then);
    assertThat(within10s(ours)).as(what).isEqualTo("200 " + body("fine"));
    assertThat(server.requestCount() - requests).isEqualTo(2);
    assertThat(lastTwoOnOneConnection(server))
        .as("%s: the retry on its connection", what)
        .isEqualTo(kept);
  }

  /** Whether the server's last two requests came on one connection, which is still open. */
  private static boolean lastTwoOnOneConnection(ScriptedHttpServer server) {
    java.util.List<ScriptedHttpServer.Recorded> all = server.requests();
    int connection = all.get(all.size() - 1).connection;
    return connection == all.get(all.size() - 2).connection && server.isOpen(connection);
  }

  private static String within10s(Call call) {
    return org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
        java.time.Duration.ofSeconds(10), call::answer);
  }

  /** What a body of {@code text} reads as for this case: a HEAD's is empty. */
  private String body(String text) {
    return method.equals("HEAD") ? "" : text;
  }
}
