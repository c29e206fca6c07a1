package dev.retryagent.it;

import static dev.retryagent.it.UrlRetryScenarios.call;
import static dev.retryagent.it.UrlRetryScenarios.closedPort;
import static dev.retryagent.it.UrlRetryScenarios.http;
import static dev.retryagent.it.UrlRetryScenarios.https;
import static dev.retryagent.it.UrlRetryScenarios.rewrite;
import static dev.retryagent.it.harness.Reply.closeWithoutResponse;
import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.reset;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.UrlRetryScenarios.Scenario;
import java.util.ArrayList;
import java.util.List;

/**
 * The scenarios of {@link UrlRetryScenarios}: those of the java.net.http and OkHttp suites, for
 * every way of sending a body, plus the JDK's own resends and https; then the clients on top of
 * {@code HttpURLConnection}.
 */
final class UrlScenarioList {
  private UrlScenarioList() {}

  private static final String KEY = "Idempotency-Key=order-7";

  /** A keyed POST answered 503 once: retried with the same key and the whole body. */
  private static Scenario keyedPost(String client, String body, int bodyBytes, String framing) {
    return new Scenario(
        client + ": a keyed POST is retried with the same key and the whole body (" + framing + ")",
        http(s -> s.enqueue(status(503), ok("charged"))),
        List.of(call("a", client, "POST", "/keyed/charges", KEY, body)),
        (o, s) -> {
          assertThat(o.status("a")).isEqualTo(200);
          assertThat(o.get("a", "body")).isEqualTo("charged");
          assertThat(s.requests())
              .hasSize(2)
              .allSatisfy(
                  r -> {
                    assertThat(r.method()).isEqualTo("POST");
                    assertThat(r.header("Idempotency-Key")).isEqualTo("order-7");
                    assertThat(r.body()).hasSize(bodyBytes);
                    if (framing.equals("chunked")) {
                      assertThat(r.header("transfer-encoding")).isEqualTo("chunked");
                    } else {
                      assertThat(r.header("content-length")).isEqualTo(String.valueOf(bodyBytes));
                    }
                  });
        });
  }

  /**
   * A keyed POST whose application expects {@code 100 Continue}, answered 503 after its body: the
   * retry carries the application's very headers (its Expect among them) and the whole body, sent
   * after a {@code 100 Continue} of its own.
   */
  private static Scenario keyedPostExpectingContinue(String client, String framing) {
    return new Scenario(
        client
            + ": a keyed POST expecting 100 Continue is retried as the application sent it ("
            + framing
            + ")",
        http(s -> s.enqueue(status(503), ok("charged"))),
        List.of(
            call(
                "a", client, "POST", "/keyed/charges", KEY + ";Expect=100-continue", "bytes:3000")),
        (o, s) -> {
          assertThat(o.status("a")).isEqualTo(200);
          assertThat(o.get("a", "body")).isEqualTo("charged");
          assertThat(s.requests()).hasSize(2);
          assertThat(s.requests().get(0).headers().get("expect")).containsExactly("100-continue");
          assertThat(s.requests().get(1).headers()).isEqualTo(s.requests().get(0).headers());
          assertThat(s.requests()).allSatisfy(r -> assertThat(r.body()).hasSize(3000));
        });
  }

  /**
   * POSTs without key expecting {@code 100 Continue}, all answered 200, then a GET, on a route
   * whose breaker opens at its first failure: one request each and the breaker stays closed. The
   * agent switches the JDK's resend off for such a POST; the interim {@code 100 Continue}, read in
   * the body step, left the switch on, and the response step took it for the JDK's resend: every
   * POST counted as two attempts, a retry and a failure of the host, and the GET was refused
   * ({@code CircuitBreakerOpenException}).
   */
  private static Scenario unkeyedPostsExpectingContinue(String client) {
    List<UrlRetryScenarios.Call> calls = new ArrayList<>();
    for (int i = 1; i <= 8; i++) {
      calls.add(
          call("p" + i, client, "POST", "/continue/charges", "Expect=100-continue", "bytes:100"));
    }
    calls.add(call("g", "url", "GET", "/continue/items", "", ""));
    return new Scenario(
        client + ": POSTs without key answered 100 Continue then 200 are one attempt each",
        http(s -> s.setDefaultReply(ok("fine"))),
        calls,
        (o, s) -> {
          for (UrlRetryScenarios.Call c : calls) {
            assertThat(o.get(c.name(), "error")).as(c.name()).isNull();
            assertThat(o.status(c.name())).as(c.name()).isEqualTo(200);
          }
          assertThat(s.requestCount()).isEqualTo(9);
          assertThat(s.requests().get(0).headers().get("expect")).containsExactly("100-continue");
          assertThat(o.retries()).isZero();
        });
  }

