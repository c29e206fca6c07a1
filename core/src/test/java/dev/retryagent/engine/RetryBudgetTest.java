package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.internal.Units;
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
  void theRatioIsTheShareWrittenWhateverItsBinaryRounding() {
    // 29% of 100 calls is 29 retries; 0.29 x 100 in doubles is 28.999999999999996, and the budget
    // allowed 28. Likewise 57% of 100 (56.99999999999999).
    String[] ratios = {"29%", "0.57", "7%", "110%"};
    int[] shares = {29, 57, 7, 110};
    for (int k = 0; k < ratios.length; k++) {
      RetryBudget b = budget(Units.parseRatio(ratios[k]), 0, Duration.ofSeconds(10));
      for (int i = 0; i < 100; i++) {
        b.recordCall(0);
      }
      assertThat(grantAll(b, 0, 200)).as(ratios[k] + " of 100 calls").isEqualTo(shares[k]);
    }
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

  /** Asks for one retry each {@code stepNanos} from 0 until {@code endNanos} (exclusive). */
  private static int askEvery(RetryBudget b, long stepNanos, long endNanos) {
    int granted = 0;
    for (long t = 0; t < endNanos; t += stepNanos) {
      if (b.tryAcquireRetry(t)) {
        granted++;
      }
    }
    return granted;
  }

  @Test
  void aWindowShorterThanTheFloorsPeriodStillAllowsRetriesAtMinPerSecond() {
    // 10 a second over 50 ms is half a retry per window: none fitted in it, and the floor that
    // docs/configuration.md says always allows 10 a second allowed none.
    RetryBudget b = budget(0.0, 10, Duration.ofMillis(50));
    assertThat(b.tryAcquireRetry(0)).isTrue();
    assertThat(b.tryAcquireRetry(50 * MS)).as("a window later").isFalse();
    assertThat(b.tryAcquireRetry(100 * MS - 1)).isFalse();
    assertThat(b.tryAcquireRetry(100 * MS)).as("a tenth of a second later").isTrue();

    RetryBudget steady = budget(0.0, 10, Duration.ofMillis(50));
    assertThat(askEvery(steady, MS, 10 * S)).isEqualTo(100);
    RetryBudget tiny = budget(0.0, 999, Duration.ofMillis(1));
    assertThat(askEvery(tiny, 1_000, S / 10)).as("99.9 in a tenth of a second").isBetween(99, 100);
  }

  @Test
  void aWindowOfAFractionOfTheFloorsRetriesLosesNoPartOfTheFloor() {
    // 1.5 retries a window of 150 ms: the window holds one, and the half left over came to nothing
    // (6.7 a second for 10). A retry counted in the window stays in it up to a tenth of it longer.
    RetryBudget b = budget(0.0, 10, Duration.ofMillis(150));
    assertThat(askEvery(b, MS, 30 * S)).isBetween(273, 300);
  }

  @Test
  void inAShortWindowTheFloorAndTheRatioAddUp() {
    RetryBudget b = budget(0.5, 10, Duration.ofMillis(50));
    for (int i = 0; i < 4; i++) {
      b.recordCall(0);
    }
    assertThat(grantAll(b, 0, 10)).isEqualTo(2 + 1);
    assertThat(b.retriesInWindow(0)).as("the ratio's; the floor's are apart").isEqualTo(2);
  }

  @Test
  void aRetryOfTheFloorThatIsGivenBackMayBeTakenAgain() {
    RetryBudget b = budget(0.0, 10, Duration.ofMillis(50));
    long ticket = b.acquireRetry(S);
    assertThat(RetryBudget.kind(ticket)).isEqualTo(RetryBudget.OF_FLOOR);
    assertThat(b.tryAcquireRetry(S + MS)).isFalse();
    b.returnRetry(ticket, S + MS);
    assertThat(b.tryAcquireRetry(S + MS)).isTrue();
    b.returnRetry(ticket, S + 2 * MS); // already given back: nothing more
    assertThat(b.tryAcquireRetry(S + 2 * MS)).isFalse();
    assertThat(b.tryAcquireRetry(S + MS + 100 * MS)).isTrue();
  }

  @Test
  void aRetryAskedAtATimeOlderThanTheWindowIsGivenBackWhereItWasCounted() {
    // A time read before the budget's lock by a thread held up there (a JVM paused between the
    // two) while other calls moved the window on: too old for its own bucket, the retry counts
    // in the current one. Given back (the call cancelled, or its wait ended past the deadline),
    // it was looked for in the bucket of that old time, not found, and stayed counted for a
    // whole window: one retry fewer for the host's calls. The ticket says where it counted.
    RetryBudget b = budget(0.5, 0, Duration.ofSeconds(1));
    long now = 100 * S;
    b.recordCall(now);
    b.recordCall(now); // the window is at 100 s: one retry allowed
    long stale = now - 5 * S;
    long ticket = b.acquireRetry(stale);
    assertThat(RetryBudget.granted(ticket)).isTrue();
    assertThat(b.retriesInWindow(now)).as("counted now").isEqualTo(1);

    b.returnRetry(ticket, now + MS);

    assertThat(b.retriesInWindow(now + MS)).as("given back").isZero();
    assertThat(b.tryAcquireRetry(now + MS)).as("the retry is the host's again").isTrue();
  }

  @Test
  void theFloorsRestWorksWithNegativeMonotonicTime() {
    RetryBudget b = budget(0.0, 10, Duration.ofMillis(50));
    long t = -123_456_789_000L;
    assertThat(b.tryAcquireRetry(t)).isTrue();
    assertThat(b.tryAcquireRetry(t + 99 * MS)).isFalse();
    assertThat(b.tryAcquireRetry(t + 100 * MS)).isTrue();
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
  void theWindowMovesOnAcrossTheNanoTimeWrap() {
    // nanoTime's origin is arbitrary: a window that spans its wrap forgets as any other.
    RetryBudget b = budget(0.2, 0, Duration.ofSeconds(10));
    long t = Long.MAX_VALUE - 2 * S;
    for (int i = 0; i < 100; i++) {
      b.recordCall(t);
    }
    assertThat(grantAll(b, t, 100)).isEqualTo(20);
    for (long later = t + 11 * S; later != t + 31 * S; later += 500 * MS) {
      assertThat(b.callsInWindow(later)).as("calls at +%d ms", (later - t) / MS).isZero();
      assertThat(b.retriesInWindow(later)).isZero();
    }
    long wrapped = t + 3 * S; // 1 s past the wrap, still within the window
    RetryBudget c = budget(0.2, 0, Duration.ofSeconds(10));
    for (int i = 0; i < 10; i++) {
      c.recordCall(t);
    }
    for (int i = 0; i < 10; i++) {
      c.recordCall(wrapped);
    }
    assertThat(c.callsInWindow(wrapped)).isEqualTo(20);
    assertThat(grantAll(c, wrapped, 10)).isEqualTo(4);
  }

  @Test
  void aRetryAskedWithATimeAWholeWindowLateKeepsTheRetriesOfTheWindow() {
    // The time is read before the budget's lock: a thread held up there (callers of one host
    // queued on it, a JVM paused between the two) brings a time the window moved past. 11 s late
    // in a 10 s window of 11 slots, its bucket's slot is the current one's: emptying it forgot
    // the 5 retries just granted, and a sixth went beyond 50% of 10 calls.
    RetryBudget b = budget(0.5, 0, Duration.ofSeconds(10));
    long t = 20 * S;
    for (int i = 0; i < 10; i++) {
      b.recordCall(t - 5 * S);
    }
    assertThat(grantAll(b, t, 5)).isEqualTo(5);
    assertThat(b.tryAcquireRetry(t - 11 * S)).as("a sixth retry, its time 11 s late").isFalse();
    b.recordCall(t - 11 * S);
    assertThat(b.retriesInWindow(t)).isEqualTo(5);
    assertThat(b.callsInWindow(t)).as("the late call counts now").isEqualTo(11);
  }

  @Test
  void aTimeLateButStillInTheWindowCountsInItsOwnBucket() {
    RetryBudget b = budget(1.0, 0, Duration.ofSeconds(10));
    long t = 20 * S;
    b.recordCall(t);
    b.recordCall(t - 3 * S);
    assertThat(b.tryAcquireRetry(t - 3 * S)).isTrue();
    assertThat(b.callsInWindow(t)).isEqualTo(2);
    assertThat(b.retriesInWindow(t)).isEqualTo(1);
    assertThat(b.retriesInWindow(t + 8 * S)).as("gone with its bucket").isZero();
    assertThat(b.callsInWindow(t + 8 * S)).isEqualTo(1);
  }

  @Test
  void aLongPauseForgetsEverything() {
    RetryBudget b = budget(1.0, 0, Duration.ofSeconds(10));
    for (int i = 0; i < 5; i++) {
      b.recordCall(0);
    }
    assertThat(b.callsInWindow(Long.MAX_VALUE / 2)).isZero();
  }

  /**
   * A bucket's retries past 2^31 (a budget of ratio 10^9 under a flood) wrapped a per-bucket int:
   * the bucket's count went negative, and forgetting it added 2^32 retries to the window's sum for
   * good, a budget spent for ever. The count is set near the limit through reflection: 2^31 retries
   * take too long to make here.
   */
  @Test
  void aBucketPastTwoToTheThirtyOneRetriesIsForgottenWhole() throws Exception {
    RetryBudget b = budget(0.0, 0, Duration.ofSeconds(10));
    b.recordRetry(0);
    java.lang.reflect.Field retries = RetryBudget.class.getDeclaredField("retries");
    retries.setAccessible(true);
    java.lang.reflect.Field retrySum = RetryBudget.class.getDeclaredField("retrySum");
    retrySum.setAccessible(true);
    synchronized (b) {
      java.lang.reflect.Array.setInt(retries.get(b), 0, Integer.MAX_VALUE);
      retrySum.setLong(b, Integer.MAX_VALUE);
    }
    b.recordRetry(0);
    assertThat(b.retriesInWindow(0)).isEqualTo(Integer.MAX_VALUE + 1L);
    assertThat(b.retriesInWindow(12 * S)).as("the bucket left the window").isZero();
  }
}
