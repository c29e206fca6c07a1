package dev.retryagent.it.differential;

import static dev.retryagent.it.differential.Action.Cancel.ALL;
import static dev.retryagent.it.differential.Action.Cancel.CALL;
import static dev.retryagent.it.differential.Action.Cancel.CLOSE;
import static dev.retryagent.it.differential.Action.Cancel.DEPENDENT;
import static dev.retryagent.it.differential.Action.Cancel.INTERRUPT;
import static dev.retryagent.it.differential.Known.Reasons.*;
import static dev.retryagent.it.harness.Reply.closeWithoutResponse;
import static dev.retryagent.it.harness.Reply.hang;
import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static dev.retryagent.it.harness.Reply.webSocketAccept;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The cases of the differential suite (issue 11), client-neutral: each runs on every client API
 * that offers what its action needs. Times are chosen so that a case takes well under a second
 * without the agent: timeouts of {@value #TIMEOUT} ms, the application acting {@value #ACT} ms into
 * the call, and where the agent must be caught between attempts a constant backoff of 1 s.
 *
 * <p>The {@code known} markers say where today's code breaks the rule, one per bug (reasons in
 * {@link Known.Reasons}); a fix removes its markers.
 */
final class Cases {
  /** The per-attempt timeouts the application sets. */
  static final int TIMEOUT = 400;

  /** When the application cancels or interrupts, after it started the call. */
  static final int ACT = 500;

  /** The default policy retries a timeout: 3 attempts, waits of at most 100 and 200 ms. */
  static final int RETRIED_TIMEOUTS_MILLIS = 3 * TIMEOUT + 300 + (int) Expect.SLACK_MILLIS;

  /** A wait of 1 s before every retry, so that the application acts during it. */
  static final String WAIT_1S =
      "retry: { backoff: { initial: 1s, multiplier: 1.0, jitter: none } }";

  /** A wait of 100 ms before every retry. */
  static final String WAIT_100MS =
      "retry: { backoff: { initial: 100ms, multiplier: 1.0, jitter: none } }";

  private Cases() {}

  static List<Case> all() {
    List<Case> all = new ArrayList<>();
    all.addAll(plain());
    all.addAll(timeouts());
    all.addAll(cancels());
    all.addAll(others());
    all.addAll(FaultCases.all());
    List<Case> marked = new ArrayList<>();
    for (Case c : all) {
      marked.add(asyncApacheTimeouts(c));
    }
    return marked;
  }

  /**
   * {@code c}, marked where HttpClient 5's async client takes longer than the bound of a retried
   * case with a connect or read timeout: it checks its timeouts once per I/O select interval (1 s
   * by default), so a timeout of {@value #TIMEOUT} ms ends an attempt after about a second, with or
   * without the agent, and three attempts take about three.
   */
  private static Case asyncApacheTimeouts(Case c) {
    boolean timed = c.action().readTimeout() > 0 || c.action().connectTimeout() > 0;
    return timed && c.expect().retried()
        ? c.knownIntermittent(
            "apache-5*-async/*", "took \\d+ ms, expected at most", ASYNC_APACHE_TIMEOUT_TICK)
        : c;
  }

  /** Markers that cover every case on {@code combination}: races that may show anywhere. */
  static List<Known> everywhere(String combination) {
    return List.of();
  }

