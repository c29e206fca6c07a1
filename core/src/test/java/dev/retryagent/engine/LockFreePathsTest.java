package dev.retryagent.engine;

import static dev.retryagent.engine.CircuitTransition.CLOSED_TO_OPEN;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The paths of the breaker and the budget that take no lock (issue 13): a success on a closed
 * breaker whose count window is full of successes, and a call's deposit into the budget's current
 * bucket. Many threads at once leave the counts exact, and transitions still happen at the
 * threshold.
 */
class LockFreePathsTest {
  private static final int THREADS = 8;
  private static final long S = 1_000_000_000L;

  private final ExecutorService pool = Executors.newFixedThreadPool(THREADS);
  private final List<CircuitTransition> seen = new CopyOnWriteArrayList<>();
  private final FakeClock clock = new FakeClock(42 * S);

  @AfterEach
  void stop() throws InterruptedException {
    pool.shutdownNow();
    assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
  }

  private CircuitBreaker breaker(int size) {
    CircuitBreakerPolicy p =
        CircuitBreakerPolicy.builder()
            .countWindow(size)
            .minimumCalls(size)
            .failureRateThreshold(0.5)
            .openFor(Duration.ofSeconds(30))
            .halfOpenCalls(3)
            .build();
    return new CircuitBreaker("http://h:80", p, (b, t) -> seen.add(t));
  }

  /** One attempt as the engine makes it: the closed permit, the outcome with the clock. */
  private void attempt(CircuitBreaker b, boolean failure) {
    long permit = b.closedPermit();
    assertThat(permit).isNotEqualTo(CircuitBreaker.REJECTED);
    b.onResult(permit, failure, clock.nanoTime(), clock);
  }

  /** Runs {@code task} on every thread at once and waits for all. */
  private void onEveryThread(Runnable task) throws Exception {
    CyclicBarrier start = new CyclicBarrier(THREADS);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      done.add(
          pool.submit(
              () -> {
                start.await();
                task.run();
                return null;
              }));
    }
    for (Future<?> f : done) {
      f.get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void successesSkippedOnAFullWindowOfSuccessesStillLeaveTheOpeningAtTheThreshold() {
    CircuitBreaker b = breaker(10);
    for (int i = 0; i < 10_000; i++) {
      attempt(b, false); // the window is full after 10; the rest change no count
    }
    for (int i = 0; i < 4; i++) {
      attempt(b, true);
    }
    assertThat(b.state()).as("4 failures in 10").isEqualTo(CircuitState.CLOSED);
    attempt(b, true);
    assertThat(b.state()).as("5 failures in 10: the threshold").isEqualTo(CircuitState.OPEN);
    assertThat(b.openedCalls()).isEqualTo(10);
    assertThat(b.openedFailureRate()).isEqualTo(0.5);
    assertThat(seen).containsExactly(CLOSED_TO_OPEN);
  }

  @Test
  void aFailureOnAWindowFullOfSuccessesIsForgottenAfterExactlyTheWindowSize() {
    CircuitBreaker b = breaker(4);
    for (int i = 0; i < 100; i++) {
      attempt(b, false);
    }
    attempt(b, true);
    attempt(b, false);
    attempt(b, false);
    attempt(b, true); // the last four: F S S F, 2 of 4, the threshold
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);

    CircuitBreaker c = breaker(4);
    for (int i = 0; i < 100; i++) {
      attempt(c, false);
    }
    attempt(c, true);
    for (int i = 0; i < 3; i++) {
      attempt(c, false);
    }
    attempt(c, true); // the last four: S S S F, the first failure pushed out: 1 of 4
    assertThat(c.state()).isEqualTo(CircuitState.CLOSED);
  }

  @Test
  void successesAfterAFailureAreRecordedAgainUntilItLeavesTheWindow() {
    CircuitBreaker b = breaker(100);
    for (int i = 0; i < 100; i++) {
      attempt(b, false);
    }
    for (int i = 0; i < 10; i++) {
      attempt(b, true);
    }
    for (int i = 0; i < 100; i++) {
      attempt(b, false); // each replaces an older outcome: the 10 failures leave the window
    }
    for (int i = 0; i < 49; i++) {
      attempt(b, true);
    }
    assertThat(b.state()).as("49 failures in 100").isEqualTo(CircuitState.CLOSED);
    attempt(b, true);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
    assertThat(b.openedFailureRate()).isEqualTo(0.5);
  }

  @Test
  void manyThreadsRecordingSuccessesLeaveAWindowOfExactlyItsSizeWithoutFailures() throws Exception {
    CircuitBreaker b = breaker(100);
    onEveryThread(
        () -> {
          for (int i = 0; i < 20_000; i++) {
            attempt(b, false);
          }
        });
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    assertThat(b.isIdle(0)).isTrue();
    // Each failure now replaces a success: the 50th makes 50 of 100, the threshold.
    for (int i = 0; i < 49; i++) {
      attempt(b, true);
    }
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    attempt(b, true);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
    assertThat(b.openedCalls()).isEqualTo(100);
    assertThat(b.openedFailureRate()).isEqualTo(0.5);
  }

