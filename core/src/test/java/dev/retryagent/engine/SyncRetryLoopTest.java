package dev.retryagent.engine;

import static dev.retryagent.engine.Script.fail;
import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeRequest;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SyncRetryLoopTest {
  private static final long S = 1_000_000_000L;

  @AfterEach
  void clearInterrupt() {
    Thread.interrupted();
  }

  /** A sleeper that ends a wait at once when it is asked to end early, and records each wait. */
  private static final class EndingSleeper implements Sleeper {
    final List<String> waits = new ArrayList<>();

    @Override
    public void sleep(long nanos) {
      waits.add("whole " + nanos);
    }

    @Override
    public void sleep(long nanos, java.util.function.BooleanSupplier endsEarly) {
      waits.add((endsEarly.getAsBoolean() ? "ended " : "may end ") + nanos);
    }
  }

  @Test
  void aWaitTheAdapterKeepsMayEndEarlyAndIsToldItsEnd() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    Script script = new Script(f.clock, respond(503), respond(200));
    KeepingWaitsCall call = f.engine.begin(new KeepingWaitsCall());
    EndingSleeper sleeper = new EndingSleeper();

    FakeResponse r = SyncRetryLoop.execute(call, sleeper, script::runSync, FakeResponse.ACCESS);

    assertThat(r.status).isEqualTo(200);
    assertThat(sleeper.waits).containsExactly("may end " + 100_000_000L);
    assertThat(call.told).isEqualTo(1);
    assertThat(call.kept).as("told its end").isEmpty();
  }

  @Test
  void aCallerWhoGaveUpBeforeTheWaitWasKeptEndsItAtOnce() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    Script script = new Script(f.clock, respond(503), fail(new IOException("closed")));
    KeepingWaitsCall call = f.engine.begin(new KeepingWaitsCall());
    call.giveUpAsTheWaitStarts = true;
    EndingSleeper sleeper = new EndingSleeper();

    assertThatThrownBy(
            () -> SyncRetryLoop.execute(call, sleeper, script::runSync, FakeResponse.ACCESS))
        .isInstanceOf(IOException.class)
        .hasMessage("closed");

    assertThat(sleeper.waits).containsExactly("ended " + 100_000_000L);
    assertThat(call.kept).isEmpty();
  }

  @Test
  void anInterruptDuringTheWaitStopsRetryingWithAnInterruptedException() {
    // issue 11: HttpClient.send declares InterruptedException and leaves the flag cleared; the
    // loop threw an InterruptedIOException (OkHttp's adapter now converts, as OkHttp reports it).
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    Script script = new Script(f.clock, respond(503), respond(200));
    RetryCall call = f.newCall(FakeRequest.get());

    assertThatThrownBy(
            () ->
                SyncRetryLoop.execute(
                    call,
                    interruptedInTheWait(f.engine.sleeper()),
                    script::runSync,
                    FakeResponse.ACCESS))
        .isExactlyInstanceOf(InterruptedException.class);

    assertThat(Thread.currentThread().isInterrupted())
        .as("the flag as the sleep left it, as HttpClient.send leaves it")
        .isFalse();
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(script.responsesServed().get(0).discards.get()).isEqualTo(1);
    assertThat(call.isFinished()).isTrue();
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @Test
  void theSystemSleeperIsInterruptibleToo() {
    // With the real sleeper an interrupt that is already pending ends the wait at once.
    RetryEngine engine =
        RetryEngine.builder()
            .sleeper(Sleeper.SYSTEM)
            .scheduler(new ManualScheduler(new FakeClock()))
            .policy(TestPolicy.create().build())
            .build();
    RetryCall call = engine.newCall(FakeRequest.get());
    long started = System.nanoTime();
    assertThatThrownBy(
            () ->
                SyncRetryLoop.execute(
                    call,
                    interruptedInTheWait(engine.sleeper()),
                    (n, t) -> FakeResponse.of(503),
                    FakeResponse.ACCESS))
        .isInstanceOf(InterruptedException.class);
    assertThat(Thread.currentThread().isInterrupted()).isFalse();
    assertThat(System.nanoTime() - started).isLessThan(5 * S);
  }

  /** {@code sleeper}, each of whose waits the caller interrupts as it starts. */
  private static Sleeper interruptedInTheWait(Sleeper sleeper) {
    return nanos -> {
      Thread.currentThread().interrupt();
      sleeper.sleep(nanos);
    };
  }

  @Test
  void anInterruptDuringAnAttemptTheClientFinishedEndsTheCallWithItsResponse() throws Exception {
    // Apache HttpClient and HttpURLConnection finish an attempt whatever the interrupt: without
    // the agent the caller gets the 503, its flag still set. The wait threw at once, and the
    // caller got an InterruptedException instead, the response discarded.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    Script script =
        new Script(
            f.clock, respond(503).during(() -> Thread.currentThread().interrupt()), respond(200));
    RetryCall call = f.newCall(FakeRequest.get());

    FakeResponse r =
        SyncRetryLoop.execute(call, f.engine.sleeper(), script::runSync, FakeResponse.ACCESS);

    assertThat(r.status).isEqualTo(503);
    assertThat(Thread.currentThread().isInterrupted()).as("the caller's flag, kept").isTrue();
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(r.discards.get()).as("handed over, not discarded").isZero();
    assertThat(call.isFinished()).isTrue();
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
    assertThat(f.listener.complete().status()).isEqualTo(503);
    assertThat(
            f.engine
                .budgetFor(call.request().target(), call.policy())
                .retriesInWindow(f.clock.nanoTime()))
        .as("the retry decided and never made goes back to the budget")
        .isZero();
  }

  @Test
  void anInterruptDuringAnAttemptThatFailedEndsTheCallWithItsFailure() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    IOException reset = new java.net.SocketException("Connection reset");
    Script script =
        new Script(
            f.clock, fail(reset).during(() -> Thread.currentThread().interrupt()), respond(200));
    RetryCall call = f.newCall(FakeRequest.get());

    assertThatThrownBy(
            () ->
                SyncRetryLoop.execute(
                    call, f.engine.sleeper(), script::runSync, FakeResponse.ACCESS))
        .isSameAs(reset);

    assertThat(Thread.currentThread().isInterrupted()).isTrue();
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @Test
  void anInterruptDuringARateLimitWaitMakesNoAttempt() {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ofSeconds(5));
    EngineFixture f = EngineFixture.of(p);
    Script first = new Script(f.clock, respond(200));
    Driver.SYNC.run(f, FakeRequest.get(), first);

    Thread.currentThread().interrupt();
    Script second = new Script(f.clock, respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), second);
    assertThat(r.error).isInstanceOf(InterruptedException.class);
    assertThat(second.attemptCount()).isZero();
  }

  @Test
  void anAttemptInterruptedInsideTheClientIsNotRetried() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    InterruptedException interrupted = new InterruptedException();
    Script script = new Script(f.clock, fail(interrupted), respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), script);
    assertThat(r.error).isSameAs(interrupted);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @Test
  void anInterruptedIoInsideTheClientIsNotRetried() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    InterruptedIOException interrupted = new InterruptedIOException();
    Script script = new Script(f.clock, fail(interrupted), respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), script);
    assertThat(r.error).isSameAs(interrupted);
    assertThat(script.attemptCount()).isEqualTo(1);
  }

  @Test
  void aBugInTheClientIsThrownAsItIsAndNotRetried() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    IllegalStateException bug = new IllegalStateException("boom");
    Script script = new Script(f.clock, fail(bug), respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), script);
    assertThat(r.error).isSameAs(bug);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.NON_RETRYABLE);
  }

  @Test
  void aFailureOfAnAttemptThatEndedTheCallIsThrownAsItIsUnrecordedAndNotRetried() {
    // An adapter that finds the failure the application's own (HttpClient's entity failed while
    // written) ends the call in the attempt (onAbandoned) and throws it: the loop took it for the
    // host's, a breaker failure and a retry of a reset, on a call already over.
    TestPolicy p = TestPolicy.create();
    p.breaker.countWindow(1).minimumCalls(1);
    EngineFixture f = EngineFixture.of(p);
    java.net.SocketException applications = new java.net.SocketException("Connection reset");
    RetryCall call = f.newCall(FakeRequest.get());
    int[] attempts = {0};
    Throwable thrown =
        org.assertj.core.api.Assertions.catchThrowable(
            () ->
                SyncRetryLoop.execute(
                    call,
                    f.sleeper,
                    (n, t) -> {
                      attempts[0]++;
                      call.onAbandoned();
                      throw applications;
                    },
                    FakeResponse.ACCESS));
    assertThat(thrown).isSameAs(applications);
    assertThat(attempts[0]).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
    assertThat(f.listener.events(RetryEvent.Type.RETRY)).isEmpty();
    // The breaker, which one failure would open, lets the host's next call through.
    Script script = new Script(f.clock, respond(200));
    assertThat(Driver.SYNC.run(f, FakeRequest.get(), script).error).isNull();
    assertThat(script.attemptCount()).isEqualTo(1);
  }

  @Test
  void anAttemptThatDecidedOnItsHeadersThenFailedEndsWithThatDecisionAsTheAsyncLoopDoes() {
    // java.net.http decides on a response's head (the breaker this 503 opened refuses its retry),
    // then the body it discards fails (a reset): the call is over, but with the decision's
    // CircuitBreakerOpenException, the failure suppressed, as AsyncRetryLoop ends it. Only a call
    // that ended in the attempt without a decision (an adapter's onAbandoned) throws the failure
    // as it is.
    TestPolicy p = TestPolicy.create();
    p.breaker.countWindow(1).minimumCalls(1);
    EngineFixture f = EngineFixture.of(p);
    java.net.SocketException reset = new java.net.SocketException("Connection reset");
    RetryCall call = f.newCall(FakeRequest.get());
    Throwable thrown =
        org.assertj.core.api.Assertions.catchThrowable(
            () ->
                SyncRetryLoop.execute(
                    call,
                    f.sleeper,
                    (n, t) -> {
                      assertThat(call.onResponse(503, null).error())
                          .isInstanceOf(CircuitBreakerOpenException.class);
                      throw reset;
                    },
                    FakeResponse.ACCESS));
    assertThat(thrown).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(thrown.getSuppressed()).contains(reset);
  }

  @Test
  void theWaitForARetryCountsFromTheDecisionNotFromTheResponsesRelease() throws Exception {
    // Releasing the 503 for its retry took 30 ms (OkHttp's discard of the rest of a body takes up
    // to 100 ms, a copy's peek as long): the wait of 100 ms began after it, so the retry started
    // 130 ms after the decision, which had kept it before the caller's timeout (an execute()'s
    // callTimeout then ran out during the wait, heard only at the wait's next look). Now the wait
    // is what is left of the 100 ms, as an enqueued call's, scheduled before the release.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    Script script = new Script(f.clock, respond(503), respond(200));
    ResponseAccess<FakeResponse> slowRelease =
        FakeResponse.discarding(() -> f.clock.advance(30_000_000L));
    EndingSleeper sleeper = new EndingSleeper();

    FakeResponse r =
        SyncRetryLoop.execute(f.newCall(FakeRequest.get()), sleeper, script::runSync, slowRelease);

    assertThat(r.status).isEqualTo(200);
    assertThat(sleeper.waits).containsExactly("whole " + 70_000_000L);
  }

  @Test
  void aResponseAccessThatThrowsNeverCostsTheCallerItsResponse() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    FakeResponse weird = FakeResponse.of(503);
    ResponseAccess<FakeResponse> broken =
        new ResponseAccess<FakeResponse>() {
          @Override
          public int status(FakeResponse r) {
            throw new IllegalStateException("adapter bug");
          }

          @Override
          public String header(FakeResponse r, String name) {
            return null;
          }

          @Override
          public void discard(FakeResponse r) {
            r.discards.incrementAndGet();
          }
        };
    RetryCall call = f.newCall(FakeRequest.get());
    FakeResponse got = SyncRetryLoop.execute(call, f.sleeper, (n, t) -> weird, broken);
    assertThat(got).isSameAs(weird);
    assertThat(weird.discards.get()).isZero();
    assertThat(call.isFinished()).isTrue();
  }

  @Test
  void theBreakerExceptionOfAnEndedRetryCarriesTheLastFailure() {
    TestPolicy p = TestPolicy.create();
    p.breaker.countWindow(2).minimumCalls(2);
    EngineFixture f = EngineFixture.of(p);
    java.net.SocketException first = new java.net.SocketException("Connection reset");
    java.net.SocketException reset = new java.net.SocketException("Connection reset");
    Script script = new Script(f.clock, fail(first), fail(reset));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), script);
    assertThat(r.error).isInstanceOf(CircuitBreakerOpenException.class);
    // The last failure, and (issue 14) every earlier attempt's before it.
    assertThat(r.error.getSuppressed()).containsExactly(first, reset);
  }

  @Test
  void waitsGoThroughTheGivenSleeper() throws Exception {
    Policy policy = TestPolicy.create().build();
    EngineFixture f = EngineFixture.of(policy);
    RecordingSleeper other = new RecordingSleeper(f.clock);
    Script script = new Script(f.clock, respond(503), respond(503), respond(200));
    RetryCall call = f.newCall(FakeRequest.get());
    SyncRetryLoop.execute(call, other, script::runSync, FakeResponse.ACCESS);
    assertThat(other.sleeps()).containsExactly(100_000_000L, 200_000_000L);
    assertThat(f.sleeper.sleeps()).isEmpty();
  }
}