  private static List<Case> plain() {
    List<Case> c = new ArrayList<>();
    c.add(Case.of("ok", "a 200"));
    c.add(Case.of("not-found", "a 404 is not retried").server(s -> s.enqueue(status(404))));
    for (int code : new int[] {301, 302, 307, 308}) {
      c.add(
          Case.of("redirect-" + code, "a " + code + " to the same host is followed")
              .server(s -> s.enqueue(status(code).withHeader("Location", "/moved"), ok("moved")))
              .action(Action.get("/from").followRedirects()));
    }
    c.add(
        Case.of("503-then-200", "a 503 then a 200: retried, only the extra attempt differs")
            .server(s -> s.enqueue(status(503), ok("later")))
            .expect(Expect.retried(2, 1_000 + Expect.SLACK_MILLIS).succeeding()));
    c.add(
        Case.of("post-503", "a POST without key answered 503 is not retried")
            .server(s -> s.enqueue(status(503), ok("charged twice")))
            .action(Action.post("/charges", "{}"))
            .known("apache-5*", APACHE5_RESEND_OFF));
    c.add(
        Case.of("post-503-key", "a POST with an Idempotency-Key answered 503 is retried")
            .server(s -> s.enqueue(status(503), ok("charged")))
            .policy("retry: { unsafeMethods: if-idempotency-key }")
            .action(Action.post("/charges", "{}").header("Idempotency-Key", "k-1"))
            .expect(Expect.retried(2, 1_000 + Expect.SLACK_MILLIS).succeeding()));
    c.add(
        Case.of(
                "post-503-interceptor-key",
                "a POST whose Idempotency-Key an application interceptor adds is retried")
            .server(s -> s.enqueue(status(503), ok("charged")))
            .policy("retry: { unsafeMethods: if-idempotency-key }")
            .action(Action.post("/charges", "{}").interceptorAdds("Idempotency-Key", "k-2"))
            .expect(Expect.retried(2, 1_000 + Expect.SLACK_MILLIS).succeeding()));
    c.add(
        Case.of(
                "closed-without-answer",
                "a server that closes without answering, maxAttempts 3: clients' own resends count")
            .server(s -> s.setDefaultReply(closeWithoutResponse()))
            .policy("retry: { maxAttempts: 3 }")
            .expect(Expect.retried(3, 1_000 + Expect.SLACK_MILLIS)));
    return c;
  }

  private static List<Case> timeouts() {
    List<Case> c = new ArrayList<>();
    c.add(
        Case.of("request-timeout", "a hanging server under the request timeout")
            .server(s -> s.setDefaultReply(hang()))
            .action(Action.get("/").requestTimeout(TIMEOUT))
            .expect(Expect.retried(3, RETRIED_TIMEOUTS_MILLIS)));
    c.add(
        Case.of("connect-timeout", "a server that never accepts, under the connect timeout")
            .unreachable()
            .action(Action.get("/").connectTimeout(TIMEOUT))
            .expect(Expect.retried(0, RETRIED_TIMEOUTS_MILLIS)));
    c.add(
        Case.of("read-timeout", "a hanging server under the read timeout")
            .server(s -> s.setDefaultReply(hang()))
            .action(Action.get("/").readTimeout(TIMEOUT))
            .expect(Expect.retried(3, RETRIED_TIMEOUTS_MILLIS)));
    c.add(
        Case.of("write-timeout", "a server that stops reading a PUT, under the write timeout")
            .server(s -> s.leaveBodiesUnread().setDefaultReply(hang()))
            .action(Action.put("/upload", "").bodyBytes(16 << 20).writeTimeout(TIMEOUT))
            .expect(Expect.retried(3, RETRIED_TIMEOUTS_MILLIS)));
    c.add(
        Case.of("call-timeout", "a hanging server under the call timeout (1 s)")
            .server(s -> s.setDefaultReply(hang()))
            .action(Action.get("/").callTimeout(1_000))
            .agentLogNever("cancelled by the caller", "deadline"));
    c.add(
        Case.of(
                "call-timeout-spans-retries",
                "the call timeout (1 s) is longer than an attempt (300 ms), shorter than the retries")
            .server(s -> s.setDefaultReply(status(503).after(Duration.ofMillis(300))))
            .policy(
                "retry: { maxAttempts: 5, backoff: { initial: 200ms, multiplier: 1.0, jitter: none"
                    + " } }")
            .action(Action.get("/").callTimeout(1_000))
            .expect(Expect.retried(5, 1_000 + Expect.SLACK_MILLIS).orLike("call-timeout"))
            .agentLogNever("cancelled by the caller", "deadline"));
    c.add(
        Case.of(
                "call-timeout-second-attempt",
                "the call timeout (2.5 s) ends the second attempt (503 after 1.5 s, then hangs)")
            .server(
                s -> s.enqueue(status(503).after(Duration.ofMillis(1_500))).setDefaultReply(hang()))
            .action(Action.get("/").callTimeout(2_500))
            // a fresh call timeout for the second attempt would end the call at 4.1 s
            .expect(Expect.retried(2, 2_500 + Expect.SLACK_MILLIS).orLike("call-timeout"))
            .agentLogNever("cancelled by the caller", "deadline"));
    return c;
  }

