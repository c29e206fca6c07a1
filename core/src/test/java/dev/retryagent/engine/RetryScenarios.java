package dev.retryagent.engine;

import static dev.retryagent.engine.Script.fail;
import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Jitter;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeRequest;
import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Each scenario of the engine, run once through {@link SyncRetryLoop} and once through {@link
 * AsyncRetryLoop} by the two subclasses. Time is the fake clock's: a sync wait is a recorded sleep,
 * an async wait a task the manual scheduler runs when the clock reaches it.
 */
abstract class RetryScenarios {
  static final long S = 1_000_000_000L;
  static final long MS = 1_000_000L;

  abstract Driver driver();

  EngineFixture f;
  Script script;

  CallResult run(TestPolicy policy, RequestInfo request, Script.Step... steps) {
    if (f == null) {
      f = EngineFixture.of(policy);
    }
    script = new Script(f.clock, steps);
    CallResult result = driver().run(f, request, script);
    assertEveryDiscardedResponseWasDiscardedOnceAndTheReturnedOneNever(result);
    return result;
  }

  private void assertEveryDiscardedResponseWasDiscardedOnceAndTheReturnedOneNever(CallResult r) {
    for (FakeResponse served : script.responsesServed()) {
      if (served == r.response) {
        assertThat(served.discards.get()).as("the response the caller got").isZero();
      } else {
        assertThat(served.discards.get()).as("discards of %s", served).isEqualTo(1);
      }
    }
  }

  /** Time from the start of one attempt to the start of the next. */
  long gapBefore(int attempt) {
    List<Script.Attempt> a = script.attempts();
    return a.get(attempt - 1).startNanos - a.get(attempt - 2).startNanos;
  }

  @Test
  void twoServiceUnavailablesThenOkReturnsOkAfterThreeAttempts() {
    CallResult r =
        run(TestPolicy.create(), FakeRequest.get(), respond(503), respond(503), respond(200));
    assertThat(r.status()).isEqualTo(200);
    assertThat(script.attemptCount()).isEqualTo(3);
    assertThat(gapBefore(2)).isEqualTo(100 * MS);
    assertThat(gapBefore(3)).isEqualTo(200 * MS);
    assertThat(f.listener.complete().succeeded()).isTrue();
    assertThat(f.listener.complete().attempt()).isEqualTo(3);
  }

  @Test
  void aPostThatGotAResponseIsNotRepeatedWithoutAKey() {
    CallResult r = run(TestPolicy.create(), FakeRequest.post(), respond(503), respond(200));
    assertThat(r.status()).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
  }

