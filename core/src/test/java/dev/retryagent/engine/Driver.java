package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;

/** Runs one call through {@link SyncRetryLoop} or {@link AsyncRetryLoop}. */
interface Driver {
  /** Runs a call; {@code prepare} may adjust it first (e.g. {@link RetryCall#limitDeadline}). */
  CallResult run(EngineFixture f, RequestInfo request, Script script, Consumer<RetryCall> prepare);

  default CallResult run(EngineFixture f, RequestInfo request, Script script) {
    return run(f, request, script, call -> {});
  }

  /** On the test's thread; waits go through the engine's (recording) sleeper. */
  Driver SYNC =
      new Driver() {
        @Override
        public CallResult run(
            EngineFixture f, RequestInfo request, Script script, Consumer<RetryCall> prepare) {
          RetryCall call = f.newCall(request);
          prepare.accept(call);
          try {
            FakeResponse r =
                SyncRetryLoop.execute(
                    call, f.engine.sleeper(), script::runSync, FakeResponse.ACCESS);
            return new CallResult(r, null);
          } catch (Exception e) {
            return new CallResult(null, e);
          }
        }

        @Override
        public String toString() {
          return "sync";
        }
      };

  /** Through the manual scheduler, run until nothing is pending; the sleeper is never used. */
  Driver ASYNC =
      new Driver() {
        @Override
        public CallResult run(
            EngineFixture f, RequestInfo request, Script script, Consumer<RetryCall> prepare) {
          RetryCall call = f.newCall(request);
          prepare.accept(call);
          CompletableFuture<FakeResponse> future =
              AsyncRetryLoop.execute(f.engine, call, script::runAsync, FakeResponse.ACCESS);
          f.scheduler.runUntilIdle();
          assertThat(future).isDone();
          assertThat(f.sleeper.sleeps()).as("async never sleeps a thread").isEmpty();
          assertThat(f.engine.pendingAsyncRetries()).isZero();
          try {
            return new CallResult(future.get(), null);
          } catch (ExecutionException | CompletionException e) {
            return new CallResult(null, e.getCause());
          } catch (InterruptedException e) {
            throw new AssertionError(e);
          }
        }

        @Override
        public String toString() {
          return "async";
        }
      };
}