  private static List<Case> cancels() {
    List<Case> c = new ArrayList<>();
    c.add(
        Case.of("cancel-before", "the application cancels the call before it starts")
            .action(Action.get("/").cancelBefore(CALL))
            .knownIntermittent(
                "apache-5*-async/*", "requests on the server", ASYNC_APACHE_CANCEL_AT_ONCE)
            .knownIntermittent(
                "apache-5*-async/*",
                // Either way round: the race is the same without the agent.
                "outcome `status 200`, expected `cancelled`|outcome `cancelled`, expected `status 200`"
                    + "|delivered on `httpclient-dispatch-N`, expected `caller`"
                    + "|delivered on `caller`, expected `httpclient-dispatch-N`",
                ASYNC_APACHE_CANCEL_AFTER_ANSWER));
    c.add(
        Case.of("interrupt-before", "the caller is interrupted before the call")
            .action(Action.get("/").cancelBefore(INTERRUPT))
            // the JDK starts the exchange before it sees the interrupt: 0 or 1 requests
            .expect(Expect.same().requestsAtMost(1)));
    for (Action.Cancel how : new Action.Cancel[] {CALL, DEPENDENT, ALL, CLOSE, INTERRUPT}) {
      c.addAll(cancels(how));
    }
    return c;
  }

  /** Giving up {@code how} during an attempt, during the wait, and during the second attempt. */
  private static List<Case> cancels(Action.Cancel how) {
    String name = how.name().toLowerCase(Locale.ROOT);
    String attempt = name + "-during-attempt";
    // With no exchange in progress, what the client says when the call was given up before it
    // started is what the application sees as well.
    String before = how == INTERRUPT ? "interrupt-before" : "cancel-before";
    List<Case> c = new ArrayList<>();
    c.add(
        Case.of(attempt, name + ": the application gives up during an attempt (hanging server)")
            .server(s -> s.setDefaultReply(hang()))
            .action(Action.get("/").cancel(how, ACT))
            // on a slow machine the request may not have been sent yet; never a second one
            .expect(Expect.same().requestsAtMost(1)));
    c.add(
        Case.of(name + "-during-wait", name + ": the application gives up during the wait")
            .server(s -> s.setDefaultReply(status(503)))
            .policy(WAIT_1S)
            .action(Action.get("/").cancel(how, ACT))
            .expect(Expect.like(attempt).orLike(before)));
    c.add(
        Case.of(
                name + "-during-retry",
                name + ": the application gives up during the second attempt (503, then hangs)")
            .server(s -> s.enqueue(status(503)).setDefaultReply(hang()))
            .policy(WAIT_100MS)
            .action(Action.get("/").cancel(how, ACT))
            // the second attempt was made before the application acted
            .expect(Expect.like(attempt).orLike(before).requestsAtMost(2)));
    List<Case> marked = new ArrayList<>();
    for (Case k : c) {
      marked.add(cancelMarkers(how, k));
    }
    return marked;
  }

  private static Case cancelMarkers(Action.Cancel how, Case c) {
    if (how == CALL && c.id().endsWith("-wait")) {
      return c.knownIntermittent(
          "apache-5*-async/*", "requests on the server", ASYNC_APACHE_RESEND_AFTER_CANCEL);
    }
    if ((how == ALL || how == CLOSE) && c.id().endsWith("-wait")) {
      return c.known("apache-5*-async/*", "", ASYNC_APACHE_CLOSE);
    }
    if (how == ALL || how == CLOSE) {
      return c.knownIntermittent("apache-5*-async/*", "", ASYNC_APACHE_CLOSE);
    }
    if (how == CALL || c.id().endsWith("-attempt")) {
      return c;
    }
    if (!c.id().endsWith("-wait")) {
      return c;
    }
    return c.known("apache-4*,apache-5*/execute@*,apache-5*/handler@*", APACHE_INTERRUPT_IN_WAIT)
        .known("apache-5*-async/*", "requests on the server", ASYNC_APACHE_INTERRUPT_ONLY_ENDS_GET);
  }

