package dev.retryagent.it.differential;

import static dev.retryagent.it.harness.Reply.closeWithoutResponse;
import static dev.retryagent.it.harness.Reply.dribble;
import static dev.retryagent.it.harness.Reply.garbage;
import static dev.retryagent.it.harness.Reply.malformedChunk;
import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.reset;
import static dev.retryagent.it.harness.Reply.resetMidBody;
import static dev.retryagent.it.harness.Reply.status;

import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.Reply;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The fault matrix of issue 14, as cases of the differential suite: every fault a broken server or
 * network can make, under each method that decides differently (a {@code GET}, a {@code POST}
 * without key, a {@code POST} with an {@code Idempotency-Key} under {@code unsafeMethods:
 * if-idempotency-key}, a {@code PATCH} without key), with the default policy otherwise. Each case
 * is compared with its run without the agent by its {@link Expect rule} (the contract: where the
 * policy does not retry, everything agrees; where it does, only the extra attempts differ), and
 * carries the matrix's explicit expectations ({@link Checks}): the exact request count on the
 * server with the agent, a follow-up call on the same client (a pool of one connection) that
 * succeeds at once, the earlier attempts' failures carried as suppressed, and for a keyed request
 * the same key and body on every attempt.
 *
 * <p>Ids are {@code fault-FAULT-METHOD}: {@code -Ddiff.cases='fault-*'} runs the matrix alone. The
 * application reads every body ({@link Action#readBody()}), as applications do.
 */
final class FaultCases {
  /** A retry of a fast failure: attempts of a few ms, waits of at most 100 and 200 ms. */
  private static final long FAST_RETRIES_MILLIS = 300 + 2 * Expect.SLACK_MILLIS;

  /** The per-attempt timeout the application sets where the server is slow to answer. */
  private static final int TIMEOUT = Cases.TIMEOUT;

  /** The combinations of HttpClient 5. */
  private static final String APACHE_5 = "apache-5*";

  /** The combinations of HttpClient 5's async client ({@link Apache5AsyncDriver}). */
  private static final String APACHE_5_ASYNC = "apache-5*-async/*";

  /** The request body of every POST and PATCH. */
  private static final String BODY = "{\"amount\":1}";

  private FaultCases() {}

  /** How a case's request is made, and what the default policy does with each outcome. */
  private enum Method {
    GET("get"),
    POST("post"),
    POST_KEY("post-key"),
    PATCH("patch");

    final String id;

    Method(String id) {
      this.id = id;
    }

    /** The policy retries any retryable outcome of this request (not only a refused connect). */
    boolean repeatable() {
      return this == GET || this == POST_KEY;
    }

    Action action(String fault) {
      String path = "/faults/" + fault;
      switch (this) {
        case GET:
          return Action.get(path).inFaultMatrix();
        case POST:
          return Action.post(path, BODY).inFaultMatrix();
        case POST_KEY:
          return Action.post(path, BODY).header("Idempotency-Key", "key-" + fault).inFaultMatrix();
        default:
          return Action.patch(path, BODY).inFaultMatrix();
      }
    }
  }

  /**
   * One fault under several methods.
   *
   * @param id the fault's part of the case ids
   * @param title what the server does
   * @param script the server's script
   * @param retried whether the default policy retries the fault for a repeatable request
   * @param attempts the attempts of a repeatable request the agent makes (1 when not retried)
   */
  private record Fault(
      String id, String title, Consumer<CountingServer> script, boolean retried, int attempts) {}

  static List<Case> all() {
    List<Case> c = new ArrayList<>();
    c.addAll(transport());
    c.addAll(staleConnection());
    c.addAll(brokenResponses());
    c.addAll(slow());
    c.addAll(retryAfter());
    c.addAll(statuses());
    List<Case> checked = new ArrayList<>();
    for (Case k : c) {
      checked.add(
          withFollowUpChecked(k)
              .knownIntermittent(
                  "java.net.http/sendAsync@*",
                  "delivered on `caller`",
                  Known.Reasons.ASYNC_FAILURE_ON_CALLER)
              .knownIntermittent(
                  "java.net.http/sendAsync@*",
                  "delivered on `ForkJoinPool.commonPool-worker-N`, expected `caller`",
                  Known.Reasons.ASYNC_FAILURE_AFTER_ATTACH));
    }
    return checked;
  }

  private static List<Case> transport() {
    List<Case> c = new ArrayList<>();
    // A refused connection: the request provably never left, so even a POST without key is
    // retried (unsafeMethods: if-not-sent), and the server sees nothing.
    for (Method m : Method.values()) {
      c.add(
          base("refused", "every connection refused", m, Expect.retried(0, FAST_RETRIES_MILLIS), 0)
              .refused()
              // Nothing to follow up on: the port refuses every connection.
              .action(m.action("refused").readBody()));
    }
    // A POST or PATCH without key answered with a redirect whose Location refuses the connection:
    // the request was sent and answered, so the client's ConnectException does not mean "never
    // sent" (each adapter retried it, and the server got it three times where the client alone
    // sent it once). Clients that do not follow a 307 of a POST give the 307 back, as without us.
    int refusing = dev.retryagent.it.harness.RefusedPort.port();
    for (int code : new int[] {303, 307}) {
      String id = "redirect-" + code + "-refused";
      for (Method m : List.of(Method.POST, Method.PATCH)) {
        c.add(
            base(id, "a " + code + " to a port that refuses every connection", m, Expect.same(), 1)
                .server(
                    s ->
                        always(
                            s,
                            status(code)
                                .withHeader("Location", "http://127.0.0.1:" + refusing + "/gone")))
                // Nothing to follow up on: every request is redirected to the refusing port.
                .action(m.action(id).followRedirects().readBody()));
      }
    }
    Fault resetFault =
        new Fault("reset", "the request read, then a reset", s -> always(s, reset()), true, 3);
    Fault empty =
        new Fault(
            "empty",
            "the request read, then the connection closed without a byte",
            s -> always(s, closeWithoutResponse()),
            true,
            3);
    for (Fault f : List.of(resetFault, empty)) {
      for (Method m : Method.values()) {
        Case k = matrix(f, m, FAST_RETRIES_MILLIS);
        if (m == Method.GET) {
          // The JDK client sends a GET that met a closed connection once more by itself; that
          // resend is an attempt, and a retry of ours would bring another: 2 requests in all.
          k = k.checks(x -> x.requests("java.net.http/*", 2));
        } else if (!m.repeatable()) {
          // HttpURLConnection sends a request that met a closed connection once more by itself,
          // POST included; with the agent, one it would not repeat itself is never sent twice.
          k = k.expect(Expect.same().requestsAtMost(1));
        }
        c.add(k);
      }
    }
    return c;
  }

  private static List<Case> staleConnection() {
    List<Case> c = new ArrayList<>();
    // The call reuses a kept-alive connection (primed), which is reset once the request is read;
    // a new connection is answered 200. Clients resend on their own here: with the agent, a request
    // it would not repeat reaches the server once, a repeatable one twice.
    for (Method m : Method.values()) {
      Case k =
          base(
                  "stale-reset",
                  "the request on a reused kept-alive connection read, then a reset; then 200",
                  m,
                  m.repeatable()
                      ? Expect.retried(2, FAST_RETRIES_MILLIS).succeeding()
                      : Expect.same().requestsAtMost(1),
                  m.repeatable() ? 2 : 1)
              .server(s -> s.enqueue(reset()))
              .action(m.action("stale-reset").primed().readBody().followUp());
      if (!m.repeatable()) {
        k = k.known("okhttp-*,url-connection*", Known.Reasons.CLIENT_RESEND_OFF);
      }
      c.add(k);
    }
    return c;
  }

  private static List<Case> brokenResponses() {
    List<Case> c = new ArrayList<>();
    // The status came: the call's decision is made (a 200 is final), and the body that breaks
    // afterwards is the application's to read: never retried.
    List<Fault> faults =
        List.of(
            new Fault(
                "reset-mid-body",
                "a 200 whose body breaks off with a reset",
                s -> always(s, resetMidBody(10_000)),
                false,
                1),
            new Fault(
                "malformed-chunk",
                "a 200 whose chunked body has a chunk size that is not a number",
                s -> always(s, malformedChunk()),
                false,
                1),
            new Fault(
                "dribble",
                "a 200 whose body comes one byte every 50 ms",
                s -> always(s, dribble(10, Duration.ofMillis(50))),
                false,
                1));
    for (Fault f : faults) {
      for (Method m : List.of(Method.GET, Method.POST)) {
        // HttpClient 5's async client reads the body inside the exchange, and its own retry sends
        // a GET whose body broke off again by itself, as it does without the agent.
        c.add(matrix(f, m, FAST_RETRIES_MILLIS).checks(x -> x.requests(APACHE_5_ASYNC, -1)));
      }
    }
    // Bytes that are not HTTP: how the client reports them decides (a protocol error is not
    // retried; an empty response is, for a repeatable request).
    for (Method m : List.of(Method.GET, Method.POST, Method.POST_KEY)) {
      c.add(
          base(
                  "garbage",
                  "256 bytes that are not HTTP, then the connection closed",
                  m,
                  m == Method.POST ? Expect.same() : Expect.retried(3, FAST_RETRIES_MILLIS),
                  1)
              .server(s -> always(s, garbage()))
              // HttpClient 5 (classic) skips lines it cannot parse and reports no response at
              // all: a repeatable request is retried as after a reset. Every other client, the
              // async HttpClient 5 too, reports a protocol error, which is not retried.
              .checks(
                  x -> m.repeatable() ? x.requests(APACHE_5, 3).requests(APACHE_5_ASYNC, 1) : x));
    }
    return c;
  }

  private static List<Case> slow() {
    List<Case> c = new ArrayList<>();
    // Headers 2 s late, past the application's per-attempt timeout: java.net.http's request
    // timeout, the others' read timeout (two families: each client runs the one it has).
    Consumer<CountingServer> late = s -> always(s, ok("late").after(Duration.ofSeconds(2)));
    for (String kind : List.of("request-timeout", "read-timeout")) {
      for (Method m : Method.values()) {
        Action a = m.action("slow-headers");
        a = kind.equals("request-timeout") ? a.requestTimeout(TIMEOUT) : a.readTimeout(TIMEOUT);
        c.add(
            base(
                    "slow-headers-" + kind,
                    "the headers come 2 s late, past the " + kind.replace('-', ' ') + " (400 ms)",
                    m,
                    m.repeatable()
                        ? Expect.retried(3, Cases.RETRIED_TIMEOUTS_MILLIS)
                        : Expect.same(),
                    m.repeatable() ? 3 : 1)
                .server(late)
                .action(a.readBody().followUp())
                .knownIntermittent(
                    APACHE_5, "follow-up", Known.Reasons.APACHE5_TIMED_OUT_CONNECTION_REUSED));
      }
    }
    return c;
  }

  private static List<Case> retryAfter() {
    List<Case> c = new ArrayList<>();
    // A 429, then a 200: each way of writing Retry-After, for a GET (and, for seconds, every
    // method). One that asks for longer than retryAfter.max (30 s) gets its 429 back at once.
    c.addAll(retryAfter("seconds", "1", Method.values(), 1_000));
    c.addAll(retryAfterDate("date", Duration.ofSeconds(2), 950));
    c.addAll(retryAfter("garbage", "soon", new Method[] {Method.GET}, 0));
    c.addAll(retryAfterDate("past-date", Duration.ofHours(-1), 0));
    c.addAll(retryAfter("negative", "-5", new Method[] {Method.GET}, 0));
    for (Method m : List.of(Method.GET, Method.POST_KEY)) {
      c.add(
          base("429-huge", "a 429 with Retry-After: 99999999999, then a 200", m, Expect.same(), 1)
              .server(s -> s.enqueue(status(429).withHeader("Retry-After", "99999999999")))
              .action(m.action("429-huge").readBody().followUp().bound(2_000))
              .known(APACHE_5, Known.Reasons.APACHE5_OWN_LONG_WAIT));
    }
    return c;
  }

  private static List<Case> retryAfter(String id, String value, Method[] methods, long atLeast) {
    List<Case> c = new ArrayList<>();
    for (Method m : methods) {
      c.add(
          retryAfterCase(
              "429-" + id,
              "a 429 with Retry-After: " + value + ", then a 200",
              m,
              status(429).withHeader("Retry-After", value),
              atLeast));
    }
    return c;
  }

  private static List<Case> retryAfterDate(String id, Duration fromNow, long atLeast) {
    return List.of(
        retryAfterCase(
            "429-" + id,
            "a 429 with Retry-After: an HTTP-date " + fromNow + " from now, then a 200",
            Method.GET,
            status(429).withRetryAfterDate(fromNow),
            atLeast));
  }

  private static Case retryAfterCase(
      String id, String title, Method m, Reply first, long atLeastMillis) {
    Expect e =
        m.repeatable()
            // An HTTP-date is rounded down to the second: "2 s from now" waits 1 to 2 s.
            ? Expect.retried(2, 2 * Math.max(atLeastMillis, 500) + 1_000 + Expect.SLACK_MILLIS)
                .succeeding()
            : Expect.same();
    Case k =
        base(id, title, m, e, m.repeatable() ? 2 : 1).server(s -> s.enqueue(first, ok("later")));
    if (!m.repeatable()) {
      return apache5ResendsItself(k);
    }
    return atLeastMillis > 0 ? k.checks(x -> x.minMillis(atLeastMillis)) : k;
  }

  private static List<Case> statuses() {
    List<Case> c = new ArrayList<>();
    for (int code : new int[] {500, 502, 503, 504, 400, 404}) {
      // retryOn.statuses: [429, 502, 503, 504] by default.
      boolean retried = code >= 502;
      Fault f =
          new Fault(
              String.valueOf(code),
              "always " + code,
              s -> always(s, status(code)),
              retried,
              retried ? 3 : 1);
      List<Method> methods =
          retried
              ? code == 503
                  ? List.of(Method.values())
                  : List.of(Method.GET, Method.POST, Method.POST_KEY)
              : List.of(Method.GET, Method.POST);
      for (Method m : methods) {
        Case k = matrix(f, m, FAST_RETRIES_MILLIS);
        if (code == 503 && !m.repeatable()) {
          k = apache5ResendsItself(k);
        }
        c.add(k);
      }
    }
    for (Method m : List.of(Method.GET, Method.POST)) {
      c.add(
          base("redirect-loop", "a 302 to itself, forever", m, Expect.same(), -1)
              .server(s -> always(s, status(302).withHeader("Location", "/faults/redirect-loop")))
              .action(m.action("redirect-loop").followRedirects().readBody().followUp()));
    }
    return c;
  }

  /**
   * {@code k}, a request the policy does not repeat answered 429 or 503, on HttpClient 5: without
   * the agent its own retry strategy sends it once more, POST included, after a second (or the
   * Retry-After); with the agent it reaches the server once (the agent's governed strategy refuses
   * a resend of a request the policy would not repeat, docs/apache-httpclient.md).
   */
  private static Case apache5ResendsItself(Case k) {
    return k.known(APACHE_5, Known.Reasons.APACHE5_RESEND_OFF);
  }

  /** {@code f} under {@code m}: retried within {@code maxMillis} where the policy retries it. */
  private static Case matrix(Fault f, Method m, long maxMillis) {
    boolean retried = f.retried() && m.repeatable();
    Expect e = retried ? Expect.retried(f.attempts(), maxMillis) : Expect.same();
    return base(f.id(), f.title(), m, e, retried ? f.attempts() : 1).server(f.script());
  }

  /**
   * The case of {@code fault} under {@code m}: the application reads the body and follows up on the
   * same client; with the agent the server sees exactly {@code requests} (-1: as without), a
   * failure carries the earlier ones, and every attempt of a keyed request is the same request.
   */
  private static Case base(String fault, String title, Method m, Expect e, int requests) {
    String policy = m == Method.POST_KEY ? "retry: { unsafeMethods: if-idempotency-key }" : "";
    Case c =
        Case.of("fault-" + fault + "-" + m.id, title + " (" + m.name() + ")")
            .policy(policy)
            .action(m.action(fault).readBody().followUp())
            .expect(e)
            .checks(Checks::withCarriedFailures);
    if (requests >= 0) {
      c = c.checks(k -> k.requests("*", requests));
    }
    return m == Method.POST_KEY ? c.checks(Checks::withSameRequest) : c;
  }

  /**
   * Checks the follow-up where the action makes one: set last, since a case may replace the action.
   */
  private static Case withFollowUpChecked(Case c) {
    return c.action().followsUp() && c.id().startsWith("fault-")
        ? c.checks(Checks::withFollowUp)
        : c;
  }

  private static void always(CountingServer s, Reply r) {
    s.setDefaultReply(r);
  }
}