  @Test
  void aPostWithAnIdempotencyKeyIsRepeatedUnderIfIdempotencyKey() {
    TestPolicy p = TestPolicy.create();
    p.retry.unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY);
    FakeRequest post = FakeRequest.post().header("Idempotency-Key", "5d1c0f2e");
    CallResult r = run(p, post, respond(503), respond(200));
    assertThat(r.status()).isEqualTo(200);
    assertThat(script.attemptCount()).isEqualTo(2);
  }

  @Test
  void aPostWithoutTheKeyIsNotRepeatedUnderIfIdempotencyKey() {
    TestPolicy p = TestPolicy.create();
    p.retry.unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY);
    CallResult r = run(p, FakeRequest.post(), respond(503), respond(200));
    assertThat(r.status()).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(1);
  }

  @Test
  void aPostIsRepeatedAfterAConnectFailure() {
    ConnectException refused = new ConnectException("Connection refused");
    CallResult r = run(TestPolicy.create(), FakeRequest.post(), fail(refused), respond(201));
    assertThat(r.status()).isEqualTo(201);
    assertThat(script.attemptCount()).isEqualTo(2);
  }

  @Test
  void aPostIsNotRepeatedAfterAReset() {
    SocketException reset = new SocketException("Connection reset");
    CallResult r = run(TestPolicy.create(), FakeRequest.post(), fail(reset), respond(201));
    assertThat(r.error).isSameAs(reset);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
  }

  @Test
  void notFoundIsNotRetried() {
    CallResult r = run(TestPolicy.create(), FakeRequest.get(), respond(404), respond(200));
    assertThat(r.status()).isEqualTo(404);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isNull();
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP)).isEmpty();
  }

  @Test
  void anInternalServerErrorIsNotRetriedByDefaultButReportedAsAFailure() {
    CallResult r = run(TestPolicy.create(), FakeRequest.get(), respond(500), respond(200));
    assertThat(r.status()).isEqualTo(500);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.NON_RETRYABLE);
    assertThat(f.listener.complete().succeeded()).isFalse();
  }

  @Test
  void tooManyRequestsWithRetryAfterOneSecondWaitsAtLeastASecond() {
    CallResult r = run(TestPolicy.create(), FakeRequest.get(), respond(429, "1"), respond(200));
    assertThat(r.status()).isEqualTo(200);
    assertThat(gapBefore(2)).isEqualTo(1 * S); // max(100 ms backoff, 1 s)
  }

  @Test
  void retryAfterAsAnHttpDateIsWaitedFor() {
    // The fake wall clock starts at 2024-03-10T12:00:00Z.
    CallResult r =
        run(
            TestPolicy.create(),
            FakeRequest.get(),
            respond(503, "Sun, 10 Mar 2024 12:00:03 GMT"),
            respond(200));
    assertThat(r.status()).isEqualTo(200);
    assertThat(gapBefore(2)).isEqualTo(3 * S);
  }

  @Test
  void aShortRetryAfterDoesNotShortenTheBackoff() {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 1.0, Duration.ofSeconds(2));
    CallResult r = run(p, FakeRequest.get(), respond(503, "1"), respond(200));
    assertThat(r.status()).isEqualTo(200);
    assertThat(gapBefore(2)).isEqualTo(2 * S);
  }

  @Test
  void aRetryAfterLongerThanRetryAfterMaxReturnsTheResponseAtOnce() {
    CallResult r = run(TestPolicy.create(), FakeRequest.get(), respond(429, "120"), respond(200));
    assertThat(r.status()).isEqualTo(429);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.clock.elapsed()).as("no time spent waiting").isZero();
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.RETRY_AFTER_TOO_LONG);
  }

  @Test
  void aRetryAfterOfExactlyRetryAfterMaxIsWaitedForAndALongerOneIsNot() {
    // retryAfter.max: "a longer Retry-After is not waited for"; one just as long is.
    TestPolicy p = TestPolicy.create();
    p.retry.retryAfterMax(Duration.ofSeconds(2));
    CallResult waited = run(p, FakeRequest.get(), respond(503, "2"), respond(200));
    assertThat(waited.status()).isEqualTo(200);
    assertThat(gapBefore(2)).isEqualTo(2 * S);

    f.listener.clear();
    CallResult returned = run(p, FakeRequest.get(), respond(503, "3"), respond(200));
    assertThat(returned.status()).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.RETRY_AFTER_TOO_LONG);
  }

  @Test
  void aRetryAfterMaxOfZeroWaitsForNoRetryAfterButARetryAfterOfZero() {
    TestPolicy p = TestPolicy.create();
    p.retry.retryAfterMax(Duration.ZERO);
    CallResult now = run(p, FakeRequest.get(), respond(503, "0"), respond(200));
    assertThat(now.status()).isEqualTo(200);
    assertThat(gapBefore(2)).as("the backoff alone").isEqualTo(100 * MS);

    f.listener.clear();
    CallResult later = run(p, FakeRequest.get(), respond(429, "1"), respond(200));
    assertThat(later.status()).isEqualTo(429);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.RETRY_AFTER_TOO_LONG);
  }

  @Test
  void aMalformedRetryAfterFallsBackToTheBackoff() {
    CallResult r = run(TestPolicy.create(), FakeRequest.get(), respond(503, "soon"), respond(200));
    assertThat(r.status()).isEqualTo(200);
    assertThat(gapBefore(2)).isEqualTo(100 * MS);
  }

  @Test
  void retryAfterIsIgnoredWhenDisabled() {
    TestPolicy p = TestPolicy.create();
    p.retry.retryAfterEnabled(false);
    CallResult r = run(p, FakeRequest.get(), respond(429, "120"), respond(200));
    assertThat(r.status()).isEqualTo(200);
    assertThat(gapBefore(2)).isEqualTo(100 * MS);
  }

  @Test
  void aResetIsRetried() {
    CallResult r =
        run(
            TestPolicy.create(),
            FakeRequest.get(),
            fail(new SocketException("Connection reset")),
            respond(200));
    assertThat(r.status()).isEqualTo(200);
    assertThat(script.attemptCount()).isEqualTo(2);
  }

  @Test
  void aTimeoutIsRetried() {
    CallResult r =
        run(
            TestPolicy.create(),
            FakeRequest.get(),
            fail(new HttpTimeoutException("request timed out")),
            respond(200));
    assertThat(r.status()).isEqualTo(200);
  }

  @Test
  void anUnknownHostIsNotRetried() {
    IOException unknown = new java.net.UnknownHostException("no.such.host");
    CallResult r = run(TestPolicy.create(), FakeRequest.get(), fail(unknown), respond(200));
    assertThat(r.error).isSameAs(unknown);
    assertThat(script.attemptCount()).isEqualTo(1);
  }

  @Test
  void theLastFailureReachesTheCallerUnchanged() {
    SocketException last = new SocketException("Connection reset");
    CallResult r =
        run(
            TestPolicy.create(),
            FakeRequest.get(),
            fail(new SocketException("Connection reset")),
            fail(new SocketException("Connection reset")),
            fail(last));
    assertThat(r.error).isSameAs(last);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.ATTEMPTS);
  }

  @Test
  void theLastFailureCarriesTheEarlierOnesAsSuppressedInOrder() {
    SocketException first = new SocketException("Connection reset");
    ConnectException second = new ConnectException("Connection refused");
    HttpTimeoutException last = new HttpTimeoutException("request timed out");
    CallResult r =
        run(TestPolicy.create(), FakeRequest.get(), fail(first), fail(second), fail(last));
    assertThat(r.error).isSameAs(last).hasMessage("request timed out");
    assertThat(r.error.getSuppressed()).containsExactly(first, second);
    assertThat(first.getSuppressed()).isEmpty();
    assertThat(second.getSuppressed()).isEmpty();
  }

  @Test
  void onlyFailuresAreCarriedNotTheResponsesBetweenThem() {
    SocketException first = new SocketException("Connection reset");
    SocketException last = new SocketException("Connection reset");
    CallResult r =
        run(TestPolicy.create(), FakeRequest.get(), fail(first), respond(503), fail(last));
    assertThat(r.error).isSameAs(last);
    assertThat(r.error.getSuppressed()).containsExactly(first);
  }

  @Test
  void aFailureEndingTheFirstAttemptCarriesNothing() {
    SocketException reset = new SocketException("Connection reset");
    CallResult r = run(TestPolicy.create(), FakeRequest.post(), fail(reset), respond(200));
    assertThat(r.error).isSameAs(reset);
    assertThat(reset.getSuppressed()).isEmpty();
  }

  @Test
  void aClientThatThrowsOneSharedInstanceNeverGetsItAsItsOwnSuppressed() {
    // addSuppressed(this) would throw IllegalArgumentException and lose the failure.
    SocketException shared = new SocketException("Connection reset");
    CallResult r =
        run(TestPolicy.create(), FakeRequest.get(), fail(shared), fail(shared), fail(shared));
    assertThat(r.error).isSameAs(shared);
    assertThat(shared.getSuppressed()).isEmpty();
  }

  @Test
  void theBreakerExceptionThatEndsACallCarriesEveryFailureBeforeIt() {
    TestPolicy p = smallBreaker();
    p.retry.maxAttempts(3);
    SocketException first = new SocketException("Connection reset");
    SocketException second = new SocketException("Connection reset");
    CallResult r = run(p, FakeRequest.get(), fail(first), fail(second), respond(200));
    assertThat(r.error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(r.error.getSuppressed()).containsExactly(first, second);
  }

  @Test
  void alwaysUnavailableMakesExactlyMaxAttempts() {
    CallResult r =
        run(TestPolicy.create(), FakeRequest.get(), respond(503), respond(503), respond(503));
    assertThat(r.status()).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(3);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.ATTEMPTS);
  }

  @Test
  void maxAttemptsFiveMakesFiveAttempts() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(5);
    Script.Step[] steps = new Script.Step[5];
    for (int i = 0; i < 5; i++) {
      steps[i] = respond(503);
    }
    CallResult r = run(p, FakeRequest.get(), steps);
    assertThat(r.status()).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(5);
  }

  @Test
  void maxAttemptsOneNeverRetries() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    CallResult r = run(p, FakeRequest.get(), respond(503));
    assertThat(r.status()).isEqualTo(503);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.ATTEMPTS);
  }

  @Test
  void disabledRetriesPassTheFailureThrough() {
    TestPolicy p = TestPolicy.create();
    p.retry.enabled(false);
    CallResult r = run(p, FakeRequest.get(), respond(503));
    assertThat(r.status()).isEqualTo(503);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.RETRY_DISABLED);
  }

  @Test
  void theAttemptNumberIsPassedToEachAttempt() {
    run(TestPolicy.create(), FakeRequest.get(), respond(503), respond(503), respond(200));
    assertThat(script.attempts()).extracting(a -> a.number).containsExactly(1, 2, 3);
  }

  @Test
  void jitterComesFromTheInjectedRandomness() {
    TestPolicy p = TestPolicy.create();
    p.retry.backoff(BackoffPolicy.builder().jitter(Jitter.FULL).build());
    run(p, FakeRequest.get(), respond(503), respond(503), respond(200));
    // ScriptedRandom gives 0.5: half of 100 ms, then half of 200 ms.
    assertThat(gapBefore(2)).isEqualTo(50 * MS);
    assertThat(gapBefore(3)).isEqualTo(100 * MS);
    assertThat(f.random.drawn()).isEqualTo(2);
  }

  @Test
  void eachJitterIsItsFormulaOfTheDelaysTheCallComputes() {
    // ScriptedRandom gives 0.5; the delays before jitter are 100, 200 and 400 ms.
    Jitter[] kinds = {Jitter.EQUAL, Jitter.PROPORTIONAL, Jitter.DECORRELATED};
    long[][] gapsMs = {
      {75, 150, 300}, // d/2 + U(0, d/2)
      {110, 220, 440}, // d + U(0, jitterFactor x d), jitterFactor 0.2
      // min(max, U(initial, 3 x previous)): U(100, 300), then U(100, 600) after 200, U(100, 1050)
      {200, 350, 575}
    };
    for (int k = 0; k < kinds.length; k++) {
      f = null;
      TestPolicy p = TestPolicy.create();
      p.retry.maxAttempts(4).backoff(BackoffPolicy.builder().jitter(kinds[k]).build());
      run(p, FakeRequest.get(), respond(503), respond(503), respond(503), respond(200));
      for (int retry = 1; retry <= 3; retry++) {
        assertThat(gapBefore(retry + 1))
            .as("%s before retry %d", kinds[k], retry)
            .isEqualTo(gapsMs[k][retry - 1] * MS);
      }
    }
  }

  // --- deadline

  @Test
  void theDeadlineCutsRetries() {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofMillis(400), 1.0, Duration.ofMillis(400));
    p.retry.maxAttempts(10);
    p.deadline(Duration.ofSeconds(1));
    CallResult r =
        run(p, FakeRequest.get(), respond(503), respond(503), respond(503), respond(503));
    // Attempts at 0, 0.4 s, 0.8 s; the next could only start at 1.2 s.
    assertThat(r.status()).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(3);
    assertThat(f.clock.elapsed()).isEqualTo(800 * MS);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.DEADLINE);
  }

  @Test
  void aRetryThatWouldStartExactlyAtTheDeadlineIsNotMade() {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofMillis(500), 1.0, Duration.ofMillis(500));
    p.retry.maxAttempts(10);
    p.deadline(Duration.ofSeconds(1));
    run(p, FakeRequest.get(), respond(503), respond(503), respond(503));
    assertThat(script.attemptCount()).isEqualTo(2);
  }

  /** Waits end {@code nanos} late: the sync loop's sleeps and the async loop's scheduled tasks. */
  EngineFixture lateBy(TestPolicy p, long nanos) {
    f = EngineFixture.of(p);
    f.sleeper.late(nanos);
    f.scheduler.late(nanos);
    return f;
  }

  long retriesInTheBudget(TestPolicy p) {
    return f.engine
        .budgetFor("http://api.example.com:80", p.build())
        .retriesInWindow(f.clock.nanoTime());
  }

  @Test
  void aFailureWhoseRetrysWaitEndsPastTheDeadlineEndsTheCallWithIt() {
    // A 500 ms backoff, a 2 s deadline, and the wait ends 2 s late (a paused JVM): the retry
    // started past the deadline with a timeout of 1 ns, the host got a request nobody waited for
    // and the caller a timeout it never had without the agent. It ends as if not retried.
    TestPolicy p = TestPolicy.create().backoff(Duration.ofMillis(500), 1.0, Duration.ofSeconds(1));
    p.deadline(Duration.ofSeconds(2));
    lateBy(p, 2 * S);
    ConnectException refused = new ConnectException("Connection refused");
    CallResult r = run(p, FakeRequest.get(), fail(refused), respond(200));
    assertThat(r.error).isSameAs(refused);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.DEADLINE);
    assertThat(f.listener.complete().attempt()).isEqualTo(1);
    assertThat(retriesInTheBudget(p)).as("the retry not made, back to the budget").isZero();
  }

  @Test
  void aResponseWhoseRetrysWaitEndsPastTheDeadlineNearItIsTheCallers() {
    // The retry was to start 500 ms before the deadline: near it, the loop that can (synchronous,
    // a whole response) keeps the response through the wait, and a wait that ends late ends the
    // call with it. The asynchronous loop (java.net.http, which drops a retried body as its head
    // arrives) has only the engine's exception to give, never a retry past the deadline.
    TestPolicy p = TestPolicy.create().backoff(Duration.ofMillis(500), 1.0, Duration.ofSeconds(1));
    p.deadline(Duration.ofSeconds(1));
    lateBy(p, 2 * S);
    CallResult r = run(p, FakeRequest.get(), respond(503), respond(200));
    assertThat(script.attemptCount()).isEqualTo(1);
    if (driver() == Driver.SYNC) {
      assertThat(r.status()).isEqualTo(503);
      assertThat(r.response).isSameAs(script.responsesServed().get(0));
    } else {
      assertThat(r.error).isInstanceOf(IOException.class);
      assertThat(r.error.getMessage()).contains("ended past the call's deadline");
    }
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.DEADLINE);
    assertThat(retriesInTheBudget(p)).isZero();
  }

  @Test
  void aResponseBeforeALongWaitIsReleasedFirstEvenNearTheDeadline() {
    // The retry is to start 500 ms before the deadline, but after a 5 s wait: a kept response
    // would hold its connection (an Apache pool's lease others may queue for) for all of it. It is
    // released before the wait; a wait that then ends late has only the engine's exception to give.
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(5), 1.0, Duration.ofSeconds(5));
    p.deadline(Duration.ofMillis(5_500));
    lateBy(p, 2 * S);
    CallResult r = run(p, FakeRequest.get(), respond(503), respond(200));
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(r.error).isInstanceOf(IOException.class);
    assertThat(r.error.getMessage()).contains("ended past the call's deadline");
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.DEADLINE);
    assertThat(retriesInTheBudget(p)).isZero();
  }

  @Test
  void aResponseReleasedBeforeAWaitThatEndsFarPastTheDeadlineIsNotRetriedEither() {
    // 30 s from the deadline the 503 is released before its wait (its connection serves others);
    // the wait ends 40 s late: the response cannot be given back, and no retry goes out past the
    // deadline: the engine's exception says why, naming method and target only.
    TestPolicy p = TestPolicy.create();
    lateBy(p, 40 * S);
    CallResult r = run(p, FakeRequest.get(), respond(503), respond(200));
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(r.error)
        .isInstanceOf(IOException.class)
        .hasMessage(
            "retry-agent: the wait to retry GET http://api.example.com:80 after a 503 ended past"
                + " the call's deadline (the JVM or its scheduler held up), and the response had"
                + " been released for the retry");
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.DEADLINE);
    assertThat(retriesInTheBudget(p)).isZero();
  }

  @Test
  void aWaitThatEndsLateButBeforeTheDeadlineStillRetries() {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofMillis(500), 1.0, Duration.ofSeconds(1));
    p.deadline(Duration.ofSeconds(1));
    lateBy(p, 400 * MS);
    CallResult r = run(p, FakeRequest.get(), respond(503), respond(200));
    assertThat(r.status()).isEqualTo(200);
    assertThat(script.attempts().get(1).timeoutNanos).isEqualTo(100 * MS);
  }

  @Test
  void timeSpentInAttemptsCountsAgainstTheDeadline() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(10);
    p.deadline(Duration.ofSeconds(2));
    CallResult r =
        run(
            p,
            FakeRequest.get(),
            respond(503).takes(900 * MS),
            respond(503).takes(900 * MS),
            respond(503).takes(900 * MS));
    // 0.9 + 0.1 wait + 0.9 = 1.9 s; a 200 ms wait would start the third at 2.1 s.
    assertThat(script.attemptCount()).isEqualTo(2);
    assertThat(r.status()).isEqualTo(503);
  }

  @Test
  void aRetryAfterThatOutlastsTheDeadlineEndsTheCall() {
    TestPolicy p = TestPolicy.create();
    p.deadline(Duration.ofSeconds(10));
    CallResult r = run(p, FakeRequest.get(), respond(503, "10"), respond(200));
    assertThat(r.status()).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.DEADLINE);
  }

  @Test
  void retriesGetAnAttemptTimeoutNoLongerThanWhatIsLeft() {
    TestPolicy p = TestPolicy.create();
    p.deadline(Duration.ofSeconds(3));
    p.retry.perAttemptTimeout(Duration.ofSeconds(2));
    run(
        p,
        FakeRequest.get(),
        respond(503).takes(2 * S),
        respond(503).takes(500 * MS),
        respond(200));
    List<Script.Attempt> a = script.attempts();
    assertThat(a.get(0).timeoutNanos).isEqualTo(2 * S);
    assertThat(a.get(1).timeoutNanos).isEqualTo(900 * MS); // 3 s - 2 s - 100 ms
    assertThat(a.get(2).timeoutNanos).isEqualTo(200 * MS); // 0.9 - 0.5 - 0.2
  }

  @Test
  void withoutPerAttemptTimeoutTheFirstAttemptKeepsTheClientsOwn() {
    run(TestPolicy.create(), FakeRequest.get(), respond(503), respond(200));
    assertThat(script.attempts().get(0).timeoutNanos).isEqualTo(-1);
    assertThat(script.attempts().get(1).timeoutNanos).isEqualTo(30 * S - 100 * MS);
  }

  // --- one-shot bodies

  @Test
  void aOneShotBodyIsNeverRepeatedOnceSent() {
    boolean[] written = {false};
    FakeRequest put = FakeRequest.of("PUT").bodyReplayable(() -> !written[0]);
    CallResult r = run(TestPolicy.create(), put, respond(503).during(() -> written[0] = true));
    assertThat(r.status()).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.BODY_NOT_REPLAYABLE);
  }

  @Test
  void aOneShotBodyIsSentAfterAConnectFailure() {
    boolean[] written = {false};
    FakeRequest put = FakeRequest.of("PUT").bodyReplayable(() -> !written[0]);
    CallResult r =
        run(
            TestPolicy.create(),
            put,
            fail(new ConnectException("Connection refused")),
            respond(200).during(() -> written[0] = true));
    assertThat(r.status()).isEqualTo(200);
    assertThat(script.attemptCount()).isEqualTo(2);
  }

  // --- circuit breaker

  private static TestPolicy smallBreaker() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(2);
    p.breaker.countWindow(2).minimumCalls(2).openFor(Duration.ofSeconds(30));
    return p;
  }

  @Test
  void anOpenBreakerFailsFastWithoutCallingTheAttempt() {
    TestPolicy p = smallBreaker();
    CallResult first = run(p, FakeRequest.get(), respond(503), respond(503));
    assertThat(first.status()).isEqualTo(503);
    Instant openedAt = f.clock.wallNow();
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
    assertThat(f.listener.transitionRoutes()).containsExactly(TestPolicy.ROUTE);

    f.clock.advance(5 * S);
    f.listener.clear();
    CallResult second = run(p, FakeRequest.get(), respond(200));
    assertThat(script.attemptCount()).as("the network is not touched").isZero();
    assertThat(second.error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(second.error).isInstanceOf(IOException.class);
    CircuitBreakerOpenException e = (CircuitBreakerOpenException) second.error;
    assertThat(e.breakerKey()).isEqualTo("http://api.example.com:80");
    assertThat(e.retryAt()).isEqualTo(openedAt.plusSeconds(30));
    assertThat(e.getMessage())
        .contains("http://api.example.com:80")
        .contains(openedAt.plusSeconds(30).toString())
        .contains("25000 ms");
    assertThat(f.listener.types())
        .containsExactly(
            RetryEvent.Type.BREAKER_REJECTED,
            RetryEvent.Type.GIVE_UP,
            RetryEvent.Type.CALL_COMPLETE);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CIRCUIT_OPEN);
  }

  @Test
  void anOpenBreakerForOneHostLeavesOtherHostsAlone() {
    TestPolicy p = smallBreaker();
    run(p, FakeRequest.get(), respond(503), respond(503));
    CallResult other = run(p, FakeRequest.of("GET", "other.example.com"), respond(200));
    assertThat(other.status()).isEqualTo(200);
  }

  @Test
  void aRetryThatWouldFindTheBreakerOpenEndsTheCallTheSameWay() {
    TestPolicy p = smallBreaker();
    p.retry.maxAttempts(3);
    CallResult r = run(p, FakeRequest.get(), respond(503), respond(503), respond(200));
    assertThat(script.attemptCount()).isEqualTo(2);
    assertThat(r.error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(f.clock.elapsed()).as("no wait for a retry that cannot be made").isEqualTo(100 * MS);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CIRCUIT_OPEN);
  }

  @Test
  void theBreakerClosesAgainAfterSuccessfulTrials() {
    TestPolicy p = smallBreaker();
    p.breaker.halfOpenCalls(2);
    run(p, FakeRequest.get(), respond(503), respond(503));
    f.clock.advance(30 * S);
    assertThat(run(p, FakeRequest.get(), respond(200)).status()).isEqualTo(200);
    assertThat(run(p, FakeRequest.get(), respond(200)).status()).isEqualTo(200);
    assertThat(f.listener.transitions())
        .containsExactly(
            CircuitTransition.CLOSED_TO_OPEN,
            CircuitTransition.OPEN_TO_HALF_OPEN,
            CircuitTransition.HALF_OPEN_TO_CLOSED);
  }

  @Test
  void anExceptionThatIsNoAnswerOfTheHostIsNotTheHalfOpenBreakersSuccessfulTrial() {
    // A RuntimeException out of the attempt (an application's OkHttp interceptor that runs after
    // the agent's and throws IllegalStateException, a client's bug): the host answered nothing.
    // Taken for its success, it was the half-open breaker's trial and closed the breaker, so the
    // failing host got every call again without one request having succeeded.
    TestPolicy p = smallBreaker();
    p.breaker.halfOpenCalls(1);
    run(p, FakeRequest.get(), respond(503), respond(503));
    f.clock.advance(30 * S);

    CallResult odd = run(p, FakeRequest.get(), fail(new IllegalStateException("no token")));
    assertThat(odd.error).isInstanceOf(IllegalStateException.class).hasMessage("no token");

    // The trial is still to be made: its 503 opens the breaker again, and the next call is refused.
    run(p, FakeRequest.get(), respond(503));
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(run(p, FakeRequest.get()).error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(f.listener.transitions())
        .containsExactly(
            CircuitTransition.CLOSED_TO_OPEN,
            CircuitTransition.OPEN_TO_HALF_OPEN,
            CircuitTransition.HALF_OPEN_TO_OPEN);
  }

  @Test
  void theBreakerCountsTransportFailuresUnlessToldNotTo() {
    TestPolicy counted = smallBreaker();
    run(
        counted,
        FakeRequest.get(),
        fail(new SocketException("Connection reset")),
        fail(new SocketException("Connection reset")));
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);

    f = null;
    TestPolicy ignored = smallBreaker();
    ignored.breaker.failOnTransport(false);
    run(
        ignored,
        FakeRequest.get(),
        fail(new SocketException("Connection reset")),
        fail(new SocketException("Connection reset")));
    assertThat(f.listener.transitions()).isEmpty();
  }

  /**
   * failOn.transport ("transport failures count as failures") counts every I/O failure of an
   * attempt: the three kinds retryOn.transport names, and an unknown host or an untrusted
   * certificate, which no kind names and nothing retries by default, too. The target cannot be
   * reached either way, and the breaker is its own: it fails the next calls fast until a trial gets
   * through. With failOn.transport false none of them opens it.
   */
  @Test
  void failOnTransportCountsEveryIoFailureAnUnknownHostAndAnUntrustedCertificateAmongThem() {
    ConnectException unresolved = new ConnectException();
    unresolved.initCause(new java.nio.channels.UnresolvedAddressException());
    javax.net.ssl.SSLHandshakeException untrusted =
        new javax.net.ssl.SSLHandshakeException("PKIX path building failed");
    untrusted.initCause(new java.security.cert.CertificateException("untrusted"));
    List<IOException> failures =
        List.of(
            new ConnectException("Connection refused"),
            new SocketException("Connection reset"),
            new HttpTimeoutException("request timed out"),
            new java.net.UnknownHostException("no.such.host"),
            unresolved,
            untrusted);
    for (boolean failOnTransport : new boolean[] {true, false}) {
      for (IOException failure : failures) {
        f = null;
        TestPolicy p = smallBreaker();
        p.retry.maxAttempts(1);
        p.breaker.failOnTransport(failOnTransport);
        run(p, FakeRequest.get(), fail(failure));
        CallResult second = run(p, FakeRequest.get(), fail(failure));
        assertThat(second.error).as("%s", failure).isSameAs(failure);
        if (failOnTransport) {
          assertThat(f.listener.transitions())
              .as("%s", failure)
              .containsExactly(CircuitTransition.CLOSED_TO_OPEN);
          assertThat(run(p, FakeRequest.get()).error)
              .as("%s", failure)
              .isInstanceOf(CircuitBreakerOpenException.class);
        } else {
          assertThat(f.listener.transitions()).as("%s", failure).isEmpty();
        }
      }
    }
  }

  @Test
  void tooManyRequestsIsNotABreakerFailureByDefault() {
    TestPolicy p = smallBreaker();
    run(p, FakeRequest.get(), respond(429), respond(429));
    assertThat(f.listener.transitions()).isEmpty();
  }

  @Test
  void theStatusesFailOnNamesAreBreakerFailuresWhetherRetriedOrNot() {
    // failOn.statuses [5xx] by default: a 500 that retryOn does not name still counts.
    TestPolicy p = smallBreaker();
    run(p, FakeRequest.get(), respond(500));
    run(p, FakeRequest.get(), respond(500));
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);

    f = null;
    TestPolicy with429 = smallBreaker();
    with429.breaker.failOnStatuses(StatusSet.of("429", "5xx"));
    run(with429, FakeRequest.get(), respond(429), respond(429));
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
  }

  @Test
  void anAttemptLongerThanSlowCallDurationIsSlowAndTheBreakerOpensAtTheSlowRate() {
    TestPolicy p = smallBreaker();
    p.breaker.slowCallDuration(Duration.ofSeconds(1)).slowCallRateThreshold(1.0);
    run(p, FakeRequest.get(), respond(200).takes(S)); // exactly 1 s: not longer, not slow
    run(p, FakeRequest.get(), respond(200).takes(S + 1)); // slow: 1 of 2 is below 100%
    assertThat(f.listener.transitions()).isEmpty();
    run(p, FakeRequest.get(), respond(200).takes(2 * S)); // the window of 2: both slow
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
  }

  @Test
  void aRouteScopedBreakerIsSharedByEveryHostOfTheRoute() {
    TestPolicy p = smallBreaker();
    p.breaker.scope(CircuitBreakerPolicy.Scope.ROUTE);
    run(p, FakeRequest.get(), respond(503), respond(503));
    CallResult other = run(p, FakeRequest.of("GET", "other.example.com"), respond(200));
    assertThat(other.error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(((CircuitBreakerOpenException) other.error).breakerKey())
        .isEqualTo("route:" + TestPolicy.ROUTE);
  }

  // --- budget

  @Test
  void aSpentBudgetSendsTheFailureBackAsItIs() {
    TestPolicy p = TestPolicy.create();
    p.budget.ratio(0.0).minPerSecond(0);
    CallResult r = run(p, FakeRequest.get(), respond(503), respond(200));
    assertThat(r.status()).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.BUDGET);
  }

  @Test
  void theBudgetIsSharedByTheCallsOfAHost() {
    TestPolicy p = TestPolicy.create();
    p.budget.ratio(0.5).minPerSecond(0);
    // Call 1: 1 call, a retry would make 1 > 0.5 x 1.
    assertThat(run(p, FakeRequest.get(), respond(503)).status()).isEqualTo(503);
    // Call 2: 2 calls allow 1 retry.
    assertThat(run(p, FakeRequest.get(), respond(503), respond(200)).status()).isEqualTo(200);
    // Call 3: 3 calls, 1 retry spent; a second would make 2 > 1.5.
    assertThat(run(p, FakeRequest.get(), respond(503)).status()).isEqualTo(503);
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP))
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.BUDGET, GiveUpReason.BUDGET);
  }

  @Test
  void aDisabledBudgetNeverRefuses() {
    TestPolicy p = TestPolicy.create();
    p.budget.enabled(false).ratio(0.0).minPerSecond(0);
    assertThat(run(p, FakeRequest.get(), respond(503), respond(200)).status()).isEqualTo(200);
  }
}