  private static List<Case> others() {
    List<Case> c = new ArrayList<>();
    c.add(
        Case.of("expect-continue", "a PUT that expects 100 Continue: 100, then a 200")
            .action(Action.put("/upload", "{}").expectContinue()));
    c.add(
        Case.of(
                "expect-continue-417",
                "a PUT that expects 100 Continue, refused with a 417 before its body: not retried")
            .server(s -> s.enqueue(status(417).beforeBody()))
            .action(Action.put("/upload", "{}").expectContinue()));
    c.add(
        Case.of(
                "expect-continue-503-then-200",
                "a PUT refused with a 503 before its body, then let through: retried")
            .server(s -> s.enqueue(status(503).beforeBody(), ok("stored")))
            .action(Action.put("/upload", "{}").expectContinue())
            .expect(Expect.retried(2, 1_000 + Expect.SLACK_MILLIS).succeeding()));
    c.add(
        Case.of("callback-throws-io", "the callback throws an IOException after a 200")
            .action(Action.get("/").callbackThrows("io")));
    c.add(
        Case.of("callback-throws-runtime", "the callback throws a RuntimeException after a 200")
            .action(Action.get("/").callbackThrows("runtime")));
    c.add(
        Case.of(
                "callback-throws-io-after-retry",
                "the callback throws an IOException after a 503 (without) or a retried 200")
            .server(s -> s.enqueue(status(503), ok("later")))
            .action(Action.get("/").callbackThrows("io"))
            .expect(Expect.retried(2, 1_000 + Expect.SLACK_MILLIS).succeeding())
            .knownIntermittent("apache-5*-async/*", "further reports", ASYNC_APACHE_LATE_FAILED));
    c.add(
        Case.of("websocket-open", "a WebSocket handshake is accepted")
            .server(s -> s.setDefaultReply(webSocketAccept()))
            .action(Action.get("/ws").webSocket())
            .knownIntermittent(
                "java.net.http/sendAsync@*",
                "delivered on `ForkJoinPool.commonPool-worker-N`, expected `caller`",
                Known.Reasons.HANDSHAKE_DONE_BEFORE_ATTACH));
    c.add(
        Case.of("websocket-503", "a WebSocket handshake answered 503")
            .server(s -> s.setDefaultReply(status(503)))
            .action(Action.get("/ws").webSocket())
            .expect(Expect.retried(3, 1_000 + Expect.SLACK_MILLIS)));
    c.add(
        Case.of("websocket-cancel", "a WebSocket handshake cancelled while the server hangs")
            .server(s -> s.setDefaultReply(hang()))
            .action(Action.get("/ws").webSocket().cancel(CALL, ACT)));
    c.add(
        Case.of(
                "websocket-cancel-during-retry",
                "a WebSocket handshake cancelled during its second attempt (503, then accepted"
                    + " after 800 ms): the cancel reaches the attempt")
            .server(
                s ->
                    s.enqueue(status(503))
                        .setDefaultReply(webSocketAccept().after(Duration.ofMillis(800))))
            .policy(WAIT_100MS)
            .action(Action.get("/ws").webSocket().cancel(CALL, ACT))
            .knownIntermittent(
                "java.net.http/sendAsync@*",
                "delivered on `caller`, expected `ForkJoinPool.commonPool-worker-N`",
                Known.Reasons.HANDSHAKE_DONE_BEFORE_ATTACH)
            // java.net.http: the agent leaves the JDK's own handshake alone, so the 503 ends it
            // before the cancel, as without the agent. OkHttp runs the retry on the pooled
            // connection of the 503, and reports a cancelled call whose pooled connection failed
            // as "Canceled" (it would have tried a new connection), as it does without the agent.
            .expect(
                Expect.like("websocket-cancel")
                    .orLike("websocket-cancel-during-retry")
                    .orLike("cancel-before")
                    .requestsAtMost(2)));
    return c;
  }
}
