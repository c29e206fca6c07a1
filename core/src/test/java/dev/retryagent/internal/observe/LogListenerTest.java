package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import dev.retryagent.config.LogLevel;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeRequest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class LogListenerTest {
  private final List<String> lines = new CopyOnWriteArrayList<>();

  private LogListener log(LogLevel level) {
    return new LogListener(level, lines::add, null);
  }

  @Test
  void aRetryAndTheSuccessAfterItReadAsOneLineEach() {
    Rig rig = new Rig(Rig.policy("llm"), log(LogLevel.INFO));

    rig.call(FakeRequest.get("api.example.com", "/v1/summarise"), 503, 200);

    assertThat(lines)
        .containsExactly(
            "retry-agent: GET api.example.com/v1/summarise attempt 1 failed (503), retrying in"
                + " 117ms [route=llm]",
            "retry-agent: GET api.example.com/v1/summarise succeeded (200) on attempt 2 after"
                + " 117ms [route=llm]");
  }

  @Test
  void aPostWithoutIdempotencyKeyGivesUpAndSaysWhy() {
    Policy p = Rig.policy("payments", b -> b.unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY));
    Rig rig = new Rig(p, log(LogLevel.INFO));

    rig.call(FakeRequest.post("pay.example.com", "/v1/charges"), 503);

    assertThat(lines)
        .containsExactly(
            "retry-agent: POST pay.example.com/v1/charges gave up after 1 attempt (503): not"
                + " idempotent (POST without Idempotency-Key) [route=payments]");
  }

  @Test
  void theDefaultUnsafeMethodRuleIsExplainedToo() {
    Rig rig = new Rig(Rig.policy("payments"), log(LogLevel.WARN));

    rig.call(FakeRequest.post("pay.example.com", "/v1/charges"), 503);

    assertThat(lines)
        .containsExactly(
            "retry-agent: POST pay.example.com/v1/charges gave up after 1 attempt (503): not"
                + " idempotent (POST may have reached the server; unsafeMethods: if-not-sent)"
                + " [route=payments]");
  }

  @Test
  void observeModeSaysWhatItWouldDo() {
    Rig rig = new Rig(Mode.OBSERVE, Rig.policy("llm"), log(LogLevel.INFO));

    rig.call(FakeRequest.get("api.example.com", "/v1/summarise"), 503);

    assertThat(lines)
        .containsExactly(
            "retry-agent: GET api.example.com/v1/summarise attempt 1 failed (503), would retry in"
                + " 117ms [route=llm, observe]");
  }

  @Test
  void aCallTheApplicationsOwnBodyEndedSaysSoNotThatTheCallerCancelled() {
    // It said "gave up after 2 attempts (cancelled): cancelled by the caller", which sent an
    // operator looking for a cancel nobody made. At info, as a cancel: the application has the
    // exception in hand, and the host did nothing wrong.
    Rig warn = new Rig(Rig.policy("upload"), log(LogLevel.WARN));
    warn.call(FakeRequest.get("api.example.com", "/v1/w"), new Rig.Applications(new IOException()));
    assertThat(lines).isEmpty();
    Rig rig = new Rig(Rig.policy("upload"), log(LogLevel.INFO));

    Object thrown =
        rig.call(
            FakeRequest.get("api.example.com", "/v1/upload"),
            503,
            new Rig.Applications(new IOException("disk")));

    assertThat((Throwable) thrown).isInstanceOf(IOException.class).hasMessage("disk");
    assertThat(lines)
        .containsExactly(
            "retry-agent: GET api.example.com/v1/upload attempt 1 failed (503), retrying in"
                + " 117ms [route=upload]",
            "retry-agent: GET api.example.com/v1/upload gave up after 2 attempts (IOException:"
                + " disk): the application's own code failed the request, not the host"
                + " [route=upload]");
  }

  @Test
  void aCallWhoseClientHadNoPooledConnectionInTimeSaysSoNotThatTheCallerCancelled() {
    // It said "gave up after 1 attempt (cancelled): cancelled by the caller", at info, for a pool
    // the application's own calls held: nobody cancelled anything. At warn, as a rate-limit
    // rejection (no permit within maxWait): a limit of this process, not the host, that an
    // operator sizes.
    Rig rig = new Rig(Rig.policy("search"), log(LogLevel.WARN));

    rig.call(
        FakeRequest.get("api.example.com", "/v1/q"),
        new org.apache.http.conn.ConnectionPoolTimeoutException(
            "Timeout waiting for connection from pool"));

    assertThat(lines)
        .containsExactly(
            "retry-agent: GET api.example.com/v1/q gave up after 1 attempt (pool timeout:"
                + " ConnectionPoolTimeoutException: Timeout waiting for connection from pool): no"
                + " connection from the client's own pool within its connectionRequestTimeout"
                + " (nothing was sent) [route=search]");
  }

  @Test
  void runningOutOfAttemptsNamesTheLimit() {
    Rig rig = new Rig(Rig.policy("llm", b -> b.maxAttempts(2)), log(LogLevel.WARN));

    rig.call(FakeRequest.get("api.example.com", "/v1/x"), 503, 503);

    assertThat(lines)
        .containsExactly(
            "retry-agent: GET api.example.com/v1/x gave up after 2 attempts (503): no attempts"
                + " left (maxAttempts 2) [route=llm]");
  }

  @Test
  void deadlineBudgetAndRetryAfterGiveUpsNameTheirLimit() {
    Rig deadline =
        new Rig(
            Rig.policy(
                "a", b -> b.deadline(Duration.ofMillis(100)).retryAfterMax(Duration.ofMillis(100))),
            log(LogLevel.WARN));
    deadline.call(FakeRequest.get("h.example", "/d"), 503);
    Rig budget = Rig.budgetSpent("b", log(LogLevel.WARN));
    budget.call(FakeRequest.get("h.example", "/b"), 503);
    Rig retryAfter = new Rig(Rig.policy("c"), log(LogLevel.WARN));
    retryAfter.call(FakeRequest.get("h.example", "/c"), new Rig.Resp(503, "120"));

    assertThat(lines)
        .containsExactly(
            "retry-agent: GET h.example/d gave up after 1 attempt (503): the deadline (100ms)"
                + " would pass before the next attempt [route=a]",
            "retry-agent: GET h.example/b gave up after 1 attempt (503): the retry budget for"
                + " https://h.example:443 is spent [route=b]",
            "retry-agent: GET h.example/c gave up after 1 attempt (503): Retry-After asks for"
                + " longer than retryAfter.max (30s) [route=c]");
  }

  @Test
  void aTransportFailureShowsItsKindAndASanitisedMessage() {
    Rig rig = new Rig(Rig.policy("llm"), log(LogLevel.INFO));

    rig.call(
        FakeRequest.of("GET", "http", "localhost", 8080, "/v1/x"),
        new SocketException("Connection reset"),
        new ConnectException("Connection refused"),
        200);

    assertThat(lines.get(0))
        .isEqualTo(
            "retry-agent: GET localhost:8080/v1/x attempt 1 failed (reset: SocketException:"
                + " Connection reset), retrying in 117ms [route=llm]");
    assertThat(lines.get(1))
        .isEqualTo(
            "retry-agent: GET localhost:8080/v1/x attempt 2 failed (connect failure:"
                + " ConnectException: Connection refused), retrying in 117ms [route=llm]");
  }

  @Test
  void hostileExceptionTextPathAndRouteNeverLeakSecretsOrBreakTheLine() {
    Policy p =
        Rig.policy(
            "llm\nretry-agent: FORGED",
            b -> b.maxAttempts(2).idempotencyKeyHeader("X-Dedupe").methods(List.of("GET")));
    Rig rig = new Rig(p, log(LogLevel.DEBUG));
    IOException hostile =
        new IOException(
            "unexpected end of stream on http://user:pw-SECRET1@api.example.com/v1/x?token=SECRET2"
                + "&sig=SECRET3#frag-SECRET4\r\nAuthorization: Bearer SECRET5\nCookie: s=SECRET6;"
                + " t=SECRET7\nProxy-Authorization: Basic SECRET8\nX-Dedupe: SECRET9\n"
                + "Set-Cookie: SECRET10\nIdempotency-Key: SECRET11 and /relative?q=SECRET12\n"
                + "{\"Cookie\":\"SECRET15\"}\n{\"Authorization\": \"Token SECRET16\"}");

    rig.call(
        FakeRequest.get("api.example.com", "/v1/x?api_key=SECRET13#SECRET14"), hostile, hostile);

    assertThat(lines).isNotEmpty();
    for (String line : lines) {
      assertThat(line).doesNotContain("SECRET").doesNotContain("\n").doesNotContain("\r");
      assertThat(line).startsWith("retry-agent: GET api.example.com/v1/x ");
    }
    assertThat(lines)
        .anySatisfy(
            l ->
                assertThat(l)
                    .contains(
                        "(reset: IOException: unexpected end of stream on"
                            + " http://api.example.com/v1/x "));
  }

  @Test
  void theLevelFiltersLines() {
    Policy p = Rig.policy("llm", b -> b.maxAttempts(2));
    List<String> debug = new CopyOnWriteArrayList<>();
    List<String> warn = new CopyOnWriteArrayList<>();
    List<String> error = new CopyOnWriteArrayList<>();
    Rig rig =
        new Rig(
            p,
            new LogListener(LogLevel.DEBUG, debug::add, null),
            new LogListener(LogLevel.WARN, warn::add, null),
            new LogListener(LogLevel.ERROR, error::add, null));

    rig.call(FakeRequest.get("h.example", "/x"), 503, 503);

    assertThat(debug)
        .containsExactly(
            "retry-agent: GET h.example/x attempt 1 of 2 starting [route=llm]",
            "retry-agent: GET h.example/x attempt 1 failed (503), retrying in 117ms [route=llm]",
            "retry-agent: GET h.example/x attempt 2 of 2 starting [route=llm]",
            "retry-agent: GET h.example/x gave up after 2 attempts (503): no attempts left"
                + " (maxAttempts 2) [route=llm]",
            "retry-agent: GET h.example/x failed (503) on attempt 2 after 117ms [route=llm]");
    assertThat(warn)
        .containsExactly(
            "retry-agent: GET h.example/x gave up after 2 attempts (503): no attempts left"
                + " (maxAttempts 2) [route=llm]");
    assertThat(error).isEmpty();
  }

  @Test
  void aNewLevelAppliesToTheNextLines() {
    LogListener log = log(LogLevel.WARN);
    Rig rig = new Rig(Rig.policy("llm"), log);
    rig.call(FakeRequest.get("h.example", "/x"), 503, 200);
    assertThat(lines).isEmpty();

    log.setLevel(LogLevel.INFO);
    rig.call(FakeRequest.get("h.example", "/x"), 503, 200);

    assertThat(lines).hasSize(2).first().asString().contains("retrying in 117ms");
  }

  @Test
  void breakerTransitionsAndFailingFastAreOneLineEach() {
    Rig rig =
        new Rig(Rig.breakerPolicy("llm", CircuitBreakerPolicy.Scope.HOST), log(LogLevel.INFO));
    FakeRequest r = FakeRequest.get("api.example.com", "/v1/x");

    rig.call(r, 503);
    rig.call(r, 503);
    rig.call(r, 200);
    rig.call(r, 503);
    rig.call(r);
    rig.time.advance(Duration.ofSeconds(30).toNanos());
    rig.call(r, 200);

    List<String> breakerLines =
        lines.stream().filter(l -> l.contains("circuit breaker")).collect(Collectors.toList());
    assertThat(breakerLines)
        .containsExactly(
            "retry-agent: circuit breaker https://api.example.com:443 opened (failure rate 75%"
                + " over 4 calls); next trial in 30s",
            "retry-agent: GET api.example.com/v1/x failed fast: circuit breaker"
                + " https://api.example.com:443 is open; next trial in 30s [route=llm]",
            "retry-agent: circuit breaker https://api.example.com:443 half-open: letting 1 trial"
                + " call through",
            "retry-agent: circuit breaker https://api.example.com:443 closed (1 trial call"
                + " succeeded)");
  }

  @Test
  void aHostWrittenInCapitalsOrAnIpv6LiteralWithoutBracketsIsNamedByItsKeyInEveryLine() {
    // One host, one key: the breaker's lines, the metrics' host label and the JMX name write it
    // lower case, an IPv6 literal in brackets (TargetKey). The lines of a retry the breaker, the
    // budget or the rate limit refused wrote the host as the application did ("API.Example.com",
    // OkHttp's "::1" without brackets): an operator who looked up the key they name found nothing.
    // The request the line names brackets an IPv6 literal too ("GET ::1:8080/b" was ambiguous),
    // and names the host by the key's spelling: one name per host in every line.
    RetryMetrics metrics = new RetryMetrics();
    Rig breaker =
        new Rig(
            Rig.policy(
                "llm",
                b -> b.maxAttempts(3),
                CircuitBreakerPolicy.builder()
                    .countWindow(2)
                    .minimumCalls(1)
                    .failureRateThreshold(0.5)
                    .openFor(Duration.ofSeconds(30))
                    .build(),
                BudgetPolicy.defaults(),
                RateLimitPolicy.defaults()),
            log(LogLevel.INFO),
            metrics);
    breaker.call(FakeRequest.get("API.Example.com", "/v1/x"), 503, 200);
    Rig budget = Rig.budgetSpent("b", log(LogLevel.WARN));
    budget.call(FakeRequest.of("GET", "http", "::1", 8080, "/b"), 503);
    Rig limited = new Rig(Rig.onePermitASecond("c"), log(LogLevel.INFO));
    limited.call(FakeRequest.get("API.Example.com", "/c"), 200);
    Object refused = limited.call(FakeRequest.get("Api.Example.COM", "/c"));

    // The application's RateLimitedException names the key too, as CircuitBreakerOpenException.
    assertThat(((Exception) refused).getMessage()).contains("for https://api.example.com:443:");
    assertThat(metrics.hosts()).containsExactly("https://api.example.com:443");
    assertThat(lines)
        .containsExactly(
            "retry-agent: circuit breaker https://api.example.com:443 opened (failure rate 100%"
                + " over 1 call); next trial in 30s",
            "retry-agent: GET api.example.com/v1/x gave up after 1 attempt (503): circuit breaker"
                + " https://api.example.com:443 is open [route=llm]",
            "retry-agent: GET [::1]:8080/b gave up after 1 attempt (503): the retry budget for"
                + " http://[::1]:8080 is spent [route=b]",
            "retry-agent: GET api.example.com/c rejected: no rate-limit permit for"
                + " https://api.example.com:443 within maxWait 0ms [route=c]");
  }

  @Test
  void aHostLongerThanADnsNameIsCutInEveryLine() {
    // The metrics count such a host as "other" (RetryMetrics.MAX_HOST_CHARS); the lines wrote it
    // whole: a 64 KB host from a URL an attacker chose, in every retry, give-up and breaker line.
    String host = "a".repeat(250) + ".example"; // 258 characters
    String cut = host.substring(0, 253) + "...";
    Rig breaker =
        new Rig(
            Rig.policy(
                "llm",
                b -> b.maxAttempts(3),
                CircuitBreakerPolicy.builder()
                    .countWindow(2)
                    .minimumCalls(1)
                    .failureRateThreshold(0.5)
                    .openFor(Duration.ofSeconds(30))
                    .build(),
                BudgetPolicy.defaults(),
                RateLimitPolicy.defaults()),
            log(LogLevel.INFO));
    breaker.call(FakeRequest.get(host, "/v1/x"), 503, 200);
    Rig budget = Rig.budgetSpent("b", log(LogLevel.WARN));
    budget.call(FakeRequest.of("GET", "http", host, 8080, "/b"), 503);
    Rig plain = new Rig(Rig.policy("c"), log(LogLevel.INFO));
    plain.call(FakeRequest.get("x" + "y".repeat(65_535), "/c"), 503, 200);

    assertThat(lines)
        .containsExactly(
            "retry-agent: circuit breaker https://"
                + cut
                + ":443 opened (failure rate 100%"
                + " over 1 call); next trial in 30s",
            "retry-agent: GET "
                + cut
                + "/v1/x gave up after 1 attempt (503): circuit breaker"
                + " https://"
                + cut
                + ":443 is open [route=llm]",
            "retry-agent: GET "
                + cut
                + ":8080/b gave up after 1 attempt (503): the retry budget"
                + " for http://"
                + cut
                + ":8080 is spent [route=b]",
            "retry-agent: GET x"
                + "y".repeat(252)
                + ".../c attempt 1 failed (503), retrying in"
                + " 117ms [route=c]",
            "retry-agent: GET x"
                + "y".repeat(252)
                + ".../c succeeded (200) on attempt 2 after"
                + " 117ms [route=c]");
  }

  @Test
  void observeModeWordsBreakerChangesAsWhatWouldHappen() {
    Rig rig =
        new Rig(
            Mode.OBSERVE,
            Rig.breakerPolicy("llm", CircuitBreakerPolicy.Scope.HOST),
            new LogListener(LogLevel.INFO, lines::add, () -> true));
    FakeRequest r = FakeRequest.get("api.example.com", "/v1/x");

    for (int i = 0; i < 4; i++) {
      rig.call(r, 503);
    }
    rig.call(r, 200);

    assertThat(lines)
        .contains(
            "retry-agent: circuit breaker https://api.example.com:443 would open (failure rate"
                + " 100% over 4 calls); next trial in 30s [observe]",
            "retry-agent: GET api.example.com/v1/x would fail fast: circuit breaker"
                + " https://api.example.com:443 is open; next trial in 30s [route=llm, observe]");
  }

  @Test
  void aRateLimitRejectionIsOneWarning() {
    Rig rig = new Rig(Rig.onePermitASecond("llm"), log(LogLevel.INFO));

    rig.call(FakeRequest.get("api.example.com", "/v1/x"), 200);
    rig.call(FakeRequest.get("api.example.com", "/v1/x"));

    assertThat(lines)
        .containsExactly(
            "retry-agent: GET api.example.com/v1/x rejected: no rate-limit permit for"
                + " https://api.example.com:443 within maxWait 0ms [route=llm]");
  }

  @Test
  void atDebugACallRejectedBeforeAnyAttemptSaysSo() {
    Rig rig =
        new Rig(Rig.breakerPolicy("llm", CircuitBreakerPolicy.Scope.HOST), log(LogLevel.DEBUG));
    FakeRequest r = FakeRequest.get("api.example.com", "/v1/x");
    for (int i = 0; i < 4; i++) {
      rig.call(r, 503);
    }
    lines.clear();

    rig.call(r);

    assertThat(lines)
        .containsExactly(
            "retry-agent: GET api.example.com/v1/x failed fast: circuit breaker"
                + " https://api.example.com:443 is open; next trial in 30s [route=llm]",
            "retry-agent: GET api.example.com/v1/x failed before any attempt was sent (circuit-open)"
                + " [route=llm]");
  }

  @Test
  void theDefaultSinkIsStderrAndNeverStdout() {
    PrintStream out = System.out;
    PrintStream err = System.err;
    ByteArrayOutputStream capturedOut = new ByteArrayOutputStream();
    ByteArrayOutputStream capturedErr = new ByteArrayOutputStream();
    try {
      System.setOut(new PrintStream(capturedOut, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(capturedErr, true, StandardCharsets.UTF_8));
      Rig rig = new Rig(Rig.policy("llm"), LogListener.toStderr(LogLevel.DEBUG, null));
      rig.call(FakeRequest.get("api.example.com", "/v1/x"), 503, 200);
    } finally {
      System.setOut(out);
      System.setErr(err);
    }

    assertThat(capturedOut.toString(StandardCharsets.UTF_8)).isEmpty();
    assertThat(capturedErr.toString(StandardCharsets.UTF_8))
        .contains("retry-agent: GET api.example.com/v1/x attempt 1 failed (503), retrying in");
  }

  @Test
  void aThrowingSinkNeverReachesTheCaller() {
    List<RetryEvent> events = new CopyOnWriteArrayList<>();
    Rig rig =
        new Rig(
            Rig.policy("llm", b -> b.maxAttempts(2)),
            new RetryListener() {
              @Override
              public void onRetry(RetryEvent e) {
                events.add(e);
              }

              @Override
              public void onGiveUp(RetryEvent e) {
                events.add(e);
              }
            });
    rig.call(FakeRequest.get("h.example", "/x"), 503, 503);
    LogListener broken =
        new LogListener(
            LogLevel.DEBUG,
            l -> {
              throw new IllegalStateException("sink is broken");
            },
            null);
    PrintStream err = System.err;
    ByteArrayOutputStream capturedErr = new ByteArrayOutputStream();
    try {
      System.setErr(new PrintStream(capturedErr, true, StandardCharsets.UTF_8));
      assertThat(events).hasSize(2);
      assertThatCode(
              () -> {
                broken.onRetry(events.get(0));
                broken.onGiveUp(events.get(1));
              })
          .doesNotThrowAnyException();
    } finally {
      System.setErr(err);
    }
    assertThat(capturedErr.toString(StandardCharsets.UTF_8).lines())
        .containsExactly(
            "retry-agent: could not write a log line (java.lang.IllegalStateException); further"
                + " failures are not reported");
  }
}
