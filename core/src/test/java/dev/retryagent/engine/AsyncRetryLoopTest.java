package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.testing.FakeRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class AsyncRetryLoopTest {
  private static final long MS = 1_000_000L;
  private static final long S = 1_000_000_000L;

  /** Attempts whose futures the test completes by hand. */
  private static final class ManualAttempts implements AsyncRetryLoop.Attempt<FakeResponse> {
    final List<CompletableFuture<FakeResponse>> started = new ArrayList<>();
    boolean cancellable = true;
    // Run inside start(), before the attempt's future is returned (null: nothing).
    Runnable whileStarting;

    @Override
    public CompletableFuture<FakeResponse> start(int attempt, long timeoutNanos) {
      CompletableFuture<FakeResponse> f =
          cancellable
              ? new CompletableFuture<>()
              : new CompletableFuture<FakeResponse>() {
                @Override
                public boolean cancel(boolean mayInterruptIfRunning) {
                  return false; // a client that cannot abort an exchange in flight
                }
              };
      started.add(f);
      if (whileStarting != null) {
        whileStarting.run();
      }
      return f;
    }

    CompletableFuture<FakeResponse> last() {
      return started.get(started.size() - 1);
    }
  }

  private final ManualAttempts attempts = new ManualAttempts();

  private CompletableFuture<FakeResponse> start(EngineFixture f, RequestInfo request) {
    return AsyncRetryLoop.execute(f.engine, f.newCall(request), attempts, FakeResponse.ACCESS);
  }

  /** Threads other than this one that are inside the engine right now. */
  private static List<String> otherThreadsInTheEngine() {
    List<String> found = new ArrayList<>();
    for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
      if (e.getKey() == Thread.currentThread()) {
        continue;
      }
      for (StackTraceElement frame : e.getValue()) {
        if (frame.getClassName().startsWith("dev.retryagent.engine.")) {
          found.add(e.getKey().getName() + " at " + frame);
          break;
        }
      }
    }
    return found;
  }

  @Test
  void aPendingRetryHoldsNoThreadUntilItsTimeComes() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    FakeResponse unavailable = FakeResponse.of(503);
    attempts.last().complete(unavailable);

    assertThat(result).isNotDone();
    assertThat(f.engine.pendingAsyncRetries()).isEqualTo(1);
    assertThat(f.scheduler.pending()).isEqualTo(1);
    assertThat(f.scheduler.delays()).containsExactly(100 * MS);
    assertThat(unavailable.discards.get()).isEqualTo(1);
    assertThat(otherThreadsInTheEngine()).isEmpty();
    assertThat(f.sleeper.sleeps()).isEmpty();

    f.scheduler.advance(100 * MS - 1);
    assertThat(attempts.started).hasSize(1);
    assertThat(result).isNotDone();

    f.scheduler.advance(1);
    assertThat(attempts.started).hasSize(2);
    assertThat(f.engine.pendingAsyncRetries()).isZero();
    FakeResponse ok = FakeResponse.of(200);
    attempts.last().complete(ok);
    assertThat(result).isCompletedWithValue(ok);
    assertThat(ok.discards.get()).isZero();
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aCancelBeforeTheGiveBackIsHeldReachesItAsTheCallerAskedIt(boolean mayInterrupt) {
    // A retry's wait that ends late gives the kept response back (ResponseAccess.giveBack). A
    // cancel of the caller's future made while the give-back is being made finds nothing in
    // flight; the loop then cancels the give-back as the caller asked: cancel(false) leaves a
    // java.net.http exchange alone, so the give-back's replay too. (Before: always cancel(true).)
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    OwnView call =
        f.engine.begin(
            new OwnView() {
              @Override
              public boolean retryTooLate() {
                return true; // the wait ended past the call's deadline
              }
            });
    List<Boolean> giveBackCancels = new ArrayList<>();
    CompletableFuture<?>[] caller = new CompletableFuture<?>[1];
    ResponseAccess<FakeResponse> access =
        new ResponseAccess<FakeResponse>() {
          @Override
          public int status(FakeResponse response) {
            return FakeResponse.ACCESS.status(response);
          }

          @Override
          public String header(FakeResponse response, String name) {
            return FakeResponse.ACCESS.header(response, name);
          }

          @Override
          public void discard(FakeResponse response) {
            FakeResponse.ACCESS.discard(response);
          }

          @Override
          public FakeResponse copyToGiveBack(FakeResponse response) {
            return FakeResponse.of(response.status);
          }

          @Override
          public CompletionStage<FakeResponse> giveBack(FakeResponse copy) {
            caller[0].cancel(mayInterrupt); // the application's cancel, in that instant
            return new CompletableFuture<FakeResponse>() {
              @Override
              public boolean cancel(boolean interrupt) {
                giveBackCancels.add(interrupt);
                return super.cancel(interrupt);
              }
            };
          }
        };
    caller[0] = AsyncRetryLoop.execute(f.engine, call, attempts, access);
    attempts.last().complete(FakeResponse.of(503));
    f.scheduler.advance(100 * MS);

    assertThat(attempts.started).as("no retry after a late wait").hasSize(1);
    assertThat(caller[0]).isCancelled();
    assertThat(giveBackCancels).containsExactly(mayInterrupt);
  }

  @Test
  void theFirstAttemptStartsOnTheCallersThread() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    start(f, FakeRequest.get());
    assertThat(attempts.started).hasSize(1);
    assertThat(f.scheduler.ran()).isZero();
  }

  @Test
  void cancellingTheCallersFutureCancelsThePendingRetry() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    attempts.last().complete(FakeResponse.of(503));
    assertThat(f.engine.pendingAsyncRetries()).isEqualTo(1);

    assertThat(result.cancel(true)).isTrue();

    assertThat(f.engine.pendingAsyncRetries()).isZero();
    assertThat(f.scheduler.pending()).as("the task was withdrawn").isZero();
    f.scheduler.advance(3600 * S);
    assertThat(attempts.started).hasSize(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @Test
  void aWaitEndedEarlyRunsItsTaskAtOnceOnTheSchedulerAndIsToldItsEnd() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    KeepingWaitsCall call = f.engine.begin(new KeepingWaitsCall());
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(f.engine, call, attempts, FakeResponse.ACCESS);
    attempts.last().complete(FakeResponse.of(503));
    assertThat(call.kept).hasSize(1);
    assertThat(f.scheduler.delays()).containsExactly(100 * MS);

    call.cancelled = true; // the application's shutdownNow(): then its adapter ends the wait
    call.kept.get(0).endNow();

    assertThat(f.scheduler.delays()).containsExactly(100 * MS, 0L);
    assertThat(f.scheduler.pending()).as("the first task withdrawn").isEqualTo(1);
    f.scheduler.advance(0);
    assertThat(attempts.started).as("the next step ran without the wait").hasSize(2);
    assertThat(call.kept).as("told its end").isEmpty();
    attempts.last().completeExceptionally(new java.io.IOException("closed"));
    assertThat(result).isCompletedExceptionally();
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @Test
  void aWaitOverOrCancelledIsToldItsEndAndEndingItLaterDoesNothing() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    KeepingWaitsCall call = f.engine.begin(new KeepingWaitsCall());
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(f.engine, call, attempts, FakeResponse.ACCESS);
    attempts.last().complete(FakeResponse.of(503));
    RetryCall.Wait first = call.kept.get(0);
    f.scheduler.advance(100 * MS);
    assertThat(call.kept).isEmpty();
    first.endNow(); // late: nothing pending
    assertThat(f.scheduler.pending()).isZero();

    attempts.last().complete(FakeResponse.of(503));
    assertThat(call.kept).hasSize(1);
    result.cancel(true);

    assertThat(call.kept).isEmpty();
    assertThat(call.told).isEqualTo(2);
    assertThat(attempts.started).hasSize(2);
  }

  @Test
  void aCallerWhoGaveUpBeforeItsWaitWasKeptHasItEndedAtOnceWithoutTheBreakersSay() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    KeepingWaitsCall call = f.engine.begin(new KeepingWaitsCall());
    call.giveUpAsTheWaitStarts = true;
    AsyncRetryLoop.execute(f.engine, call, attempts, FakeResponse.ACCESS);
    attempts.last().complete(FakeResponse.of(503));

    assertThat(f.scheduler.delays()).containsExactly(100 * MS, 0L);
    f.scheduler.advance(0);

    assertThat(attempts.started).hasSize(2);
    assertThat(call.kept).isEmpty();
  }

  @Test
  void aPendingRetryThatFiresAfterCancellationDoesNothing() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.scheduler.cancelDoesNothing(); // the timer already took the task
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    attempts.last().complete(FakeResponse.of(503));

    result.cancel(false);
    assertThat(f.engine.pendingAsyncRetries()).isZero();
    f.scheduler.runUntilIdle();

    assertThat(f.scheduler.ran()).isEqualTo(1);
    assertThat(attempts.started).as("no attempt after cancellation").hasSize(1);
    assertThat(f.engine.pendingAsyncRetries()).as("never counted twice").isZero();
  }

  @Test
  void cancellingTheCallersFutureCancelsTheAttemptInFlight() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    CompletableFuture<FakeResponse> inFlight = attempts.last();

    result.cancel(true);

    assertThat(inFlight).isCancelled();
    f.scheduler.runUntilIdle();
    assertThat(attempts.started).hasSize(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
    assertThat(f.listener.events(RetryEvent.Type.RETRY)).isEmpty();
  }

  @Test
  void aResponseThatArrivesAfterCancellationIsDiscarded() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    attempts.cancellable = false;
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    result.cancel(true);
    FakeResponse late = FakeResponse.of(200);
    attempts.last().complete(late);
    assertThat(late.discards.get()).isEqualTo(1);
    assertThat(attempts.started).hasSize(1);
  }

  @Test
  void aCancellationThatLandsWhileTheLastResponseIsJudgedStillDiscardsIt() {
    // The caller cancels (from another thread, say) after the loop saw the future not done but
    // before it completed it: the response can no longer reach the caller and must be discarded.
    List<CompletableFuture<FakeResponse>> results = new ArrayList<>();
    RetryListener cancelOnComplete =
        new RetryListener() {
          @Override
          public void onCallComplete(RetryEvent event) {
            results.get(0).cancel(true);
          }
        };
    EngineFixture f = EngineFixture.withListener(TestPolicy.create().build(), cancelOnComplete);
    results.add(start(f, FakeRequest.get()));
    FakeResponse ok = FakeResponse.of(200);
    attempts.last().complete(ok);
    assertThat(results.get(0)).isCancelled();
    assertThat(ok.discards.get()).isEqualTo(1);
  }

  private static TestPolicy halfOpenWithOneTrial() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(1).minimumCalls(1).halfOpenCalls(1).openFor(Duration.ofSeconds(30));
    return p;
  }

  /** Opens the breaker with one failed call and moves the clock to the end of openFor. */
  private void openThenWait(EngineFixture f) {
    start(f, FakeRequest.get());
    attempts.last().complete(FakeResponse.of(503));
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
    f.clock.advance(30 * S);
  }

  @Test
  void aCancelledTrialGivesItsBreakerPermitBack() {
    EngineFixture f = EngineFixture.of(halfOpenWithOneTrial());
    openThenWait(f);
    CompletableFuture<FakeResponse> trial = start(f, FakeRequest.get());
    assertThat(attempts.started).hasSize(2);
    trial.cancel(true);

    CompletableFuture<FakeResponse> next = start(f, FakeRequest.get());
    assertThat(attempts.started).as("the trial permit is free again").hasSize(3);
    attempts.last().complete(FakeResponse.of(200));
    assertThat(next).isCompletedWithValueMatching(r -> r.status == 200);
  }

  @Test
  void aCallerThatStopsWaitingOnItsOwnStillFreesTheBreakerPermit() throws Exception {
    // orTimeout() and completeExceptionally() end the caller's future without cancel(); the
    // attempt still in flight must not keep its half-open trial permit forever.
    EngineFixture f = EngineFixture.of(halfOpenWithOneTrial());
    openThenWait(f);
    CompletableFuture<FakeResponse> trial = start(f, FakeRequest.get());
    trial.completeExceptionally(new TimeoutException()); // what orTimeout does
    FakeResponse late = FakeResponse.of(200);
    attempts.last().complete(late);
    assertThat(late.discards.get()).isEqualTo(1);

    CompletableFuture<FakeResponse> next = start(f, FakeRequest.get());
    assertThat(attempts.started).as("the breaker lets a call through again").hasSize(3);
    attempts.last().complete(FakeResponse.of(200));
    assertThat(next.get().status).isEqualTo(200);
    assertThat(f.listener.events(RetryEvent.Type.CALL_COMPLETE)).hasSize(3);
  }

  @Test
  void aRetryScheduledBeforeTheCallerStoppedWaitingStartsNoAttempt() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    attempts.last().complete(FakeResponse.of(503));
    result.completeExceptionally(new TimeoutException());
    f.scheduler.runUntilIdle();
    assertThat(attempts.started).hasSize(1);
    assertThat(f.engine.pendingAsyncRetries()).isZero();
    assertThat(f.listener.events(RetryEvent.Type.CALL_COMPLETE)).hasSize(1);
  }

  /**
   * orTimeout or completeExceptionally during a retry's wait ends the call now, not when the wait
   * would have ended: before, the call stayed counted in pendingAsyncRetries (and held its client's
   * close()) until the timer fired.
   */
  @Test
  void aCallerThatStopsWaitingDuringARetrysWaitEndsTheWaitNow() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    attempts.last().complete(FakeResponse.of(503));
    assertThat(f.engine.pendingAsyncRetries()).isEqualTo(1);

    result.completeExceptionally(new TimeoutException());
    f.scheduler.advance(0); // the wait's task, run at once on the scheduler

    assertThat(f.engine.pendingAsyncRetries()).isZero();
    assertThat(f.scheduler.pending()).isZero();
    assertThat(f.listener.events(RetryEvent.Type.CALL_COMPLETE)).hasSize(1);
    f.scheduler.advance(3600 * S);
    assertThat(attempts.started).hasSize(1);
  }

  /** A retry in flight when the caller stops waiting without cancel(): nobody reads it. */
  @Test
  void aCallerThatStopsWaitingDuringARetryCancelsThatRetry() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    CompletableFuture<FakeResponse> first = attempts.last();
    first.complete(FakeResponse.of(503));
    f.scheduler.advance(100 * MS);
    assertThat(attempts.started).hasSize(2);

    result.complete(FakeResponse.of(204)); // completeOnTimeout

    assertThat(attempts.last().isCancelled()).isTrue();
    assertThat(f.listener.events(RetryEvent.Type.CALL_COMPLETE)).hasSize(1);
  }

  /**
   * The caller completes its future while a retry is being started, after the loop's look before
   * the attempt and before the attempt is in flight: endedByCaller then finds no retry to cancel,
   * so the loop cancels it once it is (r34; before b0028998 it ran on, unread).
   */
  @Test
  void aCallerThatStopsWaitingAsARetryStartsCancelsThatRetry() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    attempts.last().complete(FakeResponse.of(503));
    attempts.whileStarting = () -> result.complete(FakeResponse.of(204)); // completeOnTimeout
    f.scheduler.advance(100 * MS);
    assertThat(attempts.started).hasSize(2);

    assertThat(attempts.last().isCancelled()).isTrue();
    assertThat(result.join().status).isEqualTo(204);
    assertThat(f.listener.events(RetryEvent.Type.CALL_COMPLETE)).hasSize(1);
  }

  /** The first attempt is the application's own: left alone, as without the agent. */
  @Test
  void aCallerThatStopsWaitingDuringTheFirstAttemptLeavesItAlone() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    result.completeExceptionally(new TimeoutException());
    assertThat(attempts.last().isDone()).isFalse();
  }

  @Test
  void aRateLimitWaitIsScheduledAndIsNotARetry() {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ofSeconds(2));
    EngineFixture f = EngineFixture.of(p);
    start(f, FakeRequest.get());
    attempts.last().complete(FakeResponse.of(200));

    CompletableFuture<FakeResponse> second = start(f, FakeRequest.get());
    assertThat(attempts.started).hasSize(1);
    assertThat(f.scheduler.delays()).containsExactly(1 * S);
    assertThat(f.engine.pendingAsyncRetries()).isZero();
    f.scheduler.advance(1 * S);
    assertThat(attempts.started).hasSize(2);
    attempts.last().complete(FakeResponse.of(200));
    assertThat(second).isDone();
  }

  @Test
  void aRetryWhoseWaitTheSchedulerRefusesEndsWithTheAttemptsResponseWithoutRetryingAtOnce() {
    // A pool that cannot start a thread (the JVM out of them), or a scheduler shut down, throws
    // from schedule(). The retry went at once, without its backoff, and each retry after it too: a
    // failing host got maxAttempts requests back to back. Without the agent the caller has the
    // attempt's response: it gets it, and the retry goes back to the budget.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.scheduler.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    FakeResponse unavailable = FakeResponse.of(503);
    attempts.last().complete(unavailable);

    assertThat(attempts.started).as("no retry at once").hasSize(1);
    assertThat(result).isCompletedWithValue(unavailable);
    assertThat(unavailable.discards.get()).isZero();
    assertThat(f.engine.pendingAsyncRetries()).isZero();
    assertThat(f.listener.events(RetryEvent.Type.CALL_COMPLETE)).hasSize(1);
  }

  @Test
  void aWaitTheSchedulerRefusedIsToldItsEnd() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.scheduler.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));
    KeepingWaitsCall call = f.engine.begin(new KeepingWaitsCall());
    AsyncRetryLoop.execute(f.engine, call, attempts, FakeResponse.ACCESS);
    attempts.last().complete(FakeResponse.of(503));
    assertThat(attempts.started).hasSize(1);
    assertThat(call.kept).as("let go of").isEmpty();
  }

  @Test
  void aRetryWhoseWaitTheSchedulerRefusesEndsWithTheAttemptsFailureAsTheClientGaveIt() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.scheduler.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    java.net.SocketException reset = new java.net.SocketException("Connection reset");
    attempts.last().completeExceptionally(reset);
    assertThat(attempts.started).hasSize(1);
    assertThatThrownBy(result::join).hasCause(reset);
  }

  @Test
  void aRateLimitWaitTheSchedulerRefusesEndsTheCallRateLimitedNotOverTheLimit() {
    // Before, the attempt started at once, without its wait: while the scheduler refused, every
    // call went over the host's limit. Now the call ends as one the limit gives no permit, and
    // the permit it reserved goes back: the next call waits for the same token, not the one after.
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ofSeconds(2));
    EngineFixture f = EngineFixture.of(p);
    start(f, FakeRequest.get());
    attempts.last().complete(FakeResponse.of(200));
    f.scheduler.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));

    CompletableFuture<FakeResponse> second = start(f, FakeRequest.get());
    assertThat(attempts.started).as("not over the limit").hasSize(1);
    assertThatThrownBy(second::join)
        .hasCauseInstanceOf(RateLimitedException.class)
        .hasMessageContaining("the wait for a permit could not be scheduled");
    assertThat(f.listener.events(RetryEvent.Type.CALL_COMPLETE))
        .last()
        .extracting(RetryEvent::reason)
        .isEqualTo(GiveUpReason.RATE_LIMITED);

    f.scheduler.refuse(null);
    start(f, FakeRequest.get());
    assertThat(f.scheduler.delays()).as("the refused call's token back").containsExactly(1 * S);
  }

  @Test
  void aRetrysRateLimitWaitTheSchedulerRefusesEndsTheCallRateLimitedNotOverTheLimit() {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ofSeconds(2));
    EngineFixture f = EngineFixture.of(p);
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    attempts.last().complete(FakeResponse.of(503));
    assertThat(f.scheduler.delays()).as("the retry's backoff").hasSize(1);
    f.scheduler.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));
    f.scheduler.advance(f.scheduler.delays().get(0)); // the backoff ends: the permit's wait next

    assertThat(attempts.started).as("not over the limit").hasSize(1);
    assertThatThrownBy(result::join).hasCauseInstanceOf(RateLimitedException.class);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.RATE_LIMITED);
    assertThat(f.engine.pendingAsyncRetries()).isZero();
  }

  /**
   * As a retry the rate limit refuses, a retry whose permit's wait the scheduler refuses ends the
   * call with the response before it (here from its copy), as without the agent, where before the
   * caller got the rate limit's exception. Its reserved permit goes back: the next call waits for
   * the same token.
   */
  @Test
  void aRetrysRateLimitWaitTheSchedulerRefusesEndsTheCallWithTheResponseBeforeIt() {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ofSeconds(2));
    EngineFixture f = EngineFixture.of(p);
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(
            f.engine, f.newCall(FakeRequest.get()), attempts, FakeResponse.COPYING);
    attempts.last().complete(FakeResponse.of(503));
    f.scheduler.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));
    f.scheduler.advance(f.scheduler.delays().get(0)); // the backoff ends: the permit's wait next

    assertThat(attempts.started).as("not over the limit").hasSize(1);
    assertThat(result.join().status).isEqualTo(503);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.RATE_LIMITED);
    assertThat(f.listener.complete().status()).isEqualTo(503);
    assertThat(f.engine.pendingAsyncRetries()).isZero();

    f.scheduler.refuse(null);
    start(f, FakeRequest.get());
    assertThat(f.scheduler.delays())
        .as("the refused retry's token back")
        .containsExactly(100 * MS, 900 * MS);
  }

  @Test
  void aWaitEndedEarlyWhenTheSchedulerRefusesEndsAtItsTimeAsScheduled() {
    // endNow withdrew the wait's task before it scheduled the one to run at once: refused, the
    // call had no task left, and its future never completed.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    KeepingWaitsCall call = f.engine.begin(new KeepingWaitsCall());
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(f.engine, call, attempts, FakeResponse.ACCESS);
    attempts.last().complete(FakeResponse.of(503));
    f.scheduler.refuse(new java.util.concurrent.RejectedExecutionException("no thread"));

    call.cancelled = true;
    call.kept.get(0).endNow();

    assertThat(f.scheduler.pending()).as("the wait's task kept").isEqualTo(1);
    f.scheduler.refuse(null);
    f.scheduler.advance(100 * MS);
    assertThat(attempts.started).hasSize(2);
    attempts.last().completeExceptionally(new java.io.IOException("closed"));
    assertThat(result).isCompletedExceptionally();
  }

  @Test
  void cancellingDuringARateLimitWaitStartsNoAttempt() {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ofSeconds(2));
    EngineFixture f = EngineFixture.of(p);
    start(f, FakeRequest.get());
    attempts.last().complete(FakeResponse.of(200));
    CompletableFuture<FakeResponse> second = start(f, FakeRequest.get());
    second.cancel(true);
    assertThat(f.scheduler.pending()).isZero();
    f.scheduler.advance(10 * S);
    assertThat(attempts.started).hasSize(1);
  }

  @Test
  void aFailureWrappedInCompletionExceptionIsClassifiedByItsCause() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.get());
    attempts
        .last()
        .completeExceptionally(
            new java.util.concurrent.CompletionException(
                new java.net.SocketException("Connection reset")));
    f.scheduler.runUntilIdle();
    assertThat(attempts.started).hasSize(2);
    attempts.last().complete(FakeResponse.of(200));
    assertThat(result.get().status).isEqualTo(200);
  }

  @Test
  void theCallerSeesTheUnwrappedFinalFailure() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.post());
    java.net.SocketException reset = new java.net.SocketException("Connection reset");
    attempts.last().completeExceptionally(new java.util.concurrent.CompletionException(reset));
    assertThatThrownBy(result::get).isInstanceOf(ExecutionException.class).cause().isSameAs(reset);
  }

  // --- the caller's future shaped like the client's own (issue 11: java.net.http)

  /** Runs what it is given when the test says so, recording it. */
  private static final class HeldExecutor implements java.util.concurrent.Executor {
    final List<Runnable> held = new ArrayList<>();

    @Override
    public void execute(Runnable r) {
      held.add(r);
    }

    void runAll() {
      new ArrayList<>(held).forEach(Runnable::run);
      held.clear();
    }
  }

  private CompletableFuture<FakeResponse> start(EngineFixture f, AsyncRetryLoop.Style style) {
    return AsyncRetryLoop.execute(
        f.engine, f.newCall(FakeRequest.get()), attempts, FakeResponse.ACCESS, style);
  }

  @Test
  void cancellingADependentStageCancelsTheCallWhenTheStyleSaysSo() {
    // java.net.http since 16: f.thenApply(..).cancel(true) cancels the exchange.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, AsyncRetryLoop.Style.of(true, null));
    attempts.last().complete(FakeResponse.of(503));
    CompletableFuture<String> dependent = result.thenApply(r -> "x").thenApply(x -> x);

    assertThat(dependent.cancel(true)).isTrue();

    assertThat(dependent).isCancelled();
    assertThat(result).isCancelled();
    f.scheduler.runUntilIdle();
    assertThat(attempts.started).as("the pending retry never runs").hasSize(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @Test
  void cancellingADependentStageReachesTheAttemptInFlight() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, AsyncRetryLoop.Style.of(true, null));
    result.whenComplete((r, t) -> {}).cancel(true);
    assertThat(attempts.last()).isCancelled();
  }

  /**
   * An attempt's future as {@code java.net.http}'s (16+): {@code cancel(true)} cancels the exchange
   * first, whose failure completes the future before it is cancelled (on JDK 25, nearly always).
   */
  private static final class FailsOnCancel extends CompletableFuture<FakeResponse> {
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      if (mayInterruptIfRunning) {
        completeExceptionally(
            new java.util.concurrent.CompletionException(
                new java.util.concurrent.CancellationException("Request cancelled")));
      }
      return super.cancel(mayInterruptIfRunning) || mayInterruptIfRunning;
    }
  }

  @Test
  void aCancelEndsAsTheAttemptInFlightEndedWhenTheStyleSaysSo() {
    // The caller's future was cancelled (a bare CancellationException from get()) where the JDK's
    // own ended with the exchange's failure: get() throws ExecutionException(CancellationException
    // ("Request cancelled")), isCancelled() is false.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    List<FailsOnCancel> started = new ArrayList<>();
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(
            f.engine,
            f.newCall(FakeRequest.get()),
            (n, timeout) -> {
              FailsOnCancel a = new FailsOnCancel();
              started.add(a);
              return a;
            },
            FakeResponse.ACCESS,
            AsyncRetryLoop.Style.of(true, null, true));
    FailsOnCancel attempt = started.get(0);
    CompletableFuture<FakeResponse> dependent = result.thenApply(r -> r);

    assertThat(result.cancel(true)).isTrue();

    assertThat(result.isCancelled()).isEqualTo(attempt.isCancelled()).isFalse();
    assertThat(result.isCompletedExceptionally()).isTrue();
    Throwable got = org.assertj.core.api.Assertions.catchThrowable(result::get);
    assertThat(got)
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOf(java.util.concurrent.CancellationException.class)
        .hasMessage("Request cancelled");
    assertThat(org.assertj.core.api.Assertions.catchThrowable(dependent::join))
        .isInstanceOf(java.util.concurrent.CompletionException.class)
        .cause()
        .hasMessage("Request cancelled");
    f.scheduler.runUntilIdle();
    assertThat(started).as("no retry after a cancel").hasSize(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aCancelEndsAsTheAttemptEndedThoughTheClientsThreadTookThatEndFirst(boolean aResponse)
      throws Exception {
    // The JDK's cancel(true) fails the exchange, and the failure may complete the attempt's future
    // on another thread, whose attemptDone takes the outcome for the caller's future. While that
    // thread had not yet given it (here: held in the call's end, as a listener would hold it), the
    // cancel went on to cancel the caller's future itself: cancelled, where the attempt's future
    // (and so the JDK's own) ended with "Request cancelled" (RetryingHttpClientTest's comparison
    // failed so once on JDK 17, reading the body). Now the cancel gives the attempt's outcome;
    // a response (the attempt's head came just before the cancel) given twice is never discarded.
    FakeResponse head = FakeResponse.of(200);
    java.util.concurrent.CountDownLatch heldInTheEnd = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch letGo = new java.util.concurrent.CountDownLatch(1);
    EngineFixture f =
        EngineFixture.withListener(
            TestPolicy.create().build(),
            new RetryListener() {
              @Override
              public void onCallComplete(RetryEvent event) {
                heldInTheEnd.countDown();
                try {
                  letGo.await(10, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
            });
    List<Thread> clientThreads = new ArrayList<>();
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(
            f.engine,
            f.newCall(FakeRequest.get()),
            (n, timeout) ->
                new CompletableFuture<FakeResponse>() {
                  @Override
                  public boolean cancel(boolean mayInterruptIfRunning) {
                    // The exchange's failure completes this future on the client's thread, which
                    // goes on into the loop's attemptDone; back here once it is held there.
                    Thread client =
                        new Thread(
                            () -> {
                              if (aResponse) {
                                complete(head);
                              } else {
                                completeExceptionally(
                                    new java.util.concurrent.CompletionException(
                                        new java.util.concurrent.CancellationException(
                                            "Request cancelled")));
                              }
                            },
                            "client");
                    clientThreads.add(client);
                    client.start();
                    try {
                      heldInTheEnd.await(10, java.util.concurrent.TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                    return super.cancel(mayInterruptIfRunning) || mayInterruptIfRunning;
                  }
                },
            FakeResponse.ACCESS,
            AsyncRetryLoop.Style.of(true, null, true));
    try {
      assertThat(result.cancel(true)).isTrue();

      assertThat(result.isDone()).isTrue();
      assertThat(result.isCancelled()).isFalse();
      if (aResponse) {
        assertThat(result.getNow(null)).isSameAs(head);
      } else {
        assertThat(org.assertj.core.api.Assertions.catchThrowable(result::get))
            .isInstanceOf(ExecutionException.class)
            .cause()
            .isInstanceOf(java.util.concurrent.CancellationException.class)
            .hasMessage("Request cancelled");
      }
    } finally {
      letGo.countDown();
    }
    clientThreads.get(0).join(10_000);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
    assertThat(result.isCancelled()).isFalse();
    assertThat(head.discards).as("the caller's response, never discarded").hasValue(0);
  }

  @Test
  void aPlainFutureIsCancelledWhateverItsAttemptEndedWith() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(
            f.engine,
            f.newCall(FakeRequest.get()),
            (n, timeout) -> new FailsOnCancel(),
            FakeResponse.ACCESS,
            AsyncRetryLoop.Style.of(true, null));

    assertThat(result.cancel(true)).isTrue();

    assertThat(result).isCancelled();
    f.scheduler.runUntilIdle();
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @Test
  void cancellingADependentWithoutInterruptLeavesTheCallAlone() {
    // As the JDK: MultiExchange.cancel(false) lets the exchange proceed.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, AsyncRetryLoop.Style.of(true, null));
    CompletableFuture<FakeResponse> dependent = result.thenApply(r -> r);
    assertThat(dependent.cancel(false)).isTrue();
    assertThat(result).isNotDone();
    assertThat(attempts.last()).isNotDone();
  }

  @Test
  void aPlainFuturesDependentsDoNotCancelTheCall() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, AsyncRetryLoop.Style.PLAIN);
    result.thenApply(r -> r).cancel(true);
    assertThat(result).isNotDone();
    assertThat(attempts.last()).isNotDone();
  }

  @Test
  void theFutureFailsWithTheVeryThrowableTheClientsFutureFailedWith() {
    // The JDK's sendAsync future fails with a CompletionException around the cause; dependent
    // stages (whenComplete) see that, not the bare cause.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    CompletableFuture<FakeResponse> result = start(f, FakeRequest.post());
    java.util.concurrent.CompletionException wrapped =
        new java.util.concurrent.CompletionException(new java.net.SocketException("reset"));
    attempts.last().completeExceptionally(wrapped);
    Throwable[] seen = new Throwable[1];
    result.whenComplete((r, t) -> seen[0] = t);
    assertThat(seen[0]).isSameAs(wrapped);
  }

  @Test
  void aFailureTheEngineMakesComesInACompletionException() {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ZERO);
    EngineFixture f = EngineFixture.of(p);
    start(f, FakeRequest.get());
    attempts.last().complete(FakeResponse.of(200));
    CompletableFuture<FakeResponse> refused = start(f, FakeRequest.get());
    Throwable[] seen = new Throwable[1];
    refused.whenComplete((r, t) -> seen[0] = t);
    assertThat(seen[0])
        .isInstanceOf(java.util.concurrent.CompletionException.class)
        .hasCauseInstanceOf(RateLimitedException.class);
  }

  @Test
  void aResultReadyOnASchedulerThreadIsDeliveredWhereTheStyleSays() {
    // The retry's attempt completed before the loop looked at it: without the style the caller's
    // stages would run on the scheduler's thread.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    HeldExecutor clientThreads = new HeldExecutor();
    AsyncRetryLoop.Attempt<FakeResponse> quick =
        (n, t) ->
            n == 1
                ? CompletableFuture.completedFuture(FakeResponse.of(503))
                : CompletableFuture.completedFuture(FakeResponse.of(200));
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(
            f.engine,
            f.newCall(FakeRequest.get()),
            quick,
            FakeResponse.ACCESS,
            AsyncRetryLoop.Style.of(false, clientThreads));
    f.scheduler.runUntilIdle();
    assertThat(result).isNotDone();
    assertThat(clientThreads.held).hasSize(1);

    clientThreads.runAll();
    assertThat(result).isCompletedWithValueMatching(r -> r.status == 200);
  }

  @Test
  void aResponseDeliveredAfterTheCallerCancelledIsDiscarded() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    HeldExecutor clientThreads = new HeldExecutor();
    FakeResponse late = FakeResponse.of(200);
    AsyncRetryLoop.Attempt<FakeResponse> quick =
        (n, t) -> CompletableFuture.completedFuture(n == 1 ? FakeResponse.of(503) : late);
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(
            f.engine,
            f.newCall(FakeRequest.get()),
            quick,
            FakeResponse.ACCESS,
            AsyncRetryLoop.Style.of(false, clientThreads));
    f.scheduler.runUntilIdle();
    result.cancel(true);
    clientThreads.runAll();
    assertThat(late.discards.get()).isEqualTo(1);
  }

  @Test
  void aCancelThatLandsAfterTheAttemptCompletedButBeforeItIsJudgedSpendsNoRetry() {
    // The caller cancels from another thread after the loop saw its future not done and before
    // the attempt's response is judged: the call is over (cancel ended it), so the judging must
    // neither take a retry from the budget (nobody gives it back: the call ended already) nor
    // report a retry that is never made.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    List<CompletableFuture<FakeResponse>> results = new ArrayList<>();
    ResponseAccess<FakeResponse> cancelWhileJudged =
        new ResponseAccess<FakeResponse>() {
          @Override
          public int status(FakeResponse response) {
            results.get(0).cancel(true); // the caller's thread, at this moment
            return response.status;
          }

          @Override
          public String header(FakeResponse response, String name) {
            return response.header(name);
          }

          @Override
          public void discard(FakeResponse response) {
            response.discards.incrementAndGet();
          }
        };
    RetryCall call = f.newCall(FakeRequest.get());
    results.add(AsyncRetryLoop.execute(f.engine, call, attempts, cancelWhileJudged));
    FakeResponse unavailable = FakeResponse.of(503);
    attempts.last().complete(unavailable);

    assertThat(results.get(0)).isCancelled();
    RetryBudget budget = f.engine.budgetFor(call.request().target(), call.policy());
    assertThat(budget.retriesInWindow(f.clock.nanoTime())).as("no retry spent").isZero();
    assertThat(f.listener.events(RetryEvent.Type.RETRY)).as("no retry told").isEmpty();
    assertThat(f.listener.events(RetryEvent.Type.CALL_COMPLETE)).hasSize(1);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
    assertThat(f.engine.pendingAsyncRetries()).isZero();
    assertThat(unavailable.discards.get()).isEqualTo(1);
    f.scheduler.runUntilIdle();
    assertThat(attempts.started).hasSize(1);
  }
}
