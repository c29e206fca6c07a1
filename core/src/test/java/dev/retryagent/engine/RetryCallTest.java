package dev.retryagent.engine;

import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.testing.FakeRequest;
import java.net.SocketException;
import java.time.Duration;
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
}
