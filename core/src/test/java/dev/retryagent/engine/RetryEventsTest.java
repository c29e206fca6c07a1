package dev.retryagent.engine;

import static dev.retryagent.engine.Script.fail;
import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.PathMask;
import dev.retryagent.engine.RetryEvent.Type;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeRequest;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** What listeners are told, and that a listener can never break a call. */
class RetryEventsTest {
  private static final long MS = 1_000_000L;

  static Driver[] drivers() {
    return new Driver[] {Driver.SYNC, Driver.ASYNC};
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aRetriedCallReportsEachAttemptTheRetryAndTheEnd(Driver driver) {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503), respond(200)));

    assertThat(f.listener.types())
        .containsExactly(Type.ATTEMPT, Type.RETRY, Type.ATTEMPT, Type.CALL_COMPLETE);
    RetryEvent attempt1 = f.listener.events(Type.ATTEMPT).get(0);
    assertThat(attempt1.attempt()).isEqualTo(1);
    assertThat(attempt1.maxAttempts()).isEqualTo(3);
    RetryEvent retry = f.listener.events(Type.RETRY).get(0);
    assertThat(retry.attempt()).isEqualTo(1);
    assertThat(retry.status()).isEqualTo(503);
    assertThat(retry.outcome()).isEqualTo(Outcome.RESPONSE);
    assertThat(retry.delayNanos()).isEqualTo(100 * MS);
    assertThat(retry.reason()).isNull();
    assertThat(retry.observeOnly()).isFalse();
    assertThat(retry.route()).isEqualTo(TestPolicy.ROUTE);
    assertThat(retry.method()).isEqualTo("GET");
    assertThat(retry.scheme()).isEqualTo("http");
    assertThat(retry.host()).isEqualTo("api.example.com");
    assertThat(retry.port()).isEqualTo(80);
    assertThat(retry.path()).isEqualTo("/v1/things");
    assertThat(retry.hostAndPort()).isEqualTo("api.example.com");
    RetryEvent done = f.listener.complete();
    assertThat(done.succeeded()).isTrue();
    assertThat(done.status()).isEqualTo(200);
    assertThat(done.attempt()).isEqualTo(2);
    assertThat(done.elapsedNanos()).isEqualTo(100 * MS);
    assertThat(done.reason()).isNull();
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aCallThatGivesUpReportsWhy(Driver driver) {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    SocketException reset = new SocketException("Connection reset");
    driver.run(
        f,
        FakeRequest.get(),
        new Script(
            f.clock,
            fail(new SocketException("Connection reset")),
            fail(new SocketException("Connection reset")),
            fail(reset)));
    assertThat(f.listener.types())
        .containsExactly(
            Type.ATTEMPT,
            Type.RETRY,
            Type.ATTEMPT,
            Type.RETRY,
            Type.ATTEMPT,
            Type.GIVE_UP,
            Type.CALL_COMPLETE);
    RetryEvent gaveUp = f.listener.events(Type.GIVE_UP).get(0);
    assertThat(gaveUp.reason()).isEqualTo(GiveUpReason.ATTEMPTS);
    assertThat(gaveUp.outcome()).isEqualTo(Outcome.RESET);
    assertThat(gaveUp.error()).isSameAs(reset);
    assertThat(gaveUp.status()).isEqualTo(-1);
    assertThat(gaveUp.outcomeText()).isEqualTo("reset");
    assertThat(f.listener.complete().succeeded()).isFalse();
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.ATTEMPTS);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aBudgetRejectionIsAGiveUpWithReasonBudget(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.budget.ratio(0).minPerSecond(0);
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(502)));
    assertThat(f.listener.types()).containsExactly(Type.ATTEMPT, Type.GIVE_UP, Type.CALL_COMPLETE);
    assertThat(f.listener.events(Type.GIVE_UP).get(0).reason()).isEqualTo(GiveUpReason.BUDGET);
    assertThat(f.listener.events(Type.GIVE_UP).get(0).status()).isEqualTo(502);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aRateLimitRejectionIsReported(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(1);
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    f.listener.clear();
    driver.run(f, FakeRequest.get(), new Script(f.clock));
    assertThat(f.listener.types())
        .containsExactly(Type.RATE_LIMITED, Type.GIVE_UP, Type.CALL_COMPLETE);
    assertThat(f.listener.events(Type.RATE_LIMITED).get(0).reason())
        .isEqualTo(GiveUpReason.RATE_LIMITED);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.RATE_LIMITED);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void breakerTransitionsReachTheListenerWithTheRoute(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(1).minimumCalls(1).halfOpenCalls(1).openFor(Duration.ofSeconds(1));
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(500)));
    f.clock.advance(Duration.ofSeconds(1));
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    assertThat(f.listener.transitions())
        .containsExactly(
            CircuitTransition.CLOSED_TO_OPEN,
            CircuitTransition.OPEN_TO_HALF_OPEN,
            CircuitTransition.HALF_OPEN_TO_CLOSED);
    assertThat(f.listener.transitionRoutes()).containsOnly(TestPolicy.ROUTE);
  }

  /** Throws from every callback. */
  private static final class ThrowingListener implements RetryListener {
    final AtomicInteger calls = new AtomicInteger();

    private void boom() {
      calls.incrementAndGet();
      throw new IllegalStateException("listener bug");
    }

    @Override
    public void onAttempt(RetryEvent event) {
      boom();
    }

    @Override
    public void onRetry(RetryEvent event) {
      boom();
    }

    @Override
    public void onGiveUp(RetryEvent event) {
      boom();
    }

    @Override
    public void onCallComplete(RetryEvent event) {
      boom();
    }

    @Override
    public void onBreakerRejected(RetryEvent event) {
      boom();
    }

    @Override
    public void onRateLimited(RetryEvent event) {
      boom();
    }

    @Override
    public void onBreakerTransition(CircuitBreaker b, CircuitTransition t, String route) {
      boom();
    }
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aListenerThatThrowsNeverBreaksACall(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.breaker.countWindow(2).minimumCalls(2).failureRateThreshold(1.0);
    p.rateLimit.enabled(true).perSecond(1).burst(10);
    ThrowingListener bad = new ThrowingListener();
    EngineFixture f = EngineFixture.withListener(p.build(), bad);

    CallResult ok =
        driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503), respond(200)));
    assertThat(ok.status()).isEqualTo(200);
    CallResult opened =
        driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503), respond(503)));
    assertThat(opened.error).isInstanceOf(CircuitBreakerOpenException.class);
    CallResult rejected = driver.run(f, FakeRequest.get(), new Script(f.clock));
    assertThat(rejected.error).isInstanceOf(CircuitBreakerOpenException.class);

    assertThat(bad.calls.get()).isGreaterThan(10);
    // The listener after the broken one still hears everything.
    assertThat(f.listener.events(Type.CALL_COMPLETE)).hasSize(3);
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aListenerThatThrowsAnErrorNeverBreaksACallEither(Driver driver) {
    // In an agent a listener's dependency may be missing at run time (say a metrics library).
    RetryListener missingClass =
        new RetryListener() {
          @Override
          public void onAttempt(RetryEvent event) {
            throw new NoClassDefFoundError("io/micrometer/core/instrument/Counter");
          }

          @Override
          public void onRetry(RetryEvent event) {
            throw new AssertionError("listener assertion");
          }

          @Override
          public void onCallComplete(RetryEvent event) {
            throw new ExceptionInInitializerError("static init failed");
          }
        };
    EngineFixture f = EngineFixture.withListener(TestPolicy.create().build(), missingClass);
    CallResult r =
        driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503), respond(200)));
    assertThat(r.status()).isEqualTo(200);
    assertThat(f.listener.types())
        .containsExactly(Type.ATTEMPT, Type.RETRY, Type.ATTEMPT, Type.CALL_COMPLETE);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void eventsNeverCarryHeaderValuesOrQueries(Driver driver) {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    FakeRequest request =
        FakeRequest.get()
            .header("Authorization", "Bearer s3cr3t-t0ken")
            .header("Idempotency-Key", "key-9f8e7d");
    driver.run(f, request, new Script(f.clock, respond(503), respond(503), respond(503)));
    for (RetryEvent e : f.listener.events()) {
      assertThat(e.toString()).doesNotContain("s3cr3t").doesNotContain("key-9f8e7d");
    }
    assertThat(f.listener.events(Type.GIVE_UP).get(0).toString())
        .isEqualTo(
            "GIVE_UP GET api.example.com/v1/things attempt 3/3 outcome=503 reason=attempts"
                + " [route=test-route]");
  }

  @org.junit.jupiter.api.Test
  void toStringWritesThePathAsLogLinesDoWithoutPathParametersOrUserInfo() {
    // A listener's own log may write an event: a servlet container's ;jsessionid=... is a
    // session's credential, and Apache HttpClient 5 keeps a URI it cannot parse as the path.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    driver(f, FakeRequest.get("api.example.com", "/v1;jsessionid=canary-session/things"));
    driver(f, FakeRequest.get("api.example.com", "http://u:canary-pass@api.example.com/{x}"));

    List<String> lines = new ArrayList<>();
    for (RetryEvent e : f.listener.events()) {
      lines.add(e.toString());
    }
    assertThat(String.join("\n", lines))
        .doesNotContain("canary")
        .contains("GET api.example.com/v1/things attempt 1/3")
        .contains("http://api.example.com/{x} attempt 1/3");
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void toStringMasksThePathSegmentsTheConfigurationMasks(Driver driver) {
    // agent.redact.pathSegments masks a token in the path in every line the agent writes; an
    // application listener that logs event.toString() must not show it either.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    Policy policy = TestPolicy.create().build();
    f.engine.reconfigure(Mode.ENFORCE, masking(policy, PathMask.of(List.of("tok_[a-z0-9]+"))));
    driver.run(
        f,
        FakeRequest.get("api.example.com", "/files/tok_canary42/raw"),
        new Script(f.clock, respond(503), respond(503), respond(503)));

    List<String> lines = new ArrayList<>();
    for (RetryEvent e : f.listener.events()) {
      lines.add(e.toString());
    }
    assertThat(lines).hasSize(7);
    assertThat(String.join("\n", lines))
        .doesNotContain("canary")
        .contains("GIVE_UP GET api.example.com/files/<redacted>/raw attempt 3/3");
    // The route still matched, and listeners still see the real path.
    assertThat(f.listener.events().get(0).path()).isEqualTo("/files/tok_canary42/raw");
  }

  @org.junit.jupiter.api.Test
  void anAsyncCallsFutureNamesItsRequestAsToStringDoes() {
    // An application may log the future sendAsync gave it (a timeout's message, a debugger).
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    Policy policy = TestPolicy.create().build();
    f.engine.reconfigure(Mode.ENFORCE, masking(policy, PathMask.of(List.of("tok_[a-z0-9]+"))));
    FakeRequest request = FakeRequest.get("api.example.com", "/a;jsessionid=canary-s/tok_canary7");
    Script script = new Script(f.clock, respond(503), respond(200));
    CompletableFuture<FakeResponse> future =
        AsyncRetryLoop.execute(f.engine, f.newCall(request), script::runAsync, FakeResponse.ACCESS);

    assertThat(future.toString())
        .doesNotContain("canary")
        .startsWith("retry-agent call GET https://api.example.com:443/a/<redacted> ");
    f.scheduler.runUntilIdle();
    assertThat(future).isDone();
  }

  /** {@code policy} for every request, with {@code mask} as the configuration's path mask. */
  private static PolicyResolver masking(Policy policy, PathMask mask) {
    return new PolicyResolver() {
      @Override
      public Policy resolve(String method, String host, int port, String path) {
        return policy;
      }

      @Override
      public PathMask pathMask() {
        return mask;
      }
    };
  }

  private static void driver(EngineFixture f, FakeRequest request) {
    Driver.SYNC.run(f, request, new Script(f.clock, respond(503), respond(200)));
  }

  @org.junit.jupiter.api.Test
  void aRequestTheClientSentAgainOnItsOwnIsReportedAsAnAttempt() throws Exception {
    // Issue 14's soak: HttpClient 5 resent a POST after a 503 by itself; the server counted two
    // requests and the Attempts counter one.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.post());
    call.acquireBreaker();
    call.startAttempt();
    call.clientRepeated(503);
    call.onResponse(503, null);

    assertThat(f.listener.types())
        .containsExactly(Type.ATTEMPT, Type.ATTEMPT, Type.GIVE_UP, Type.CALL_COMPLETE);
    assertThat(f.listener.events(Type.ATTEMPT).get(1).attempt()).isEqualTo(2);
  }
}