  @Test
  void manyThreadsMixingSuccessesAndFailuresOpenTheBreakerOnceAtTheThreshold() throws Exception {
    CircuitBreaker b = breaker(100);
    for (int i = 0; i < 100; i++) {
      attempt(b, false); // quiet: successes take the path without the lock
    }
    onEveryThread(
        () -> {
          for (int i = 0; i < 20_000; i++) {
            long permit = b.closedPermit();
            if (permit == CircuitBreaker.REJECTED) {
              return; // opened: every thread stops asking
            }
            b.onResult(permit, i % 3 == 0, clock.nanoTime(), clock); // a third fail: below 50%
          }
        });
    // A third of the outcomes failed: the rate may have touched 50% in some window, or not.
    if (b.state() == CircuitState.OPEN) {
      assertThat(seen).containsExactly(CLOSED_TO_OPEN);
      assertThat(b.openedCalls()).isEqualTo(100);
      assertThat(b.openedFailureRate()).isGreaterThanOrEqualTo(0.5);
    } else {
      assertThat(seen).isEmpty();
    }
    seen.clear();
    CircuitBreaker all = breaker(100);
    onEveryThread(
        () -> {
          for (int i = 0; i < 20_000; i++) {
            long permit = all.closedPermit();
            if (permit != CircuitBreaker.REJECTED) {
              all.onResult(permit, true, clock.nanoTime(), clock);
            }
          }
        });
    assertThat(all.state()).isEqualTo(CircuitState.OPEN);
    assertThat(seen).as("one opening, however many threads saw the threshold").hasSize(1);
    assertThat(all.openedCalls()).isEqualTo(100);
    assertThat(all.openedFailureRate()).isEqualTo(1.0);
  }

  @Test
  void manyThreadsDepositingCountEveryCallAcrossBuckets() throws Exception {
    RetryBudget budget =
        new RetryBudget(
            BudgetPolicy.builder()
                .ratio(0.1)
                .minPerSecond(0)
                .window(Duration.ofSeconds(10))
                .build());
    long t0 = 100 * S;
    onEveryThread(
        () -> {
          for (int i = 0; i < 30_000; i++) {
            // Three buckets of one second, visited back and forth: the window moves under the lock
            // while other threads deposit without it.
            budget.recordCall(t0 + (i / 1_000 % 3) * S + i % 1_000);
          }
        });
    long now = t0 + 3 * S;
    assertThat(budget.callsInWindow(now)).isEqualTo(THREADS * 30_000L);
    int granted = 0;
    while (budget.tryAcquireRetry(now)) {
      granted++;
    }
    assertThat(granted).as("10% of the calls").isEqualTo(THREADS * 3_000);
    // The window moves on: the deposits leave it with their buckets.
    assertThat(budget.callsInWindow(t0 + 13 * S)).isZero();
  }

  /**
   * Deposits, withdrawals and give-backs at once, the time moving across the window's buckets
   * (never out of it): every call counted, each retry counted once and given back once.
   */
  @Test
  void manyThreadsTakingAndGivingBackRetriesLeaveExactlyTheRetriesKept() throws Exception {
    // minPerSecond x window is a whole 100 retries: no floor's rest, every retry in the window.
    RetryBudget budget =
        new RetryBudget(
            BudgetPolicy.builder()
                .ratio(0.3)
                .minPerSecond(1)
                .window(Duration.ofSeconds(100))
                .build());
    AtomicLong clock = new AtomicLong(100 * S);
    AtomicLong granted = new AtomicLong();
    AtomicLong givenBack = new AtomicLong();
    onEveryThread(
        () -> {
          for (int i = 0; i < 5_000; i++) {
            // 1 ms a step, 40 s in all: across four of the window's 10 s buckets.
            long now = clock.addAndGet(1_000_000L);
            budget.recordCall(now);
            long ticket = budget.acquireRetry(now);
            if (RetryBudget.granted(ticket)) {
              granted.incrementAndGet();
              if (i % 2 == 0) {
                budget.returnRetry(ticket, clock.get());
                givenBack.incrementAndGet();
              }
            }
          }
        });
    long now = clock.get();
    assertThat(budget.callsInWindow(now)).isEqualTo(THREADS * 5_000L);
    assertThat(budget.retriesInWindow(now)).isEqualTo(granted.get() - givenBack.get());
    assertThat(budget.retriesInWindow(now))
        .isLessThanOrEqualTo((long) (0.3 * THREADS * 5_000L) + 100);
  }

  @Test
  void aDepositInTheCurrentBucketCountsAsOneUnderTheLockWould() {
    RetryBudget budget =
        new RetryBudget(
            BudgetPolicy.builder()
                .ratio(0.5)
                .minPerSecond(0)
                .window(Duration.ofSeconds(10))
                .build());
    long t = 7 * S;
    budget.recordCall(t); // moves the window to t's bucket
    budget.recordCall(t + 1); // the same bucket: without the lock
    budget.recordCall(t + S - 1);
    budget.recordCall(t + S); // the next bucket
    assertThat(budget.callsInWindow(t + S)).isEqualTo(4);
    assertThat(budget.tryAcquireRetry(t + S)).isTrue();
    assertThat(budget.tryAcquireRetry(t + S)).isTrue();
    assertThat(budget.tryAcquireRetry(t + S)).as("2 retries for 4 calls at 50%").isFalse();
    // 10 s after t's bucket ended it has left the window; the next bucket's call has not.
    assertThat(budget.callsInWindow(t + 11 * S)).isEqualTo(1);
  }
}
