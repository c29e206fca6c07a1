package dev.retryagent.urlconnection;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.reset;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A POST with an idempotency key (retried) whose application set {@code Expect: 100-continue}, its
 * body buffered or streamed, against a real loopback server that records what arrived: each request
 * the agent sends carries the application's very headers and body, a streamed one waits for {@code
 * 100 Continue} as the application's own does, and the server's final status in place of {@code
 * 100} on the last attempt reaches the application as the JDK gives it, in JDK 17 and 25 alike (JDK
 * 17 sends the request again when asked for the response after the rejection, JDK 25 does not: with
 * the agent the same). Probed on both; nothing differed: a regression guard.
 */
class ExpectContinueRetryTest {
  /** How the application sends its body. */
  enum BodyMode {
    BUFFERED,
    FIXED_LENGTH,
    CHUNKED
  }

  /** How the server answers the first attempt. */
  enum FirstAttempt {
    /** {@code 100 Continue}, reads the body, then a reset without an answer. */
    RESET_AFTER_BODY(reset(), false),
    /** {@code 100 Continue}, reads the body, then 503 (retried). */
    STATUS_503_AFTER_BODY(status(503), false),
    /** A reset on the request's head, before any {@code 100 Continue}. */
    RESET_BEFORE_BODY(reset().beforeBody(), true);

    final ScriptedHttpServer.Action action;
    final boolean beforeBody;

    FirstAttempt(ScriptedHttpServer.Action action, boolean beforeBody) {
      this.action = action;
      this.beforeBody = beforeBody;
    }
  }

  private static final String BODY = "{\"amount\":1}";

  private ScriptedHttpServer server;
  private final List<RetryEvent> ended = new CopyOnWriteArrayList<>();

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  static Stream<Arguments> cases() {
    List<Arguments> cases = new ArrayList<>();
    for (BodyMode mode : BodyMode.values()) {
      for (FirstAttempt first : FirstAttempt.values()) {
        for (int last : new int[] {200, 417, 401}) {
          cases.add(Arguments.of(mode, first, last));
        }
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "{0}, first {1}, then {2}")
  @MethodSource("cases")
  void aKeyedPostExpectingContinueIsResentAsTheApplicationSentItAndAnsweredAsTheJdkAnswers(
      BodyMode mode, FirstAttempt first, int last) throws Exception {
    // 200 after 100 Continue; any other status on the head, before the body, instead of 100.
    server.otherwise(last == 200 ? ok("charged") : status(last).beforeBody());
    List<String> jdk = post(new URL(server.url("/v1/charges")).openConnection(), mode);
    List<ScriptedHttpServer.Recorded> plain = server.requests();
    assertThat(plain).isNotEmpty();

    server.enqueue(first.action);
    RetryEngine engine =
        TestEngines.builder(
                new FakeTime(),
                Mode.ENFORCE,
                b -> b.unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY),
                Policy.defaults().budget(),
                CircuitBreakerPolicy.defaults(),
                Policy.defaults().rateLimit())
            .listener(
                new RetryListener() {
                  @Override
                  public void onCallComplete(RetryEvent e) {
                    ended.add(e);
                  }
                })
            .build();
    List<String> seen =
        post(RetryingUrlConnections.open(new URL(server.url("/v1/charges")), engine), mode);

    // The body step: the application's write goes to the attempt that got 100 Continue. One whose
    // first attempt took its body streamed before failing wrote it whole; the JDK alone, answered
    // the final status instead of 100, refuses it.
    boolean wroteToTheFirst = mode != BodyMode.BUFFERED && !first.beforeBody;
    assertThat(seen.get(0)).isEqualTo(wroteToTheFirst ? "written" : jdk.get(0));
    // The response, and what the connection answers after it, as without the agent.
    assertThat(seen.subList(1, seen.size())).isEqualTo(jdk.subList(1, jdk.size()));

    // On the wire: the first attempt, then what the JDK alone sends for the application's request
    // (JDK 17: once more when the response is asked after a rejection); each with the
    // application's headers, Expect once. A buffered POST reset is resent by the JDK itself
    // (sun.net.http.retryPost), as without the agent, which makes no retry of its own on top.
    List<ScriptedHttpServer.Recorded> all = server.requests();
    List<ScriptedHttpServer.Recorded> ours = all.subList(plain.size(), all.size());
    assertThat(ours).hasSize(1 + plain.size());
    assertThat(ours)
        .allSatisfy(
            r -> {
              assertThat(r.method).isEqualTo("POST");
              assertThat(r.headers).isEqualTo(plain.get(0).headers);
              assertThat(r.values("Expect")).containsExactly("100-continue");
              assertThat(r.values("Idempotency-Key")).containsExactly("order-7");
            });
    List<String> bodies = new ArrayList<>();
    bodies.add(first.beforeBody ? "" : BODY);
    plain.forEach(r -> bodies.add(r.body));
    assertThat(ours).extracting(r -> r.body).isEqualTo(bodies);
    // The call ends with the final status (the last attempt's Expect answered with it: judged as
    // that status, as the JDK's rejection holds it, not as a transport failure of the host).
    assertThat(ended)
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.status()).isEqualTo(last);
              assertThat(e.error()).isNull();
            });
  }

  /**
   * What the application sees of its keyed POST that expects {@code 100 Continue}, its body sent in
   * {@code mode}: each step's result or exception.
   */
  private static List<String> post(java.net.URLConnection opened, BodyMode mode)
      throws IOException {
    HttpURLConnection c = (HttpURLConnection) opened;
    c.setRequestMethod("POST");
    c.setDoOutput(true);
    c.setRequestProperty("Content-Type", "application/json");
    c.setRequestProperty("Idempotency-Key", "order-7");
    c.setRequestProperty("Expect", "100-continue");
    byte[] body = BODY.getBytes(StandardCharsets.UTF_8);
    if (mode == BodyMode.FIXED_LENGTH) {
      c.setFixedLengthStreamingMode(body.length);
    } else if (mode == BodyMode.CHUNKED) {
      c.setChunkedStreamingMode(1024);
    }
    List<String> seen = new ArrayList<>();
    seen.add(
        outcome(
            () -> {
              try (OutputStream out = c.getOutputStream()) {
                out.write(body);
              }
              return "written";
            }));
    seen.add(outcome(() -> "status " + c.getResponseCode()));
    seen.add(outcome(() -> "message " + c.getResponseMessage()));
    seen.add(outcome(() -> read(c.getInputStream())));
    seen.add(outcome(() -> c.getErrorStream() == null ? "no error stream" : "error stream"));
    seen.add(outcome(() -> "status " + c.getResponseCode()));
    return seen;
  }

  /** A step of the application's. */
  private interface Step {
    String run() throws IOException;
  }

  private static String outcome(Step step) {
    try {
      return step.run();
    } catch (IOException | RuntimeException e) {
      // The URL's port differs from run to run only in the JDK's message, not here: one server.
      return e.getClass().getName() + ": " + e.getMessage();
    }
  }

  private static String read(InputStream in) throws IOException {
    try (in) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
