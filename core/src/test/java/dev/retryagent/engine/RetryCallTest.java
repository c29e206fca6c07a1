package dev.retryagent.engine;

import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.policy.Mode;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.testing.FakeRequest;
import java.io.IOException;
import java.net.SocketException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link RetryCall} driven step by step, as a client adapter drives it. */
class RetryCallTest {
  private static final long S = 1_000_000_000L;
  private static final long MS = 1_000_000L;

  @Test
  void theDecisionIsMadeOncePerAttemptAndAskingAgainReturnsIt() throws Exception {
    TestPolicy p = TestPolicy.create();
    p.breaker.countWindow(2).minimumCalls(2);
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    call.reservePermit();
    call.acquireBreaker();
    call.startAttempt();
    Decision early = call.onResponse(503, null); // the adapter decides on the status line
    Decision late = call.onResponse(503, null); // and again when the attempt completes
    assertThat(late).isSameAs(early);
    assertThat(early.retry()).isTrue();
    assertThat(f.listener.events(RetryEvent.Type.RETRY)).hasSize(1);
    assertThat(f.random.drawn()).isEqualTo(1);
    // The breaker heard one outcome, not two: one more failure is needed to open it.
    assertThat(f.listener.transitions()).isEmpty();
  }

  @Test
  void aRetryAskedForAgainWhileAnAdapterWaitsIsMadeAgainAsItWas() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    call.startAttempt();
    Decision made = call.onResponse(503, "2");
    call.waitsToRetry(); // the call keeps the delay, not the decision
    Decision again = call.onResponse(503, null);
    assertThat(again.retry()).isTrue();
    assertThat(again.delayNanos()).isEqualTo(made.delayNanos()).isEqualTo(2 * S);
    assertThat(again.outcome()).isEqualTo(Outcome.RESPONSE);
    assertThat(again.status()).isEqualTo(503);
    assertThat(again.reason()).isNull();
    assertThat(again.error()).isNull();
    assertThat(f.listener.events(RetryEvent.Type.RETRY)).hasSize(1);