  private static Scenario threeAttempts(String client) {
    return new Scenario(
        client + ": 503, 503, 200 gives the 200 after exactly 3 requests",
        http(s -> s.enqueue(status(503), status(503), ok("done"))),
        List.of(call("a", client, "GET", "/v1/items", "", "")),
        (o, s) -> {
          assertThat(o.status("a")).isEqualTo(200);
          assertThat(o.get("a", "body")).isEqualTo("done");
          assertThat(s.requestCount()).isEqualTo(3);
        });
  }

  private static Scenario postWithoutKey(String client) {
    return new Scenario(
        client + ": a POST answered 503 without idempotency key is sent once",
        http(s -> s.enqueue(status(503), ok("charged twice?"))),
        List.of(call("a", client, "POST", "/v1/charges", "", "{\"amount\":1}")),
        (o, s) -> {
          assertThat(o.status("a")).isEqualTo(503);
          assertThat(s.requestCount()).isEqualTo(1);
        });
  }

  /** {@code HttpURLConnection} itself, through the agent and by hand. */
  static List<Scenario> urlConnection(boolean agent) {
    List<Scenario> list = new ArrayList<>();
    list.add(threeAttempts("url"));
    list.add(threeAttempts("url-connect"));
    list.add(postWithoutKey("url"));
    list.add(keyedPost("url", "{\"amount\":42}", 13, "buffered"));
    list.add(keyedPost("url-fixed", "bytes:3000", 3000, "fixed length"));
    list.add(keyedPost("url-chunked", "bytes:3000", 3000, "chunked"));
    list.add(keyedPost("url-connect", "bytes:3000", 3000, "connect() first"));
    list.add(keyedPostExpectingContinue("url", "buffered"));
    list.add(keyedPostExpectingContinue("url-fixed", "fixed length"));
    list.add(keyedPostExpectingContinue("url-chunked", "chunked"));
    list.add(unkeyedPostsExpectingContinue("url-fixed"));
    list.add(unkeyedPostsExpectingContinue("url-chunked"));
    list.add(
        new Scenario(
            "a streamed body larger than replayBodyLimit is sent once, and the log says why",
            http(s -> s.enqueue(status(503), ok("stored twice?"))),
            List.of(call("a", "url-fixed", "PUT", "/v1/upload", "", "bytes:102400")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(1);
              assertThat(s.requests().get(0).body()).hasSize(102400);
              assertThat(o.log())
                  .anyMatch(l -> l.contains("the request body cannot be sent again"));
            }));
    list.add(
        new Scenario(
            "getOutputStream() turns a GET into a POST, which is judged as a POST",
            http(s -> s.enqueue(status(503), ok("twice?"))),
            List.of(call("a", "url-turn", "GET", "/v1/search", "", "q=1")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requests()).extracting(r -> r.method()).containsExactly("POST");
            }));
    list.add(
        new Scenario(
            "a 404 is not retried",
            http(s -> s.enqueue(status(404).withBody("no such item"), ok("never"))),
            List.of(call("a", "url", "GET", "/missing", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(404);
              assertThat(o.get("a", "body")).isEqualTo("no such item");
              assertThat(s.requestCount()).isEqualTo(1);
            }));
    list.add(
        new Scenario(
            "a 429 with Retry-After: 1 is retried after at least a second",
            http(s -> s.enqueue(status(429).withHeader("Retry-After", "1"), ok("done"))),
            List.of(call("a", "url", "GET", "/v1/summarise", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(s.requestCount()).isEqualTo(2);
              assertThat(o.millis("a")).isGreaterThanOrEqualTo(1000);
            }));
    list.add(
        new Scenario(
            "a 429 with Retry-After: 120 comes back at once, with its body",
            http(
                s -> s.enqueue(status(429).withHeader("Retry-After", "120").withBody("slow down"))),
            List.of(call("a", "url", "GET", "/v1/summarise", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(429);
              assertThat(o.get("a", "body")).isEqualTo("slow down");
              assertThat(s.requestCount()).isEqualTo(1);
              assertThat(o.millis("a")).isLessThan(10_000);
            }));
    list.add(
        new Scenario(
            "a connection reset is retried",
            http(s -> s.enqueue(reset(), ok("after reset"))),
            List.of(call("a", "url", "POST", "/keyed/orders", KEY, "{}")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(o.get("a", "body")).isEqualTo("after reset");
              assertThat(s.requestCount()).isEqualTo(2);
            }));
    for (String client : List.of("url", "url-connect")) {
      list.add(
          new Scenario(
              client + ": a refused connection is retried, then its failure comes back",
              closedPort(),
              List.of(call("a", client, "GET", "/v1/items", "", "")),
              (o, s) -> {
                assertThat(o.get("a", "cause")).isEqualTo("java.net.ConnectException");
                assertThat(o.retries()).isEqualTo(2);
              }));
    }
    list.add(
        new Scenario(
            "a server that always answers 503 gets exactly maxAttempts requests",
            http(s -> s.setDefaultReply(status(503))),
            List.of(call("a", "url", "GET", "/max/items", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(4);
            }));
    list.add(
        new Scenario(
            "the breaker opens and then fails fast without a request",
            http(s -> s.setDefaultReply(status(503))),
            List.of(
                call("b1", "url", "GET", "/breaker/x", "", ""),
                call("b2", "url", "GET", "/breaker/x", "", ""),
                call("b3", "url", "GET", "/breaker/x", "", ""),
                call("b4", "url", "GET", "/breaker/x", "", ""),
                call("b5", "url", "GET", "/breaker/x", "", "")),
            (o, s) -> {
              for (String c : List.of("b1", "b2", "b3", "b4")) {
                assertThat(o.status(c)).isEqualTo(503);
              }
              assertThat(o.get("b5", "error")).endsWith("CircuitBreakerOpenException");
              assertThat(s.requestCount()).isEqualTo(4);
            }));
    list.add(
        new Scenario(
            "the deadline cuts retries short of maxAttempts",
            http(s -> s.setDefaultReply(status(503))),
            List.of(call("a", "url", "GET", "/deadline/items", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              // 1 s between attempts and a 3 s deadline: 3 attempts, never the 10 allowed.
              assertThat(s.requestCount()).isBetween(2, 3);
              assertThat(o.log()).anyMatch(l -> l.contains("deadline"));
              assertThat(o.millis("a")).isLessThan(3_500);
            }));
    list.add(
        new Scenario(
            "a spent retry budget gives the failure back at once",
            http(s -> s.setDefaultReply(status(503))),
            List.of(call("a", "url", "GET", "/budget/items", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(1);
              assertThat(o.log()).anyMatch(l -> l.contains("retry budget"));
            }));
    list.addAll(jdkResends(agent));
    list.add(
        new Scenario(
            "https: 503, 503, 200 gives the 200 after exactly 3 requests",
            https(s -> s.enqueue(status(503), status(503), ok("secure"))),
            List.of(call("a", "url", "GET", "/v1/items", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(o.get("a", "body")).isEqualTo("secure");
              assertThat(o.get("a", "class")).endsWith("RetryingHttpsConnection");
              assertThat(s.requestCount()).isEqualTo(3);
            }));
    list.add(
        new Scenario(
            "https: a keyed fixed-length POST is retried with the whole body",
            https(s -> s.enqueue(status(503), ok("stored"))),
            List.of(call("a", "url-fixed", "POST", "/keyed/upload", KEY, "bytes:4096")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(s.requests())
                  .hasSize(2)
                  .allSatisfy(r -> assertThat(r.body()).hasSize(4096));
            }));
    return list;
  }

  /**
   * The JDK's two silent resends. On a kept-alive connection that the server has closed it sends
   * the request again by itself (a GET, and a POST too unless {@code sun.net.http.retryPost} is
   * false); after a write error it writes the whole request again. The agent counts both as
   * attempts and switches the first off for a request it would not repeat itself; by hand the JDK's
   * behaviour stays as it is.
   */
  private static List<Scenario> jdkResends(boolean agent) {
    List<Scenario> list = new ArrayList<>();
    list.add(
        new Scenario(
            "a GET on a kept-alive connection the server closed succeeds (one resend)",
            http(s -> s.enqueue(ok("warm"), closeWithoutResponse(), ok("again"))),
            List.of(
                call("w", "url", "GET", "/v1/warm", "", ""),
                call("a", "url", "GET", "/v1/again", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(o.get("a", "body")).isEqualTo("again");
              assertThat(s.requestCount()).isEqualTo(3);
            }));
    list.add(
        new Scenario(
            agent
                ? "a POST without key on a kept-alive connection the server closed is sent once"
                : "by hand, the JDK sends a POST again on a kept-alive connection the server closed",
            http(s -> s.enqueue(ok("warm"), closeWithoutResponse(), ok("charged twice"))),
            List.of(
                call("w", "url", "GET", "/v1/warm", "", ""),
                call("a", "url", "POST", "/v1/charges", "", "{\"amount\":1}")),
            (o, s) -> {
              if (agent) {
                assertThat(o.get("a", "error")).isEqualTo("java.net.SocketException");
                assertThat(o.get("a", "message")).contains("Unexpected end of file");
                assertThat(s.requestCount()).isEqualTo(2);
              } else {
                assertThat(o.status("a")).isEqualTo(200);
                assertThat(s.requestCount()).isEqualTo(3);
              }
            }));
    list.add(
        new Scenario(
            "a POST without key answered 303: the GET the JDK follows it with on a kept-alive"
                + " connection the server closed is sent again, as without the agent",
            http(
                s ->
                    s.enqueue(
                        status(303).withHeader("Location", "/v1/receipt"),
                        closeWithoutResponse(),
                        ok("receipt"))),
            List.of(call("a", "url", "POST", "/v1/charges", "", "{\"amount\":1}")),
            (o, s) -> {
              // The POST was answered; the JDK's resend is of the GET, which is safe to send again
              // (the agent switched it off, judging the POST: the application got "Unexpected end
              // of file from server" where without the agent it had the receipt).
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(o.get("a", "body")).isEqualTo("receipt");
              assertThat(s.requests())
                  .extracting(r -> r.method() + " " + r.target())
                  .containsExactly("POST /v1/charges", "GET /v1/receipt", "GET /v1/receipt");
            }));
    list.add(
        new Scenario(
            "a keyed POST on a kept-alive connection the server closed succeeds (one resend)",
            http(s -> s.enqueue(ok("warm"), closeWithoutResponse(), ok("charged"))),
            List.of(
                call("w", "url", "GET", "/v1/warm", "", ""),
                call("a", "url", "POST", "/keyed/charges", KEY, "{\"amount\":1}")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(s.requests()).filteredOn(r -> r.method().equals("POST")).hasSize(2);
            }));
    list.add(
        new Scenario(
            agent
                ? "the JDK's resend of a GET on a kept-alive connection the server closed counts as"
                    + " an attempt (maxAttempts 2)"
                : "by hand, the JDK's resend on a kept-alive connection the server closed is not"
                    + " counted",
            http(s -> s.enqueue(ok("warm"), closeWithoutResponse(), status(503), ok("again"))),
            List.of(
                call("w", "url", "GET", "/v1/warm", "", ""),
                call("a", "url", "GET", "/rewrite/again", "", "")),
            (o, s) -> {
              // The stale connection's request, then the JDK's resend (answered 503) on a new one
              if (agent) {
                assertThat(o.status("a")).isEqualTo(503);
                assertThat(s.requestCount()).isEqualTo(3);
              } else {
                assertThat(o.status("a")).isEqualTo(200);
                assertThat(o.get("a", "body")).isEqualTo("again");
                assertThat(s.requestCount()).isEqualTo(4);
              }
            }));
    list.add(
        new Scenario(
            agent
                ? "the JDK's rewrite after a write error counts as an attempt (maxAttempts 2)"
                : "by hand, the JDK's rewrite after a write error is not counted",
            rewrite(503, 200),
            List.of(call("a", "url", "PUT", "/rewrite/upload", "", "bytes:25165824")),
            (o, s) -> {
              // connection 1 is reset while the body is written; the JDK writes it again on 2
              if (agent) {
                assertThat(o.status("a")).isEqualTo(503);
                assertThat(s.requestCount()).isEqualTo(2);
              } else {
                assertThat(o.status("a")).isEqualTo(200);
                assertThat(s.requestCount()).isEqualTo(4);
              }
            }));
    return list;
  }

  /** Spring's RestTemplate, Feign and Jersey on their default HttpURLConnection (agent only). */
  static List<Scenario> clientsOnTop() {
    List<Scenario> list = new ArrayList<>();
    for (String client : List.of("spring-buffered", "spring-streaming", "feign", "jersey")) {
      list.add(threeAttempts(client));
      list.add(postWithoutKey(client));
    }
    list.add(keyedPost("spring-buffered", "bytes:3000", 3000, "fixed length"));
    list.add(keyedPost("spring-streaming", "bytes:3000", 3000, "chunked"));
    list.add(keyedPost("feign", "bytes:3000", 3000, "fixed length"));
    list.add(keyedPost("jersey", "bytes:3000", 3000, "fixed length"));
    list.add(keyedPost("jersey-chunked", "bytes:3000", 3000, "chunked"));
    list.add(
        new Scenario(
            "spring: a refused connection is retried (RestTemplate calls connect() first)",
            closedPort(),
            List.of(call("a", "spring-buffered", "GET", "/v1/items", "", "")),
            (o, s) -> {
              assertThat(o.get("a", "error"))
                  .isEqualTo("org.springframework.web.client.ResourceAccessException");
              assertThat(o.get("a", "cause")).isEqualTo("java.net.ConnectException");
              assertThat(o.retries()).isEqualTo(2);
            }));
    return list;
  }
}
