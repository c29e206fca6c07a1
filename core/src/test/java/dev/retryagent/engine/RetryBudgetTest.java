package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.BudgetPolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RetryBudgetTest {
  private static final long S = 1_000_000_000L;
  private static final long MS = 1_000_000L;

  private static RetryBudget budget(double ratio, int minPerSecond, Duration window) {
    return new RetryBudget(
        BudgetPolicy.builder().ratio(ratio).minPerSecond(minPerSecond).window(window).build());
  }

  private static int grantAll(RetryBudget b, long now, int asks) {
    int granted = 0;
    for (int i = 0; i < asks; i++) {
      if (b.tryAcquireRetry(now)) {
        granted++;
      }
    }
    return granted;
  }

  @Test
  void retriesMayAddTheRatioOfTheCallsInTheWindow() {
    RetryBudget b = budget(0.2, 0, Duration.ofSeconds(10));
    long t = 5 * S;
    for (int i = 0; i < 10; i++) {
      b.recordCall(t);
    }
    assertThat(b.tryAcquireRetry(t)).isTrue();
    assertThat(b.tryAcquireRetry(t)).isTrue();
    assertThat(b.tryAcquireRetry(t)).as("a third retry for 10 calls exceeds 20%").isFalse();
    assertThat(b.callsInWindow(t)).isEqualTo(10);
    assertThat(b.retriesInWindow(t)).isEqualTo(2);
  }

  @Test
  void aRefusedRetryWithdrawsNothing() {
    RetryBudget b = budget(0.5, 0, Duration.ofSeconds(10));
    b.recordCall(0);
    b.recordCall(0);
    assertThat(b.tryAcquireRetry(0)).isTrue();
    for (int i = 0; i < 5; i++) {
      assertThat(b.tryAcquireRetry(0)).isFalse();
    }
    assertThat(b.retriesInWindow(0)).isEqualTo(1);
    b.recordCall(0);
    b.recordCall(0);
    assertThat(b.tryAcquireRetry(0)).as("two more calls pay for one more retry").isTrue();
  }

  @Test
  void minPerSecondAllowsRetriesWithoutAnyCalls() {
    RetryBudget b = budget(0.0, 3, Duration.ofSeconds(10));
    assertThat(grantAll(b, 0, 100)).isEqualTo(30); // 3 per second over a 10 s window
  }

  @Test
  void theFloorAndTheRatioAddUp() {
    RetryBudget b = budget(0.2, 1, Duration.ofSeconds(2));
    for (int i = 0; i < 50; i++) {
      b.recordCall(0);
    }
    assertThat(grantAll(b, 0, 100)).isEqualTo(10 + 2);
  }

  @Test
  void aZeroBudgetRefusesEveryRetry() {
    RetryBudget b = budget(0.0, 0, Duration.ofSeconds(10));
    for (int i = 0; i < 1000; i++) {
      b.recordCall(0);
    }
    assertThat(b.tryAcquireRetry(0)).isFalse();
  }

  @Test
  void theDefaultsAllowTenRetriesPerSecondPlusTwentyPercent() {
    RetryBudget b = new RetryBudget(BudgetPolicy.defaults());
    assertThat(grantAll(b, 0, 1000)).isEqualTo(100);
    RetryBudget c = new RetryBudget(BudgetPolicy.defaults());
    for (int i = 0; i < 1000; i++) {
      c.recordCall(0);
    }
    assertThat(grantAll(c, 0, 1000)).isEqualTo(300);
  }

  @Test
  void callsAndRetriesLeaveTheWindowAfterItHasPassed() {
    // window 10 s in buckets of 1 s: what happened at t=0.5 s is counted until t=11 s (exclusive).
    RetryBudget b = budget(1.0, 0, Duration.ofSeconds(10));
    b.recordCall(500 * MS);
    assertThat(b.tryAcquireRetry(500 * MS)).isTrue();
    assertThat(b.tryAcquireRetry(500 * MS)).isFalse();

    long stillCounted = 11 * S - 1;
    assertThat(b.callsInWindow(stillCounted)).isEqualTo(1);
    assertThat(b.retriesInWindow(stillCounted)).isEqualTo(1);
    assertThat(b.tryAcquireRetry(stillCounted)).isFalse();

    assertThat(b.callsInWindow(11 * S)).isZero();
    assertThat(b.retriesInWindow(11 * S)).isZero();
  }

  @Test
  void aGrantedRetryIsCountedForAtLeastAWindowAndAtMostAWindowPlusABucket() {
    // One free retry per 1 s window, buckets of 100 ms.
    RetryBudget late = budget(0.0, 1, Duration.ofSeconds(1));
    long t = 3 * S - 1; // the last nanosecond of a bucket
    assertThat(late.tryAcquireRetry(t)).isTrue();
    assertThat(late.tryAcquireRetry(t + S)).as("a whole window later").isFalse();
    assertThat(late.tryAcquireRetry(t + S + 1)).as("the next bucket").isTrue();

    RetryBudget early = budget(0.0, 1, Duration.ofSeconds(1));
    long u = 3 * S; // the first nanosecond of a bucket
    assertThat(early.tryAcquireRetry(u)).isTrue();
    assertThat(early.tryAcquireRetry(u + 1100 * MS - 1)).as("window + bucket - 1ns").isFalse();
    assertThat(early.tryAcquireRetry(u + 1100 * MS)).as("window + bucket").isTrue();
  }

  @Test
  void bucketsAreReusedAsTimeMovesOn() {
    RetryBudget b = budget(0.5, 0, Duration.ofSeconds(1));
    long t = 0;
    for (int round = 0; round < 50; round++) {
      t += 250 * MS;
      b.recordCall(t);
      b.recordCall(t);
      assertThat(b.tryAcquireRetry(t)).isTrue();
      // Steady state: calls in the (1 s .. 1.1 s) window never exceed 5 x 2.
      assertThat(b.callsInWindow(t)).isLessThanOrEqualTo(10);
    }
    t += 5 * S;
    assertThat(b.callsInWindow(t)).isZero();
    assertThat(b.retriesInWindow(t)).isZero();
  }

  @Test
  void worksWithNegativeMonotonicTime() {
    // System.nanoTime() may be negative.
    RetryBudget b = budget(1.0, 0, Duration.ofSeconds(10));
    long t = -123_456_789_000L;
    b.recordCall(t);
    assertThat(b.tryAcquireRetry(t + S)).isTrue();
    assertThat(b.tryAcquireRetry(t + S)).isFalse();
    assertThat(b.callsInWindow(t + 20 * S)).isZero();
  }

  @Test
  void aLongPauseForgetsEverything() {
    RetryBudget b = budget(1.0, 0, Duration.ofSeconds(10));
    for (int i = 0; i < 5; i++) {
      b.recordCall(0);
    }
    assertThat(b.callsInWindow(Long.MAX_VALUE / 2)).isZero();
  }
}
