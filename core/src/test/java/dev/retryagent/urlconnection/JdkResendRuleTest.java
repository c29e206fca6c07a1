package dev.retryagent.urlconnection;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.URL;
import java.net.URLConnection;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Whether the JDK may resend a request by itself, step by step (what the agent's transport is
 * told): never a request the engine would not repeat, always where the route never retries,
 * otherwise while an attempt is left for the resend; repeats it reports count as attempts.
 */
class JdkResendRuleTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<Boolean> told = new ArrayList<>();
  private final List<Boolean> toldAtEnd = new ArrayList<>();
  private UrlTransport.JdkResend step;
  private int repeatsToReport;

  /** Records what each step is told; reports {@link #repeatsToReport} once. */
  private final UrlTransport recording =
      new UrlTransport() {
        @Override
        public URLConnection open(URL url, Proxy proxy) throws IOException {
          return UrlTransport.DIRECT.open(url, proxy);
        }

        @Override
        public void beforeStep(JdkResend resend) {
          told.add(resend.mayResend());
          step = resend;
        }

        @Override
        public int afterStep() {
          // What the rule says once the JDK has read the step's responses (a redirect followed)
          toldAtEnd.add(step.mayResend());
          int r = repeatsToReport;
          repeatsToReport = 0;
          return r;
        }
      };

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  private HttpURLConnection open(Mode mode, UnaryOperator<RetryPolicy.Builder> retry)
      throws IOException {
    RetryEngine engine =
        TestEngines.engine(time, mode, retry, CircuitBreakerPolicy.defaults(), new ArrayList<>());
    URL url = new URL(server.url("/v1/x"));
    return (HttpURLConnection)
        RetryingUrlConnections.wrap(url.openConnection(), null, engine, recording);
  }

  @Test
  void aGetMayBeResentWhileAnAttemptIsLeftForIt() throws Exception {
    server.otherwise(status(503));

    assertThat(open(Mode.ENFORCE, b -> b.maxAttempts(3)).getResponseCode()).isEqualTo(503);

    assertThat(told).containsExactly(true, true, false);
  }

  @Test
  void aPostWithoutKeyIsNeverResentByTheJdk() throws Exception {
    server.enqueue(ok("once"));
    HttpURLConnection c = open(Mode.ENFORCE, b -> b);
    c.setRequestMethod("POST");
    c.setDoOutput(true);
    c.connect();
    try (OutputStream out = c.getOutputStream()) {
      out.write("{}".getBytes(StandardCharsets.UTF_8));
    }

    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(told).isNotEmpty().containsOnly(false);
    assertThat(toldAtEnd).isNotEmpty().containsOnly(false);
  }

  @Test
  void theGetTheJdkFollowsAPostWithoutKeyWithMayBeResentThePostNever() throws Exception {
    // A 303 inside the step that reads the response: the JDK follows the POST with a GET, and the
    // rule, asked as each response is read (the agent's transport asks it in parseHTTP), judges
    // that GET. Judged as the POST, the GET's resend was switched off: on a broken connection the
    // application got "Unexpected end of file from server" where without the agent the JDK sent
    // the GET again (UrlRetryScenariosAgentIT).
    server.enqueue(status(303).header("Location", "/v1/receipt"), ok("receipt"));
    HttpURLConnection c = open(Mode.ENFORCE, b -> b);
    c.setRequestMethod("POST");
    c.setDoOutput(true);
    try (OutputStream out = c.getOutputStream()) {
      out.write("{}".getBytes(StandardCharsets.UTF_8));
    }

    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(server.requests()).extracting(r -> r.method).containsExactly("POST", "GET");
    assertThat(told).isNotEmpty().containsOnly(false); // each step begins with the POST
    assertThat(toldAtEnd).containsExactly(false, true); // the body's step; the response's
  }

  @Test
  void aPostWithoutKeyThatTheJdkFollowsAsAPostIsNeverResent() throws Exception {
    // 307: the JDK sends the POST, body and all, again to the new location.
    server.enqueue(status(307).header("Location", "/v1/elsewhere"), ok("once"));
    HttpURLConnection c = open(Mode.ENFORCE, b -> b);
    c.setRequestMethod("POST");
    c.setDoOutput(true);
    try (OutputStream out = c.getOutputStream()) {
      out.write("{}".getBytes(StandardCharsets.UTF_8));
    }

    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(server.requests()).extracting(r -> r.method).containsExactly("POST", "POST");
    assertThat(toldAtEnd).isNotEmpty().containsOnly(false);
  }

  @Test
  void aKeyedPostMayBeResent() throws Exception {
    server.enqueue(ok("once"));
    HttpURLConnection c =
        open(Mode.ENFORCE, b -> b.unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY));
    c.setRequestMethod("POST");
    c.setRequestProperty("Idempotency-Key", "k");
    c.setDoOutput(true);
    try (OutputStream out = c.getOutputStream()) {
      out.write("{}".getBytes(StandardCharsets.UTF_8));
    }

    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(told).isNotEmpty().containsOnly(true);
  }

  @Test
  void whereTheRouteNeverRetriesTheJdkDoesAsItAlwaysDoes() throws Exception {
    server.enqueue(status(503));

    assertThat(open(Mode.ENFORCE, b -> b.maxAttempts(1)).getResponseCode()).isEqualTo(503);

    assertThat(told).containsExactly(true);
  }

  @Test
  void aGetWithDoOutputButNoBodyIsJudgedAsTheGetTheJdkSends() throws Exception {
    server.enqueue(status(503));
    HttpURLConnection c = open(Mode.ENFORCE, b -> b.maxAttempts(1));
    c.setDoOutput(true); // no getOutputStream(): nothing turns the GET into a POST

    assertThat(c.getResponseCode()).isEqualTo(503);

    // Judged as a POST without key, the JDK's resend was switched off where the route never
    // retries: a stale kept-alive connection failed where without the agent it was resent.
    assertThat(server.requests()).extracting(r -> r.method).containsExactly("GET");
    assertThat(told).containsExactly(true);
  }

  @Test
  void aGetWithDoOutputConnectedFirstButNoBodyIsJudgedAsAGetWhenItsResponseIsRead()
      throws Exception {
    server.enqueue(status(503));
    HttpURLConnection c = open(Mode.ENFORCE, b -> b.maxAttempts(1));
    c.setDoOutput(true);
    c.connect();

    assertThat(c.getResponseCode()).isEqualTo(503);

    assertThat(server.requests()).extracting(r -> r.method).containsExactly("GET");
    assertThat(told).hasSize(2).endsWith(true); // connect, then the response: the GET sent
  }

  @Test
  void inObserveModeTheJdkDoesAsItAlwaysDoesEvenForAPostWithoutKey() throws Exception {
    server.enqueue(ok("once"));
    HttpURLConnection c = open(Mode.OBSERVE, b -> b);
    c.setRequestMethod("POST");
    c.setDoOutput(true);
    try (OutputStream out = c.getOutputStream()) {
      out.write("{}".getBytes(StandardCharsets.UTF_8));
    }

    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(told).isNotEmpty().containsOnly(true);
  }

  @Test
  void aResendTheJdkMadeCountsAsAnAttempt() throws Exception {
    server.otherwise(status(503));
    repeatsToReport = 1; // the JDK resent the first attempt's request by itself

    assertThat(open(Mode.ENFORCE, b -> b.maxAttempts(3)).getResponseCode()).isEqualTo(503);

    // attempts 1 (+ the JDK's resend) and 3: the server sees at most maxAttempts requests
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(told).containsExactly(true, false);
  }

  /**
   * A reload during a call's retry wait that makes the rule for requests not safe to repeat
   * stricter applies to each retry of the call (docs/configuration.md, the reload section): so to
   * the JDK's resend inside the retry's attempt too. A POST without key begun under {@code
   * unsafeMethods: always}: its 503 is retried, and during the retry's wait (the reload told from
   * onRetry, as the wait begins) the file is reloaded to {@code never}. The retry goes out (judged
   * when the 503 came), and the JDK must not send it again by itself on a broken kept-alive
   * connection: the server would get the POST a third time. Before, the rule judged by the call's
   * own policy ({@code always}, an attempt left) and allowed the resend. Without the reload, the
   * resend stays allowed (the control).
   */
  @ParameterizedTest(name = "reload {0}")
  @ValueSource(booleans = {false, true})
  void aReloadToNeverDuringTheRetryWaitKeepsTheJdkFromResendingThePost(boolean reload)
      throws Exception {
    AtomicReference<RetryEngine> engineRef = new AtomicReference<>();
    AtomicInteger toldBeforeRetry = new AtomicInteger(-1);
    Policy never =
        new Policy(
            "test",
            RetryPolicy.builder().maxAttempts(3).unsafeMethods(UnsafeMethods.NEVER).build(),
            Policy.defaults().budget(),
            CircuitBreakerPolicy.builder().enabled(false).build(),
            Policy.defaults().rateLimit());
    RetryEngine engine =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                r -> r.maxAttempts(3).unsafeMethods(UnsafeMethods.ALWAYS),
                Policy.defaults().budget(),
                CircuitBreakerPolicy.builder().enabled(false).build(),
                Policy.defaults().rateLimit())
            .listener(
                new RetryListener() {
                  @Override
                  public void onRetry(RetryEvent e) {
                    toldBeforeRetry.set(told.size());
                    if (reload) {
                      engineRef.get().reconfigure(Mode.ENFORCE, (m, h, p, path) -> never);
                    }
                  }
                })
            .build();
    engineRef.set(engine);
    server.enqueue(status(503), ok("charged twice"));
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                new URL(server.url("/v1/charges")).openConnection(), null, engine, recording);
    c.setRequestMethod("POST");
    c.setDoOutput(true);
    try (OutputStream out = c.getOutputStream()) {
      out.write("{}".getBytes(StandardCharsets.UTF_8));
    }

    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(told.subList(0, toldBeforeRetry.get()))
        .as("the first attempt's steps")
        .isNotEmpty()
        .containsOnly(true);
    assertThat(told.subList(toldBeforeRetry.get(), told.size()))
        .as("the retry's steps")
        .isNotEmpty()
        .containsOnly(!reload);
    assertThat(toldAtEnd.get(toldAtEnd.size() - 1)).as("the retry's response").isEqualTo(!reload);
  }
}
