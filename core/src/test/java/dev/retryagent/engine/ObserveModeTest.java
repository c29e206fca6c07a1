package dev.retryagent.engine;

import static dev.retryagent.engine.Script.fail;
import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeRequest;
import java.net.SocketException;
import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Observe mode: every decision is made and reported, none is carried out. The application sees
 * exactly what it would see without the agent: one attempt, no waits, no exceptions of ours.
 */
class ObserveModeTest {
  private static final long MS = 1_000_000L;

  static Driver[] drivers() {
    return new Driver[] {Driver.SYNC, Driver.ASYNC};
  }

  private static EngineFixture observe(TestPolicy p) {
    return EngineFixture.of(p.build(), Mode.OBSERVE);
  }

  private static void assertNothingWasDelayed(EngineFixture f) {
    assertThat(f.sleeper.sleeps()).isEmpty();
    assertThat(f.scheduler.delays()).isEmpty();
    assertThat(f.clock.elapsed()).isZero();
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aRetryableFailureIsReportedAsWouldRetryAndReturnedAsItIs(Driver driver) {
    EngineFixture f = observe(TestPolicy.create());
    Script script = new Script(f.clock, respond(503), respond(503), respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), script);

    assertThat(r.status()).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(r.response.discards.get()).isZero();
    assertNothingWasDelayed(f);
    RetryEvent wouldRetry = f.listener.events(RetryEvent.Type.RETRY).get(0);
    assertThat(wouldRetry.observeOnly()).isTrue();
    assertThat(wouldRetry.delayNanos()).isEqualTo(100 * MS);
    assertThat(wouldRetry.status()).isEqualTo(503);
    assertThat(f.listener.types())
        .containsExactly(
            RetryEvent.Type.ATTEMPT, RetryEvent.Type.RETRY, RetryEvent.Type.CALL_COMPLETE);
    assertThat(f.listener.complete().succeeded()).isFalse();
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aTransportFailureIsReportedAndThrownAsItIs(Driver driver) {
    EngineFixture f = observe(TestPolicy.create());
    SocketException reset = new SocketException("Connection reset");
    Script script = new Script(f.clock, fail(reset), respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), script);
    assertThat(r.error).isSameAs(reset);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.events(RetryEvent.Type.RETRY)).hasSize(1);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void anOpenBreakerIsReportedButDoesNotBlock(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(2).minimumCalls(2);
    EngineFixture f = observe(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503)));
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503)));
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
    f.listener.clear();

    Script third = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), third);

    assertThat(r.status()).isEqualTo(200);
    assertThat(third.attemptCount()).isEqualTo(1);
    RetryEvent rejected = f.listener.events(RetryEvent.Type.BREAKER_REJECTED).get(0);
    assertThat(rejected.observeOnly()).isTrue();
    assertThat(rejected.reason()).isEqualTo(GiveUpReason.CIRCUIT_OPEN);
    assertThat(rejected.error()).isInstanceOf(CircuitBreakerOpenException.class);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aRetryThatWouldFindTheBreakerOpenIsNotTurnedIntoAnException(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.breaker.countWindow(1).minimumCalls(1);
    EngineFixture f = observe(p);
    CallResult r = driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503)));
    assertThat(r.status()).isEqualTo(503);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aRateLimitRejectionIsReportedButDoesNotBlock(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(1);
    EngineFixture f = observe(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    f.listener.clear();

    Script second = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), second);

    assertThat(r.status()).isEqualTo(200);
    assertThat(second.attemptCount()).isEqualTo(1);
    RetryEvent limited = f.listener.events(RetryEvent.Type.RATE_LIMITED).get(0);
    assertThat(limited.observeOnly()).isTrue();
    assertThat(limited.reason()).isEqualTo(GiveUpReason.RATE_LIMITED);
    assertNothingWasDelayed(f);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aRateLimitWaitIsReportedButNotWaited(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ofSeconds(5));
    EngineFixture f = observe(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    f.listener.clear();
    CallResult r = driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    assertThat(r.status()).isEqualTo(200);
    assertThat(f.listener.events(RetryEvent.Type.RATE_LIMITED).get(0).delayNanos())
        .isEqualTo(1_000_000_000L);
    assertNothingWasDelayed(f);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aPauseAfter429IsNotWaited(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true);
    EngineFixture f = observe(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(429, "10")));
    CallResult r = driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    assertThat(r.status()).isEqualTo(200);
    assertNothingWasDelayed(f);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aSpentBudgetIsReported(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.budget.ratio(0).minPerSecond(0);
    EngineFixture f = observe(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503)));
    RetryEvent gaveUp = f.listener.events(RetryEvent.Type.GIVE_UP).get(0);
    assertThat(gaveUp.reason()).isEqualTo(GiveUpReason.BUDGET);
    assertThat(gaveUp.observeOnly()).isTrue();
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aSwitchToEnforceStartsFromABudgetObserveModeDidNotSpend(Driver driver) {
    // The floor allows one retry in the window. Observe mode's would-be retries take it and stay
    // spent; none reached the host, so the first enforcing call's retry must still get it.
    TestPolicy p = TestPolicy.create();
    p.budget.ratio(0).minPerSecond(1).window(Duration.ofSeconds(1));
    EngineFixture f = observe(p);
    for (int i = 0; i < 3; i++) {
      driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503)));
    }
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP))
        .extracting(RetryEvent::reason)
        .contains(GiveUpReason.BUDGET);
    f.engine.reconfigure(Mode.ENFORCE, PolicyResolver.always(p.build()));

    Script enforced = new Script(f.clock, respond(503), respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), enforced);

    assertThat(r.status()).isEqualTo(200);
    assertThat(enforced.attemptCount()).isEqualTo(2);
  }

  /** Two 503s in a window of two open the breaker of the policy {@link #twoFailuresOpen}. */
  private static TestPolicy twoFailuresOpen() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(2).minimumCalls(2);
    return p;
  }

  private static void openTheBreaker(Driver driver, EngineFixture f) {
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503)));
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503)));
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
    f.listener.clear();
  }

  private static void assertNoBreakerIsReportedOpen(EngineFixture f) {
    assertThat(f.engine.breakers())
        .filteredOn(b -> f.engine.showsState(b))
        .extracting(CircuitBreaker::state)
        .doesNotContain(CircuitState.OPEN);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aSwitchToEnforceStartsFromABreakerObserveModeDidNotOpen(Driver driver) {
    // Observe mode refused nothing: what it saw must not refuse the first enforcing calls.
    TestPolicy p = twoFailuresOpen();
    EngineFixture f = observe(p);
    openTheBreaker(driver, f);
    f.engine.reconfigure(Mode.ENFORCE, PolicyResolver.always(p.build()));

    Script enforced = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), enforced);

    assertThat(r.status()).isEqualTo(200);
    assertThat(enforced.attemptCount()).isEqualTo(1);
    assertThat(f.listener.events(RetryEvent.Type.BREAKER_REJECTED)).isEmpty();
    assertNoBreakerIsReportedOpen(f);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aSwitchToObserveDoesNotReportTheBreakerEnforceModeOpened(Driver driver) {
    // Observe mode reports what it would do from what it saw, not from enforce's open state.
    TestPolicy p = twoFailuresOpen();
    EngineFixture f = EngineFixture.of(p.build(), Mode.ENFORCE);
    openTheBreaker(driver, f);
    f.engine.reconfigure(Mode.OBSERVE, PolicyResolver.always(p.build()));

    Script observed = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), observed);

    assertThat(r.status()).isEqualTo(200);
    assertThat(f.listener.events(RetryEvent.Type.BREAKER_REJECTED)).isEmpty();
    assertNoBreakerIsReportedOpen(f);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aSwitchToEnforceStartsFromACleanBreakerWhenTheResolverListsNoPolicies(Driver driver) {
    // Such a resolver does not say which sections are in use, but the mode left is known.
    TestPolicy p = twoFailuresOpen();
    Policy policy = p.build();
    EngineFixture f = EngineFixture.of(policy, Mode.OBSERVE);
    f.engine.reconfigure(Mode.OBSERVE, (method, host, port, path) -> policy);
    openTheBreaker(driver, f);
    f.engine.reconfigure(Mode.ENFORCE, (method, host, port, path) -> policy);

    CallResult r = driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));

    assertThat(r.status()).isEqualTo(200);
    assertThat(f.listener.events(RetryEvent.Type.BREAKER_REJECTED)).isEmpty();
    assertNoBreakerIsReportedOpen(f);
  }
}
