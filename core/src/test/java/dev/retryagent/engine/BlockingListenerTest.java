package dev.retryagent.engine;

import static dev.retryagent.engine.RetryEvent.Type.ATTEMPT;
import static dev.retryagent.engine.RetryEvent.Type.CALL_COMPLETE;
import static dev.retryagent.engine.RetryEvent.Type.GIVE_UP;
import static dev.retryagent.engine.RetryEvent.Type.RETRY;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.testing.FakeRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A listener that blocks (an application's, stuck on I/O) holds up no step of its call on another
 * thread: a call's events are told outside its lock ({@link CallEvents}), in order, each once.
 * Before, they were told under the lock, and a cancel of the call waited for the listener.
 */
class BlockingListenerTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final ExecutorService threads = Executors.newFixedThreadPool(2);
  private final CountDownLatch release = new CountDownLatch(1);

  @AfterEach
  void stop() throws InterruptedException {
    release.countDown(); // a test that failed leaves no thread blocked
    threads.shutdownNow();
    assertThat(threads.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
  }

  /** Blocks in its first {@code onRetry} until {@link #release}; says when it is in. */
  private final class BlocksOnRetry implements RetryListener {
    final CountDownLatch entered = new CountDownLatch(1);

    @Override
    public void onRetry(RetryEvent event) {
      if (entered.getCount() == 0) {
        return;
      }
      entered.countDown();
      try {
        release.await(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** One attempt, completed by the test. */
  private static final class OneAttempt implements AsyncRetryLoop.Attempt<FakeResponse> {
    final List<CompletableFuture<FakeResponse>> started = new ArrayList<>();

    @Override
    public synchronized CompletableFuture<FakeResponse> start(int attempt, long timeoutNanos) {
      CompletableFuture<FakeResponse> f = new CompletableFuture<>();
      started.add(f);
      return f;
    }

    synchronized CompletableFuture<FakeResponse> last() {
      return started.get(started.size() - 1);
    }
  }

  @Test
  void aCancelWhileAListenerBlocksOnTheRetryReturnsAndTheEventsFollowInOrder() throws Exception {
    BlocksOnRetry blocking = new BlocksOnRetry();
    EngineFixture f = EngineFixture.withListener(TestPolicy.create().build(), blocking);
    OneAttempt attempts = new OneAttempt();
    RetryCall call = f.newCall(FakeRequest.get());
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(f.engine, call, attempts, FakeResponse.ACCESS);
    FakeResponse unavailable = FakeResponse.of(503);

    // The attempt completes on a client thread: its 503 is decided a retry, whose event blocks.
    Future<?> completing = threads.submit(() -> attempts.last().complete(unavailable));
    assertThat(blocking.entered.await(10, TimeUnit.SECONDS)).isTrue();

    // The application cancels from another thread while the listener blocks.
    Future<Boolean> cancelling = threads.submit(() -> result.cancel(true));
    await().atMost(WAIT).until(cancelling::isDone);

    assertThat(cancelling.get()).isTrue();
    assertThat(result).isCancelled();
    assertThat(call.isFinished()).isTrue();
    // The cancel's events wait behind the retry's, which the blocked listener holds.
    assertThat(f.listener.types()).containsExactly(ATTEMPT);

    release.countDown();
    completing.get(10, TimeUnit.SECONDS);
    await().atMost(WAIT).until(() -> f.listener.types().contains(CALL_COMPLETE));
    assertThat(f.listener.types()).containsExactly(ATTEMPT, RETRY, GIVE_UP, CALL_COMPLETE);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
    assertThat(attempts.started).hasSize(1);
    assertThat(f.engine.pendingAsyncRetries()).isZero();
    assertThat(unavailable.discards.get()).isEqualTo(1);
  }

  @Test
  void aListenerThatCancelsItsCallOnTheRetryHearsTheEndAfterTheRetryAndTheRetryGoesBack() {
    // The listener cancels the call as it hears of the retry, on the attempt's thread. Before,
    // it was told inside the decision, under the call's (reentrant) lock: the call's end was told
    // before the retry (ATTEMPT, GIVE_UP, CALL_COMPLETE, RETRY to the listeners after it), and
    // the decision then marked its retry pending on a call already ended, so the retry taken from
    // the budget was never given back.
    AtomicReference<CompletableFuture<FakeResponse>> result = new AtomicReference<>();
    RetryListener cancelling =
        new RetryListener() {
          @Override
          public void onRetry(RetryEvent event) {
            result.get().cancel(true);
          }
        };
    EngineFixture f = EngineFixture.withListener(TestPolicy.create().build(), cancelling);
    OneAttempt attempts = new OneAttempt();
    RetryCall call = f.newCall(FakeRequest.get());
    result.set(AsyncRetryLoop.execute(f.engine, call, attempts, FakeResponse.ACCESS));
    FakeResponse unavailable = FakeResponse.of(503);

    attempts.last().complete(unavailable);

    assertThat(result.get()).isCancelled();
    assertThat(f.listener.types()).containsExactly(ATTEMPT, RETRY, GIVE_UP, CALL_COMPLETE);
    assertThat(f.listener.complete().reason()).isEqualTo(GiveUpReason.CANCELLED);
    assertThat(f.scheduler.pending()).isZero();
    assertThat(f.engine.pendingAsyncRetries()).isZero();
    assertThat(unavailable.discards.get()).isEqualTo(1);
    RetryBudget budget = f.engine.budgetFor(call.request().target(), call.policy());
    assertThat(budget.retriesInWindow(f.clock.nanoTime())).as("the retry given back").isZero();
  }

  @Test
  void eventsOfOneThreadAreToldOnItBeforeItsStepReturnsWithoutTheCallsLock() throws Exception {
    // Without a second thread, each step tells its events before it returns, on its own thread,
    // as before; but no longer holding the call's lock.
    List<String> where = new ArrayList<>();
    AtomicReference<RetryCall> told = new AtomicReference<>();
    RetryListener noting =
        new RetryListener() {
          @Override
          public void onRetry(RetryEvent event) {
            where.add(Thread.currentThread().getName() + " " + Thread.holdsLock(told.get()));
          }
        };
    EngineFixture f = EngineFixture.withListener(TestPolicy.create().build(), noting);
    RetryCall call = f.newCall(FakeRequest.get());
    told.set(call);
    call.beginAttempt();
    assertThat(f.listener.types()).containsExactly(ATTEMPT);

    Decision d = call.onResponse(503, null);

    assertThat(d.retry()).isTrue();
    assertThat(f.listener.types()).containsExactly(ATTEMPT, RETRY);
    assertThat(where).containsExactly(Thread.currentThread().getName() + " false");
    call.onAbandoned();
    assertThat(f.listener.types()).containsExactly(ATTEMPT, RETRY, GIVE_UP, CALL_COMPLETE);
  }

  @Test
  void aCancelWhileAListenerBlocksOnABreakerTransitionReturnsAndTheTransitionIsToldOnce()
      throws Exception {
    // The attempt's 503 opens the breaker, and the listener blocks as it hears it. Before, the
    // transition was told as the outcome was recorded, under the call's lock: the cancel from
    // another thread waited for the listener (onAbandoned).
    CountDownLatch entered = new CountDownLatch(1);
    RetryListener blocking =
        new RetryListener() {
          @Override
          public void onBreakerTransition(
              CircuitBreaker breaker, CircuitTransition transition, String route) {
            entered.countDown();
            try {
              release.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
        };
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(1).minimumCalls(1);
    EngineFixture f = EngineFixture.withListener(p.build(), blocking);
    OneAttempt attempts = new OneAttempt();
    RetryCall call = f.newCall(FakeRequest.get());
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(f.engine, call, attempts, FakeResponse.ACCESS);

    Future<?> completing = threads.submit(() -> attempts.last().complete(FakeResponse.of(503)));
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

    Future<Boolean> cancelling = threads.submit(() -> result.cancel(true));
    await().atMost(WAIT).until(cancelling::isDone);
    // Nor does the listener hold the breaker: its state reads under the breaker's lock.
    assertThat(call.breaker().state()).isEqualTo(CircuitState.OPEN);

    release.countDown();
    completing.get(10, TimeUnit.SECONDS);
    await().atMost(WAIT).until(() -> f.listener.types().contains(CALL_COMPLETE));
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
    assertThat(f.listener.types()).containsExactly(ATTEMPT, GIVE_UP, CALL_COMPLETE);
    assertThat(attempts.started).hasSize(1);
  }

  @Test
  void aTransitionIsToldOnTheThreadThatMadeItBeforeItsStepReturnsWithoutTheCallsLock()
      throws Exception {
    List<String> where = new ArrayList<>();
    AtomicReference<RetryCall> told = new AtomicReference<>();
    RetryListener noting =
        new RetryListener() {
          @Override
          public void onBreakerTransition(
              CircuitBreaker breaker, CircuitTransition transition, String route) {
            where.add(
                transition
                    + " "
                    + Thread.currentThread().getName()
                    + " "
                    + Thread.holdsLock(told.get()));
          }
        };
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(1).minimumCalls(1).halfOpenCalls(1).openFor(Duration.ofSeconds(30));
    EngineFixture f = EngineFixture.withListener(p.build(), noting);
    RetryCall call = f.newCall(FakeRequest.get());
    told.set(call);
    call.beginAttempt();
    call.onResponse(503, null);
    String me = Thread.currentThread().getName();
    assertThat(where).containsExactly("CLOSED_TO_OPEN " + me + " false");

    f.clock.advance(TimeUnit.SECONDS.toNanos(30));
    RetryCall trial = f.newCall(FakeRequest.get());
    told.set(trial);
    trial.beginAttempt();
    assertThat(where).hasSize(2).endsWith("OPEN_TO_HALF_OPEN " + me + " false");
    trial.onResponse(200, null);
    assertThat(where).hasSize(3).endsWith("HALF_OPEN_TO_CLOSED " + me + " false");
    assertThat(f.listener.transitions())
        .containsExactly(
            CircuitTransition.CLOSED_TO_OPEN,
            CircuitTransition.OPEN_TO_HALF_OPEN,
            CircuitTransition.HALF_OPEN_TO_CLOSED);
  }
}
