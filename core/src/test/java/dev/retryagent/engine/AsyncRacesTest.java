package dev.retryagent.engine;

import static dev.retryagent.engine.RetryEvent.Type.ATTEMPT;
import static dev.retryagent.engine.RetryEvent.Type.CALL_COMPLETE;
import static dev.retryagent.engine.RetryEvent.Type.GIVE_UP;
import static dev.retryagent.engine.RetryEvent.Type.RETRY;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.testing.FakeRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The interleavings of an asynchronous call's cancel with its retry's timer, its attempt's
 * completion and the scheduler's refusal, each order forced on one thread by a seam (the attempt's
 * start, the scheduler, a listener) rather than by a stress loop. In every order: the call ends
 * once (one CALL_COMPLETE), no retry stays pending, no response is left unreleased or released
 * twice, and a retry not made goes back to the budget.
 */
class AsyncRacesTest {
  private static final long MS = 1_000_000L;

  private final AtomicReference<CompletableFuture<FakeResponse>> result = new AtomicReference<>();
  private final List<CompletableFuture<FakeResponse>> started = new ArrayList<>();

  /**
   * Attempts whose futures the test completes ({@link #started}); the caller cancels as attempt
   * {@code cancelAt} starts (0: never).
   */
  private AsyncRetryLoop.Attempt<FakeResponse> attempts(int cancelAt) {
    return (n, timeout) -> {
      CompletableFuture<FakeResponse> a = new CompletableFuture<>();
      started.add(a);
      if (n == cancelAt) {
        result.get().cancel(true); // the caller, at this moment
      }
      return a;
    };
  }

  private RetryBudget budget(EngineFixture f, RetryCall call) {
    return f.engine.budgetFor(call.request().target(), call.policy());
  }

  @Test
  void aCancelAsTheRetrysAttemptStartsAfterItsTimerFiredReachesThatAttempt() {
    // The timer fired and the retry's attempt is being started when the caller cancels: the
    // attempt the client just began must be cancelled, not left running for nobody.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    AsyncRetryLoop.Attempt<FakeResponse> attempts = attempts(2);
    RetryCall call = f.newCall(FakeRequest.get());
    result.set(AsyncRetryLoop.execute(f.engine, call, attempts, FakeResponse.ACCESS));
    FakeResponse unavailable = FakeResponse.of(503);
    started.get(0).complete(unavailable);

    f.scheduler.advance(100 * MS); // the timer fires

    assertThat(started).hasSize(2);
    assertThat(started.get(1)).isCancelled();
    assertThat(result.get()).isCancelled();
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
    assertThat(f.listener.types()).containsExactly(ATTEMPT, RETRY, ATTEMPT, GIVE_UP, CALL_COMPLETE);
    assertThat(f.engine.pendingAsyncRetries()).isZero();
    assertThat(f.scheduler.pending()).isZero();
    assertThat(unavailable.discards.get()).isEqualTo(1);
  }

  @Test
  void aCancelAfterTheTimerFiredButBeforeItsTaskRanLeavesTheTaskNothingToDo() {
    // The timer fired (withdrawing it fails) and the cancel lands before its task looks: the task
    // finds the wait over and starts no attempt.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.scheduler.cancelDoesNothing();
    AsyncRetryLoop.Attempt<FakeResponse> attempts = attempts(0);
    RetryCall call = f.newCall(FakeRequest.get());
    result.set(AsyncRetryLoop.execute(f.engine, call, attempts, FakeResponse.ACCESS));
    started.get(0).complete(FakeResponse.of(503));

    assertThat(result.get().cancel(true)).isTrue();
    f.scheduler.advance(100 * MS); // the task the cancel could not withdraw runs

    assertThat(started).hasSize(1);
    assertThat(f.listener.types()).containsExactly(ATTEMPT, RETRY, GIVE_UP, CALL_COMPLETE);
    assertThat(f.engine.pendingAsyncRetries()).isZero();
    assertThat(budget(f, call).retriesInWindow(f.clock.nanoTime())).as("given back").isZero();
  }

  @Test
  void aCancelWhileTheSchedulerRefusesTheRetrysWaitEndsTheCallOnceAndReleasesTheResponse() {
    // The scheduler refuses the wait (shut down, out of threads) just as the caller cancels: the
    // call ends once, cancelled, and the response meant for a caller who left is released.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    Scheduler refusingAsTheCallerCancels =
        (task, delayNanos) -> {
          result.get().cancel(true);
          throw new RejectedExecutionException("shut down");
        };
    List<String> errors = new ArrayList<>();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(f.clock)
            .sleeper(f.sleeper)
            .scheduler(refusingAsTheCallerCancels)
            .errors(errors::add)
            .policy(TestPolicy.create().build())
            .listener(f.listener)
            .build();
    AsyncRetryLoop.Attempt<FakeResponse> attempts = attempts(0);
    RetryCall call = engine.newCall(FakeRequest.get());
    result.set(AsyncRetryLoop.execute(engine, call, attempts, FakeResponse.ACCESS));
    FakeResponse unavailable = FakeResponse.of(503);

    started.get(0).complete(unavailable);

    assertThat(result.get()).isCancelled();
    assertThat(started).hasSize(1);
    assertThat(unavailable.discards.get()).isEqualTo(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
    assertThat(engine.pendingAsyncRetries()).isZero();
    assertThat(errors).singleElement().asString().contains("scheduling a retry's wait");
    assertThat(
            engine
                .budgetFor(call.request().target(), call.policy())
                .retriesInWindow(f.clock.nanoTime()))
        .as("given back")
        .isZero();
  }
}