    // The next attempt decides afresh, and a failure's retry is kept the same way.
    call.acquireBreaker();
    assertThat(call.startAttempt()).isEqualTo(2);
    Decision failed = call.onFailure(new SocketException("Connection reset"));
    call.waitsToRetry();
    Decision failedAgain = call.onFailure(new SocketException("Connection reset"));
    assertThat(failedAgain.retry()).isTrue();
    assertThat(failedAgain.delayNanos()).isEqualTo(failed.delayNanos());
    assertThat(failedAgain.outcome()).isEqualTo(Outcome.RESET);
    assertThat(failedAgain.status()).isEqualTo(-1);
    assertThat(f.listener.events(RetryEvent.Type.RETRY)).hasSize(2);
  }

  @Test
  void aFreshAttemptGetsAFreshDecision() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    assertThat(call.startAttempt()).isEqualTo(1);
    assertThat(call.onResponse(503, null).retry()).isTrue();
    call.acquireBreaker();
    assertThat(call.startAttempt()).isEqualTo(2);
    Decision ok = call.onResponse(200, null);
    assertThat(ok.retry()).isFalse();
    assertThat(ok.reason()).isNull();
    assertThat(ok.status()).isEqualTo(200);
    assertThat(call.isFinished()).isTrue();
  }

  @Test
  void aCancelSignalFromTheClientStopsRetrying() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    boolean[] cancelled = {false};
    RetryCall call = f.newCall(FakeRequest.get());
    call.cancelledWhen(() -> cancelled[0]);
    call.acquireBreaker();
    call.startAttempt();
    cancelled[0] = true;
    Decision d = call.onFailure(new SocketException("Socket closed"));
    assertThat(d.retry()).isFalse();
    assertThat(d.reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @Test
  void aCancelSignalThatThrowsCountsAsNotCancelled() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.cancelledWhen(
        () -> {
          throw new IllegalStateException("adapter bug");
        });
    call.acquireBreaker();
    call.startAttempt();
    assertThat(call.onResponse(503, null).retry()).isTrue();
  }

  @Test
  void aShorterDeadlineFromTheClientIsKeptAndALongerOneIgnored() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    Script script = new Script(f.clock, respond(503), respond(503), respond(200));
    CallResult r =
        Driver.SYNC.run(
            f,
            FakeRequest.get(),
            script,
            call -> {
              call.limitDeadline(f.clock.nanoTime() + 250 * MS); // e.g. OkHttp's call timeout
              call.limitDeadline(f.clock.nanoTime() + 60 * S);
            });
    // 0, then 100 ms; a third attempt at 300 ms would be past the 250 ms deadline.
    assertThat(script.attemptCount()).isEqualTo(2);
    assertThat(r.status()).isEqualTo(503);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.DEADLINE);
  }

  @Test
  void aSuccessHeardAfterTheCallersCancelIsNoGiveUp() throws Exception {
    // OkHttp's execute(): Call.cancel() from another thread after the 200's head came; the
    // application still gets the 200 (no retry, no error), as without the agent.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    boolean[] cancelled = {false};
    RetryCall call = f.newCall(FakeRequest.get());
    call.cancelledWhen(() -> cancelled[0]);
    call.acquireBreaker();
    call.startAttempt();
    cancelled[0] = true;
    Decision d = call.onResponse(200, null);
    assertThat(d.retry()).isFalse();
    assertThat(d.reason()).isNull();
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP)).isEmpty();
    assertThat(f.listener.complete().reason()).isNull();
  }

  @Test
  void abandoningACallTwiceReportsItOnce() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    call.startAttempt();
    call.onAbandoned();
    call.onAbandoned();
    assertThat(f.listener.events(RetryEvent.Type.CALL_COMPLETE)).hasSize(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @Test
  void anAbandonedTrialFreesItsHalfOpenPermit() throws Exception {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(1).minimumCalls(1).halfOpenCalls(1).openFor(Duration.ofSeconds(1));
    EngineFixture f = EngineFixture.of(p);
    Driver.SYNC.run(f, FakeRequest.get(), new Script(f.clock, respond(503)));
    f.clock.advance(Duration.ofSeconds(1));

    RetryCall trial = f.newCall(FakeRequest.get());
    trial.acquireBreaker();
    trial.startAttempt();
    trial.onAbandoned();

    RetryCall next = f.newCall(FakeRequest.get());
    next.acquireBreaker(); // would throw CircuitBreakerOpenException if the permit had leaked
    next.startAttempt();
    assertThat(next.onResponse(200, null).retry()).isFalse();
    assertThat(f.listener.transitions())
        .containsExactly(
            CircuitTransition.CLOSED_TO_OPEN,
            CircuitTransition.OPEN_TO_HALF_OPEN,
            CircuitTransition.HALF_OPEN_TO_CLOSED);
  }

  // --- a retry decided and never made gives its budget back (issue 11)

  /** One retry per second and nothing more: the second retry in a window is refused. */
  private static TestPolicy oneRetryPerSecond() {
    TestPolicy p = TestPolicy.create();
    p.budget.ratio(0).minPerSecond(1).window(Duration.ofSeconds(1));
    return p;
  }

  private static RetryBudget budgetOf(EngineFixture f, RetryCall call) {
    return f.engine.budgetFor(call.request().target(), call.policy());
  }

  /** Starts {@code call} and ends its first attempt with a 503: a retry is decided. */
  private static void firstAttempt503(RetryCall call) throws IOException {
    call.reservePermit();
    call.acquireBreaker();
    call.startAttempt();
    assertThat(call.onResponse(503, null).retry()).isTrue();
  }

  @Test
  void aRetryCancelledDuringItsWaitGivesItsBudgetBack() throws Exception {
    EngineFixture f = EngineFixture.of(oneRetryPerSecond());
    RetryCall first = f.newCall(FakeRequest.get());
    firstAttempt503(first);
    assertThat(budgetOf(f, first).retriesInWindow(f.clock.nanoTime())).isEqualTo(1);

    first.onAbandoned(); // the caller cancelled during the wait

    assertThat(budgetOf(f, first).retriesInWindow(f.clock.nanoTime())).isZero();
    RetryCall second = f.newCall(FakeRequest.get());
    firstAttempt503(second); // would have been refused (budget) had the first kept its retry
  }

  @Test
  void anAttemptThatFailsAfterAnotherThreadAbandonedTheCallIsNotJudged() throws Exception {
    // The caller's cancel (AsyncRetryLoop's, OkHttp's Call.cancel) ends the call from its own
    // thread while the attempt's failure is on its way: the failure is the call's outcome as it
    // is. Judged, it took a retry from the budget after the call had given back what it held, and
    // nobody returned it: the one retry a second allows was gone.
    EngineFixture f = EngineFixture.of(oneRetryPerSecond());
    RetryCall call = f.newCall(FakeRequest.get());
    call.reservePermit();
    call.acquireBreaker();
    call.startAttempt();

    call.onAbandoned(); // the caller's thread
    Decision d = call.onFailure(new SocketException("Connection reset"));

    assertThat(d.retry()).isFalse();
    assertThat(d.error()).isNull();
    assertThat(budgetOf(f, call).retriesInWindow(f.clock.nanoTime())).isZero();
    assertThat(f.listener.events(RetryEvent.Type.RETRY)).isEmpty();
    assertThat(f.listener.events(RetryEvent.Type.CALL_COMPLETE)).hasSize(1);
    RetryCall second = f.newCall(FakeRequest.get());
    firstAttempt503(second); // would have been refused (budget) had the first taken a retry
  }

  @Test
  void aRetryOfTheFloorGivenBackAfterTheFloorWasTakenAgainGivesBackNoRetryOfTheRatio()
      throws Exception {
    // A window of 950 ms at 1 a second: no whole retry of the floor per window, a rest of one
    // retry a second (outside the window). The budget told a retry of the floor's rest from one of
    // the ratio's by the time it was taken, as the last the rest allowed: once another call had
    // taken the rest again, the first one's given back was taken for the ratio's, and forgot a
    // retry still in the window that another call had made. The ratio then allowed one more.
    TestPolicy p = TestPolicy.create();
    p.budget.ratio(0.5).minPerSecond(1).window(Duration.ofMillis(950));
    EngineFixture f = EngineFixture.of(p);
    long t = f.clock.nanoTime();
    RetryCall ok = f.newCall(FakeRequest.get());
    ok.acquireBreaker();
    ok.startAttempt();
    ok.onResponse(200, null); // a call: the ratio allows half a retry for each
    RetryCall x = f.newCall(FakeRequest.get());
    firstAttempt503(x); // 1 retry of 2 calls: the ratio's
    x.startAttempt(); // made
    f.clock.advanceTo(t + 1_000_000);
    RetryCall a = f.newCall(FakeRequest.get());
    firstAttempt503(a); // 2 of 3 would be past the ratio: the floor's rest allows it
    RetryBudget budget = budgetOf(f, x);
    assertThat(budget.retriesInWindow(f.clock.nanoTime())).isEqualTo(1);

    f.clock.advanceTo(t + 1_001_000_000); // the rest refilled; x's retry still in the window
    assertThat(x.onResponse(503, null).retry()).as("the rest, taken again").isTrue();
    a.onAbandoned(); // the caller gave up during a's wait: its retry of the rest goes back

    assertThat(budget.retriesInWindow(f.clock.nanoTime())).as("x's, made").isEqualTo(1);
  }

  @Test
  void aWindowShorterThanTheFloorsPeriodStillAllowsTheFloorsRetryAndTakesItBack() throws Exception {
    // Half a retry of the floor per window: the budget refused every retry, against the floor's
    // documented "always allowed at this rate".
    TestPolicy p = TestPolicy.create();
    p.budget.ratio(0).minPerSecond(10).window(Duration.ofMillis(50));
    EngineFixture f = EngineFixture.of(p);
    RetryCall first = f.newCall(FakeRequest.get());
    firstAttempt503(first);

    first.onAbandoned();

    RetryCall second = f.newCall(FakeRequest.get());
    firstAttempt503(second); // would have been refused (budget) had the first kept its retry
  }

  @Test
  void aRetryTheBreakerRefusesGivesItsBudgetBack() throws Exception {
    TestPolicy p = oneRetryPerSecond();
    p.breaker.countWindow(2).minimumCalls(2);
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    firstAttempt503(call);
    // Meanwhile another call's failure opens the breaker.
    RetryCall other = f.newCall(FakeRequest.get());
    other.acquireBreaker();
    other.startAttempt();
    assertThat(other.onResponse(503, null).reason()).isEqualTo(GiveUpReason.CIRCUIT_OPEN);

    assertThatThrownBy(call::acquireBreaker).isInstanceOf(CircuitBreakerOpenException.class);

    assertThat(budgetOf(f, call).retriesInWindow(f.clock.nanoTime())).isZero();
  }

  @Test
  void aRetryTheRateLimitRefusesGivesItsBudgetBack() throws Exception {
    TestPolicy p = oneRetryPerSecond();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ZERO);
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    firstAttempt503(call);

    assertThatThrownBy(call::reservePermit).isInstanceOf(RateLimitedException.class);

    assertThat(budgetOf(f, call).retriesInWindow(f.clock.nanoTime())).isZero();
  }

  @Test
  void aRetryStartedAfterTheCallerCancelledGivesItsBudgetBack() throws Exception {
    // OkHttp's execute: Call.cancel() ends the wait early, and the client then refuses the
    // attempt without sending anything.
    EngineFixture f = EngineFixture.of(oneRetryPerSecond());
    boolean[] cancelled = {false};
    RetryCall call = f.newCall(FakeRequest.get());
    call.cancelledWhen(() -> cancelled[0]);
    firstAttempt503(call);
    cancelled[0] = true;
    call.acquireBreaker();
    call.startAttempt();
    call.onFailure(new IOException("Canceled"));
    assertThat(budgetOf(f, call).retriesInWindow(f.clock.nanoTime())).isZero();
  }

  @Test
  void aRetryThatIsMadeKeepsItsBudget() throws Exception {
    EngineFixture f = EngineFixture.of(oneRetryPerSecond());
    RetryCall call = f.newCall(FakeRequest.get());
    firstAttempt503(call);
    call.acquireBreaker();
    call.startAttempt();
    call.onAbandoned(); // cancelled during the retry's attempt: the retry was made
    assertThat(budgetOf(f, call).retriesInWindow(f.clock.nanoTime())).isEqualTo(1);
  }

  @Test
  void aRetryTheClientRefusedUnsentEndsWithTheAttemptBeforeItGivingBackWhatItTook()
      throws Exception {
    // OkHttp's enqueue: the application's dispatcher executor refused the retry's clone, or
    // dropped it unrun at its shutdownNow(), once the retry had begun. The call ends with the 503
    // before it, as without the agent; the host saw no second request: the retry goes back to
    // the budget, its rate-limit permit to the bucket.
    TestPolicy p = oneRetryPerSecond();
    p.rateLimit.enabled(true).perSecond(1).burst(2).maxWait(Duration.ZERO);
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    firstAttempt503(call);
    call.reservePermit(); // the bucket's last
    call.acquireBreaker();
    assertThat(call.startAttempt()).isEqualTo(2);

    assertThat(call.retryRefused(503, null)).isNull();

    assertThat(call.isFinished()).isTrue();
    assertThat(budgetOf(f, call).retriesInWindow(f.clock.nanoTime())).isZero();
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP))
        .extracting(e -> e.reason() + " " + e.outcome() + " " + e.status())
        .containsExactly("CANCELLED RESPONSE 503");
    RetryCall next = f.newCall(FakeRequest.get());
    assertThat(next.reservePermit()).as("the retry's permit, back in the bucket").isZero();
  }

  @Test
  void aRetryTheClientRefusedUnsentAfterAFailureEndsWithThatFailure() throws Exception {
    EngineFixture f = EngineFixture.of(oneRetryPerSecond());
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    call.startAttempt();
    SocketException reset = new SocketException("Connection reset");
    assertThat(call.onFailure(reset).retry()).isTrue();
    call.acquireBreaker();
    call.startAttempt();

    assertThat(call.retryRefused(0, reset)).isSameAs(reset);

    assertThat(budgetOf(f, call).retriesInWindow(f.clock.nanoTime())).isZero();
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP))
        .extracting(e -> e.reason() + " " + e.outcome())
        .containsExactly("CANCELLED RESET");
    // Said once: the call ended already.
    assertThat(call.retryRefused(0, reset)).isSameAs(reset);
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP)).hasSize(1);
  }

  // --- the application's own body failed the attempt: its mistake, not the host's failure

  @Test
  void anAttemptTheApplicationsBodyFailedEndsTheCallAsTheApplicationsGivingBackWhatItTook()
      throws Exception {
    TestPolicy p = oneRetryPerSecond();
    p.retry.retryOnExceptions(java.util.List.of("java.io.IOException"));
    p.breaker.countWindow(2).minimumCalls(2); // the 503 and one more failure open it
    p.rateLimit.enabled(true).perSecond(1).burst(2).maxWait(Duration.ZERO);
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    firstAttempt503(call);
    call.reservePermit();
    call.acquireBreaker();
    call.startAttempt();
    IOException own = new IOException("disk");

    call.applicationFailed(own);
    // The client's own wrapping of it (java.net.http's send) is the application's failure too.
    Decision d = call.onFailure(new IOException("java.io.IOException: disk", own));

    assertThat(d.retry()).isFalse();
    assertThat(d.error()).isNull();
    assertThat(call.isFinished()).isTrue();
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.APPLICATION_FAILED);
    // The retry's budget and its rate-limit permit are back, and the breaker heard no failure.
    assertThat(budgetOf(f, call).retriesInWindow(f.clock.nanoTime())).isZero();
    RetryCall next = f.newCall(FakeRequest.get());
    assertThat(next.reservePermit()).isZero(); // refused had the retry kept its permit
    next.acquireBreaker(); // would throw had the failure counted
    assertThat(f.listener.transitions()).isEmpty();
  }

  /**
   * The attempt's own outcome says what happened, as the give-up does: it said "cancelled" (the
   * events' outcome, the OpenTelemetry attribute, the dead letter's outcome), a cancel nobody made,
   * next to a give-up reason of application-failed.
   */
  @Test
  void anAttemptTheApplicationsOwnCodeEndedHasThatOutcomeNotCancelled() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    call.startAttempt();
    IOException own = new IOException("disk");
    call.applicationFailed(own);

    Decision d = call.onFailure(own);

    // By name: the test compiles, and fails, without the outcome.
    assertThat(d.outcome().name()).isEqualTo("APPLICATION_FAILED");
    for (RetryEvent e : List.of(f.listener.complete(), giveUp(f))) {
      assertThat(e.outcome().name()).isEqualTo("APPLICATION_FAILED");
      assertThat(e.outcomeText()).isEqualTo("application failed");
      assertThat(e.reason()).isEqualTo(GiveUpReason.APPLICATION_FAILED);
    }

    // Ended by the adapter directly (an Apache entity, a wrong fixed length): the same.
    EngineFixture g = EngineFixture.of(TestPolicy.create());
    RetryCall direct = g.newCall(FakeRequest.get());
    direct.acquireBreaker();
    direct.startAttempt();
    direct.endedByApplication(own);
    assertThat(g.listener.complete().outcome().name()).isEqualTo("APPLICATION_FAILED");
    assertThat(giveUp(g).outcomeText()).isEqualTo("application failed");

    // A real cancel is as it was.
    EngineFixture h = EngineFixture.of(TestPolicy.create());
    RetryCall cancelled = h.newCall(FakeRequest.get());
    cancelled.acquireBreaker();
    cancelled.startAttempt();
    cancelled.onAbandoned();
    assertThat(h.listener.complete().outcome()).isEqualTo(Outcome.CANCELLED);
    assertThat(giveUp(h).outcomeText()).isEqualTo("cancelled");
  }

  private static RetryEvent giveUp(EngineFixture f) {
    List<RetryEvent> g = f.listener.events(RetryEvent.Type.GIVE_UP);
    assertThat(g).hasSize(1);
    return g.get(0);
  }

  @Test
  void aFailureTheApplicationsBodyDidNotCauseIsJudgedAsAlways() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    call.startAttempt();
    IOException own = new IOException("disk");
    call.applicationFailed(own);

    Decision d = call.onFailure(new SocketException("Connection reset"));

    assertThat(d.retry()).isTrue();
    assertThat(d.outcome()).isEqualTo(Outcome.RESET);
    // The next attempt starts without it: that attempt's failure is its own.
    call.acquireBreaker();
    call.startAttempt();
    assertThat(call.onFailure(new IOException("Connection reset", own)).retry()).isTrue();
  }

  // --- give-up reasons: the caller's call timeout, the deadline, a cancel (issue 11)

  @Test
  void aRetryThatWouldStartAfterTheCallersTimeoutNamesIt() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    Script script = new Script(f.clock, respond(503), respond(503), respond(200));
    CallResult r =
        Driver.SYNC.run(
            f,
            FakeRequest.get(),
            script,
            call -> call.limitToCallerTimeout(f.clock.nanoTime() + 250 * MS));
    // 0, then 100 ms; a third attempt at 300 ms would be after the caller's 250 ms.
    assertThat(script.attemptCount()).isEqualTo(2);
    assertThat(r.status()).isEqualTo(503);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CALL_TIMEOUT);
  }

  @Test
  void theDeadlineIsNamedWhenItComesBeforeTheCallersTimeout() {
    TestPolicy p = TestPolicy.create();
    p.deadline(Duration.ofMillis(250));
    EngineFixture f = EngineFixture.of(p);
    Script script = new Script(f.clock, respond(503), respond(503), respond(200));
    Driver.SYNC.run(
        f,
        FakeRequest.get(),
        script,
        call -> call.limitToCallerTimeout(f.clock.nanoTime() + 10 * S));
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.DEADLINE);
  }

  @Test
  void theCallersTimeoutDoesNotShortenTheAttempts() throws Exception {
    // The client enforces its own call timeout, with the exception its caller expects.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.limitToCallerTimeout(f.clock.nanoTime() + 2 * S);
    firstAttempt503(call);
    f.clock.advance(100 * MS);
    call.acquireBreaker();
    call.startAttempt();
    assertThat(call.attemptTimeoutNanos()).isEqualTo(30 * S - 100 * MS);
  }

  @Test
  void aCallEndedByTheCallersTimeoutIsNotCalledCancelled() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    boolean[] cancelled = {false};
    RetryCall call = f.newCall(FakeRequest.get());
    call.limitToCallerTimeout(f.clock.nanoTime() + 1 * S);
    call.cancelledWhen(() -> cancelled[0]);
    call.acquireBreaker();
    call.startAttempt();
    f.clock.advance(1 * S);
    cancelled[0] = true; // OkHttp cancels the call when its call timeout fires
    Decision d = call.onFailure(new SocketException("Socket closed"));
    assertThat(d.reason()).isEqualTo(GiveUpReason.CALL_TIMEOUT);
  }

  @Test
  void aCancelBeforeTheCallersTimeoutIsACancel() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.limitToCallerTimeout(f.clock.nanoTime() + 1 * S);
    firstAttempt503(call);
    f.clock.advance(500 * MS);
    call.onAbandoned();
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @Test
  void aCallAbandonedAtTheCallersTimeoutGivesUpForIt() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.limitToCallerTimeout(f.clock.nanoTime() + 1 * S);
    firstAttempt503(call);
    f.clock.advance(1 * S);
    call.onAbandoned();
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CALL_TIMEOUT);
  }

  // --- the client's own resends count as attempts (issue 11)

  @Test
  void aResendTheClientMadeCountsForMaxAttemptsAndTheRetryNeedsTwoLeft() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create()); // maxAttempts 3
    RetryCall call = f.newCall(FakeRequest.get());
    call.clientResendsOf(e -> 1); // the JDK sent the request twice
    call.acquireBreaker();
    call.startAttempt();

    Decision d = call.onFailure(new IOException("HTTP/1.1 header parser received no bytes"));

    // 2 requests so far; a retry would likely be sent twice too: 4 > maxAttempts.
    assertThat(d.retry()).isFalse();
    assertThat(d.reason()).isEqualTo(GiveUpReason.ATTEMPTS);
    assertThat(call.attempt()).isEqualTo(2);
  }

  @Test
  void withRoomForItTheRetryIsMadeAndCountedFromTheResend() throws Exception {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(5);
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    call.clientResendsOf(e -> 1);
    call.acquireBreaker();
    call.startAttempt();
    assertThat(call.onFailure(new IOException("HTTP/1.1 header parser received no bytes")).retry())
        .isTrue();
    call.acquireBreaker();
    assertThat(call.startAttempt()).isEqualTo(3);
    Decision d = call.onFailure(new IOException("HTTP/1.1 header parser received no bytes"));
    assertThat(d.reason()).isEqualTo(GiveUpReason.ATTEMPTS);
    assertThat(call.attempt()).isEqualTo(4);
  }

  @Test
  void aResendCountsAsARetryForTheBudgetAndAFailureForTheBreaker() throws Exception {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(2).minimumCalls(2);
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    call.clientResendsOf(e -> 1);
    call.acquireBreaker();
    call.startAttempt();
    call.onFailure(new IOException("HTTP/1.1 header parser received no bytes"));

    assertThat(budgetOf(f, call).retriesInWindow(f.clock.nanoTime())).isEqualTo(1);
    // Two failures, one call: a window of two is full of failures.
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
  }

  @Test
  void aRepeatOkHttpMadeAfterA503CountsLikeAResend() throws Exception {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(5);
    p.breaker.countWindow(2).minimumCalls(2);
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    call.startAttempt();
    call.clientRepeated(503);
    Decision d = call.onResponse(503, null);
    assertThat(call.attempt()).isEqualTo(2);
    assertThat(d.reason()).isEqualTo(GiveUpReason.CIRCUIT_OPEN);
    assertThat(budgetOf(f, call).retriesInWindow(f.clock.nanoTime())).isEqualTo(1);
  }

  /**
   * r18's finding: the client's own resends counted as steps of the backoff. OkHttp repeats a 408
   * by itself inside attempt 1; the first retry of the call then waited initial x multiplier (200
   * ms) where backoff.initial is "delay before the first retry" (100 ms). They still count as
   * attempts (maxAttempts), only not as retries of the call's for the backoff.
   */
  @Test
  void theBackoffCountsTheCallsOwnRetriesNotTheClientsResends() throws Exception {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofMillis(100), 2.0, Duration.ofSeconds(5));
    p.retry.maxAttempts(6);
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    call.beginAttempt();
    call.clientRepeated(408); // OkHttp sent the request again after a 408, by itself

    Decision first = call.onResponse(503, null);

    assertThat(call.attempt()).isEqualTo(2);
    assertThat(first.retry()).isTrue();
    assertThat(first.delayNanos()).isEqualTo(100_000_000L);

    call.waitsToRetry();
    call.beginAttempt(); // the call's first retry, its attempt 3
    Decision second = call.onResponse(503, null);
    assertThat(second.retry()).isTrue();
    assertThat(second.delayNanos()).isEqualTo(200_000_000L);
  }

  /** The same after a transport failure the client resent on its own (HttpClient 4.5). */
  @Test
  void theBackoffCountsNoResendTheClientMadeAfterAFailure() throws Exception {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofMillis(100), 2.0, Duration.ofSeconds(5));
    p.retry.maxAttempts(10);
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    call.clientResendsOf(e -> 2); // resent a dropped GET twice by itself
    call.beginAttempt();

    Decision d = call.onFailure(new SocketException("Connection reset"));

    assertThat(call.attempt()).isEqualTo(3);
    assertThat(d.retry()).isTrue();
    assertThat(d.delayNanos()).isEqualTo(100_000_000L);
  }

  @Test
  void aRetryLeavesRoomForEveryResendTheClientMadeWithoutAsking() throws Exception {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(6);
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    call.clientResendsOf(e -> 3); // HttpClient 4.5 resends a dropped GET 3 times by itself
    call.acquireBreaker();
    call.startAttempt();

    Decision d = call.onFailure(new SocketException("Connection reset"));

    // 4 requests so far; a retry would likely be 4 more: 8 > 6.
    assertThat(call.attempt()).isEqualTo(4);
    assertThat(d.reason()).isEqualTo(GiveUpReason.ATTEMPTS);
  }

  @Test
  void aResendTheClientAskedForCountsButARetryNeedsOnlyOneAttemptLeft() throws Exception {
    TestPolicy p = TestPolicy.create(); // maxAttempts 3
    p.retry.retryOnStatuses(StatusSet.of("502"));
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    call.startAttempt();

    // 503 is not ours to retry: HttpClient may resend it, and does.
    assertThat(call.clientMayResend(AttemptResult.response(503))).isTrue();
    call.clientRepeated(503);
    Decision d = call.onResponse(502, null);

    // 2 requests so far; the client asks before it resends in the retry: one more fits.
    assertThat(call.attempt()).isEqualTo(2);
    assertThat(d.retry()).isTrue();
  }

  @Test
  void aClientIsNotAllowedToResendWhatThePolicyRetries() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    call.startAttempt();

    assertThat(call.clientMayResend(AttemptResult.response(503))).isFalse();
    assertThat(call.onResponse(503, null).retry()).isTrue();
    assertThat(call.attempt()).isEqualTo(1);
  }

  @Test
  void inARetryTheClientsAllowedResendsUseUpTheAttemptsLeft() throws Exception {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(3).retryOnStatuses(StatusSet.of("502"));
    EngineFixture f = EngineFixture.of(p);
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    call.startAttempt();
    assertThat(call.onResponse(502, null).retry()).isTrue();
    call.acquireBreaker();
    call.startAttempt(); // attempt 2, a retry of ours

    assertThat(call.clientMayResend(AttemptResult.response(503))).isTrue(); // the third request
    assertThat(call.clientMayResend(AttemptResult.response(503))).isFalse(); // a fourth: no
  }

  @Test
  void inObserveModeTheClientResendsAsWithoutTheAgent() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create().build(), Mode.OBSERVE);
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    call.startAttempt();

    assertThat(call.clientMayResend(AttemptResult.response(503))).isTrue();
  }

  @Test
  void anAdapterThatCannotTellCountsNoResend() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.clientResendsOf(
        e -> {
          throw new IllegalStateException("adapter bug");
        });
    call.acquireBreaker();
    call.startAttempt();
    assertThat(call.onFailure(new SocketException("Connection reset")).retry()).isTrue();
    assertThat(call.attempt()).isEqualTo(1);
  }

  @Test
  void aHoldInsideAnotherLeavesTheOuterHoldInForce() throws Exception {
    // An adapter's step holds the call's end (holdEnd) and runs a step with a hold of its own
    // (OkHttp enqueue: permitThenBegin, then begin's for the breaker): the inner step's let-go
    // cleared the outer hold, and an end made after it was told as made, not as the caller heard.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall call = f.newCall(FakeRequest.get());
    call.acquireBreaker();
    call.startAttempt();
    assertThat(call.onResponse(503, null).retry()).isTrue();
    call.holdEnd(true);
    call.holdEnd(true);
    call.holdEnd(false);
    call.onAbandoned(); // ends the call, under the outer hold still
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP)).as("held").isEmpty();
    call.holdEnd(false);
    call.endHeard(GiveUpReason.CALL_TIMEOUT);
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP))
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.CALL_TIMEOUT);
  }
}
