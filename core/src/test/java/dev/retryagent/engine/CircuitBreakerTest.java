package dev.retryagent.engine;

import static dev.retryagent.engine.CircuitTransition.CLOSED_TO_OPEN;
import static dev.retryagent.engine.CircuitTransition.HALF_OPEN_TO_CLOSED;
import static dev.retryagent.engine.CircuitTransition.HALF_OPEN_TO_OPEN;
import static dev.retryagent.engine.CircuitTransition.OPEN_TO_HALF_OPEN;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.policy.CircuitBreakerPolicy;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class CircuitBreakerTest {
  private static final long S = 1_000_000_000L;
  private static final long MS = 1_000_000L;
  private static final long T0 = 42 * S;

  private final List<CircuitTransition> seen = new ArrayList<>();

  private CircuitBreaker breaker(CircuitBreakerPolicy.Builder b) {
    return new CircuitBreaker("http://h:80", b.build(), (br, t) -> seen.add(t));
  }

  private static CircuitBreakerPolicy.Builder count(int size, int minimumCalls) {
    return CircuitBreakerPolicy.builder()
        .countWindow(size)
        .minimumCalls(minimumCalls)
        .failureRateThreshold(0.5)
        .openFor(Duration.ofSeconds(30))
        .halfOpenCalls(3);
  }

  /** Opens at half of at least 3 calls in the last 10 s, kept in 20 buckets of 500 ms. */
  private CircuitBreaker timeWindowBreaker() {
    return breaker(
        CircuitBreakerPolicy.builder()
            .timeWindow(Duration.ofSeconds(10))
            .minimumCalls(3)
            .failureRateThreshold(0.5));
  }

  /** One whole attempt: acquire, then report. */
  private static void call(CircuitBreaker b, boolean failure, long now) {
    long permit = b.tryAcquire(now);
    assertThat(permit).as("permit at %d", now).isNotEqualTo(CircuitBreaker.REJECTED);
    b.onResult(permit, failure, 10 * MS, now);
  }

  private CircuitBreaker openedAt(long now) {
    CircuitBreaker b = breaker(count(4, 4));
    for (int i = 0; i < 4; i++) {
      call(b, true, now);
    }
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
    seen.clear();
    return b;
  }

  private CircuitBreaker halfOpenAt(long now) {
    CircuitBreaker b = openedAt(now - 30 * S);
    long p = b.tryAcquire(now);
    assertThat(p).isNotEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.state()).isEqualTo(CircuitState.HALF_OPEN);
    b.release(p);
    seen.clear();
    return b;
  }

  /**
   * The configuration a call got the breaker under only rises: a call that read the configuration
   * before a reload, making its per-host state after calls of the new one made theirs, does not
   * write its older generation over the newer (r31: the breaker was then hidden from the metrics
   * whenever it was not refusing, though calls reach it).
   */
  @Test
  void theConfigurationACallGotTheBreakerUnderOnlyRises() {
    CircuitBreaker b = breaker(count(10, 5));
    assertThat(b.usedUnder()).isZero();
    b.reachedUnder(5);
    b.reachedUnder(4); // a call of the configuration before the reload, late
    assertThat(b.usedUnder()).isEqualTo(5);
    b.reachedUnder(6);
    assertThat(b.usedUnder()).isEqualTo(6);
  }

  // --- CLOSED

  @Test
  void staysClosedBelowMinimumCallsWhateverTheFailureRate() {
    CircuitBreaker b = breaker(count(10, 5));
    for (int i = 0; i < 4; i++) {
      call(b, true, T0);
    }
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    call(b, true, T0);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
    assertThat(seen).containsExactly(CLOSED_TO_OPEN);
  }

  @Test
  void opensAtTheThresholdNotBelowIt() {
    CircuitBreaker below = breaker(count(10, 10));
    for (int i = 0; i < 10; i++) {
      call(below, i < 4, T0); // 40%
    }
    assertThat(below.state()).isEqualTo(CircuitState.CLOSED);

    CircuitBreaker at = breaker(count(10, 10));
    for (int i = 0; i < 10; i++) {
      call(at, i < 5, T0); // 50%
    }
    assertThat(at.state()).isEqualTo(CircuitState.OPEN);
  }

  @Test
  void aCountWindowForgetsTheOldestOutcome() {
    CircuitBreaker b = breaker(count(4, 4).failureRateThreshold(0.75));
    call(b, true, T0);
    call(b, true, T0);
    call(b, false, T0);
    call(b, false, T0); // 2/4
    call(b, true, T0); // F S S F = 2/4: the first failure left
    call(b, false, T0); // S S F S = 1/4
    call(b, true, T0); // S F S F = 2/4
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    call(b, true, T0); // F S F F = 3/4
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
  }

  @Test
  void aCountWindowSmallerThanMinimumCallsStillOpensOnceFull() {
    // window { type: count, size: 5 } with the default minimumCalls (20): a window of 5 can never
    // hold 20 calls, so minimumCalls is clamped to the window size (as resilience4j does).
    CircuitBreaker b = breaker(CircuitBreakerPolicy.builder().countWindow(5));
    for (int i = 0; i < 4; i++) {
      call(b, true, T0);
    }
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    call(b, true, T0);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
  }

  @Test
  void aMinimumCallsSetAboveACountWindowNeverOpens() {
    // CONFIG.md: "no decision before this many calls in the window". A window of 5 never holds 20
    // calls, so a breaker told so never decides on rates: it stays closed, however many fail. It
    // opened once the window was full (minimumCalls was clamped to the size even when set).
    CircuitBreaker b = breaker(CircuitBreakerPolicy.builder().countWindow(5).minimumCalls(20));
    for (int i = 0; i < 100; i++) {
      call(b, true, T0);
      assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    }
    // Rebuilt from the policy (a reload keeps the setting), still so; a default follows the window.
    CircuitBreakerPolicy set =
        CircuitBreakerPolicy.builder().countWindow(5).minimumCalls(20).build();
    assertThat(set.toBuilder().countWindow(4).build().minimumCalls()).isEqualTo(20);
    CircuitBreakerPolicy unset = CircuitBreakerPolicy.builder().countWindow(5).build();
    assertThat(unset.minimumCalls()).isEqualTo(5);
    assertThat(unset.toBuilder().countWindow(100).build().minimumCalls())
        .isEqualTo(CircuitBreakerPolicy.DEFAULT_MINIMUM_CALLS);
  }

  @Test
  void aTimeWindowForgetsOutcomesOlderThanTheWindow() {
    CircuitBreaker b = timeWindowBreaker();
    long t = 100 * S;
    call(b, true, t);
    call(b, true, t + 1 * S);
    call(b, false, t + 10 * S); // had the failure at t stayed, 2 of 3 would open
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    call(b, false, t + 10 * S); // 1 of 3
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    call(b, true, t + 10 * S); // 2 of 4
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
  }

  @Test
  void aTimeWindowKeepsAnOutcomeForAtLeastNineteenTwentiethsOfItsSizeAndAtMostItsSize() {
    // docs/configuration.md: 10 s in twentieths of 500 ms. A failure at the last nanosecond of its
    // twentieth is still counted 9.5 s later, and gone a nanosecond after.
    long failedAt = 100 * S + 500 * MS - 1;
    CircuitBreaker kept = tenSecondWindowOfTwoCalls();
    call(kept, true, failedAt);
    call(kept, false, failedAt + 9500 * MS);
    assertThat(kept.state()).as("1 failure of 2").isEqualTo(CircuitState.OPEN);

    CircuitBreaker gone = tenSecondWindowOfTwoCalls();
    call(gone, true, failedAt);
    call(gone, false, failedAt + 9500 * MS + 1);
    assertThat(gone.state()).as("1 call: below minimumCalls").isEqualTo(CircuitState.CLOSED);
  }

  private CircuitBreaker tenSecondWindowOfTwoCalls() {
    return breaker(
        CircuitBreakerPolicy.builder()
            .timeWindow(Duration.ofSeconds(10))
            .minimumCalls(2)
            .failureRateThreshold(0.5));
  }

  @Test
  void aTimeWindowForgetsOutcomesOlderThanTheWindowAcrossTheNanoTimeWrap() {
    CircuitBreaker b = timeWindowBreaker();
    long t = Long.MAX_VALUE - 5 * S;
    call(b, true, t);
    call(b, true, t + 1 * S);
    // 20 s later, on the far side of the wrap: both failures left the window long ago.
    for (int i = 0; i < 3; i++) {
      call(b, i == 0, t + 20 * S + i * 500 * MS);
    }
    assertThat(b.state()).as("1 failure of 3 in the window").isEqualTo(CircuitState.CLOSED);
  }

  @Test
  void anOutcomeTimedAWholeWindowLateCountsNowAndKeepsTheNewestBucket() {
    // The time of an outcome is read before the breaker's lock: a thread held up there (a queue
    // of callers, a JVM paused between the two) brings a time others moved the window past. 10 s
    // late in a 10 s window, its twentieth's slot is the newest one's: it emptied that slot, the
    // two failures just recorded went, and the breaker stayed closed at 2 failures of 3.
    CircuitBreaker b = timeWindowBreaker();
    long t = 100 * S;
    call(b, true, t);
    call(b, true, t);
    long permit = b.tryAcquire(t);
    b.onResult(permit, false, 10 * MS, t - 10 * S);
    assertThat(b.state()).as("2 failures of 3 in the window").isEqualTo(CircuitState.OPEN);
  }

  @Test
  void aTimeWindowCountsEverythingWithinIt() {
    CircuitBreaker b = timeWindowBreaker();
    long t = 100 * S;
    call(b, true, t);
    call(b, false, t + 4 * S);
    call(b, false, t + 9 * S); // 1 of 3
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    call(b, true, t + 9_900 * MS); // 2 of 4: t is still in the window
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
  }

  @Test
  void opensOnTheSlowCallRate() {
    CircuitBreaker b =
        breaker(
            count(10, 4)
                .slowCallDuration(Duration.ofSeconds(1))
                .slowCallRateThreshold(0.5)
                .failureRateThreshold(1.0));
    long p = b.tryAcquire(T0);
    b.onResult(p, false, 1 * S, T0); // exactly the duration: not slow
    p = b.tryAcquire(T0);
    b.onResult(p, false, 1 * S + 1, T0); // slow
    p = b.tryAcquire(T0);
    b.onResult(p, false, 10 * MS, T0);
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    p = b.tryAcquire(T0);
    b.onResult(p, false, 5 * S, T0); // 2 slow of 4 = 50%
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
  }

  @Test
  void slowCallsAreIgnoredWhenNoDurationIsSet() {
    CircuitBreaker b = breaker(count(4, 4));
    for (int i = 0; i < 10; i++) {
      long p = b.tryAcquire(T0);
      b.onResult(p, false, 3600 * S, T0);
    }
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
  }

  // --- OPEN

  @Test
  void anOpenBreakerRejectsUntilOpenForHasPassed() {
    CircuitBreaker b = openedAt(T0);
    assertThat(b.openUntilNanos()).isEqualTo(T0 + 30 * S);
    assertThat(b.tryAcquire(T0)).isEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.tryAcquire(T0 + 30 * S - 1)).isEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.isOpenAt(T0 + 30 * S - 1)).isTrue();
    assertThat(b.isOpenAt(T0 + 30 * S)).isFalse();
    assertThat(seen).isEmpty();
    assertThat(b.tryAcquire(T0 + 30 * S)).isNotEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.state()).isEqualTo(CircuitState.HALF_OPEN);
    assertThat(seen).containsExactly(OPEN_TO_HALF_OPEN);
  }

  @Test
  void anOpenBreakerRejectsForOpenForAcrossTheNanoTimeWrap() {
    // System.nanoTime() has an arbitrary origin: only differences mean anything, and a breaker
    // opened 10 s before the counter wraps must still be open for the 30 s that follow.
    long t = Long.MAX_VALUE - 10 * S;
    CircuitBreaker b = openedAt(t);
    assertThat(b.tryAcquire(t + S)).isEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.isOpenAt(t + S)).isTrue();
    assertThat(b.tryAcquire(t + 10 * S + S)).isEqualTo(CircuitBreaker.REJECTED); // wrapped
    assertThat(b.tryAcquire(t + 30 * S - 1)).isEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.isOpenAt(t + 30 * S - 1)).isTrue();
    assertThat(b.isOpenAt(t + 30 * S)).isFalse();
    assertThat(seen).isEmpty();
    assertThat(b.tryAcquire(t + 30 * S)).isNotEqualTo(CircuitBreaker.REJECTED);
    assertThat(seen).containsExactly(OPEN_TO_HALF_OPEN);
  }

  @Test
  void anOpenBreakerStillReadsOpenUntilSomeoneAsks() {
    CircuitBreaker b = openedAt(T0);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
    assertThat(b.isOpenAt(T0 + 31 * S)).isFalse();
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
  }

  // --- HALF_OPEN

  @Test
  void halfOpenLetsOnlyHalfOpenCallsTrialsThrough() {
    CircuitBreaker b = halfOpenAt(T0);
    long p1 = b.tryAcquire(T0);
    long p2 = b.tryAcquire(T0);
    long p3 = b.tryAcquire(T0);
    assertThat(List.of(p1, p2, p3)).doesNotContain(CircuitBreaker.REJECTED);
    assertThat(b.tryAcquire(T0)).isEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.tryAcquire(T0 + 30 * S - 1)).isEqualTo(CircuitBreaker.REJECTED);
  }

  /**
   * A call refused while every trial is out learns when the host is tried again at the latest: if
   * the trials neither close nor reopen the breaker, openFor after the last one went out they count
   * as lost and it opens for openFor more. It was told its half-open time, long past ("in 0 ms").
   */
  @Test
  void aCallRefusedWhileTheTrialsAreOutIsToldWhenTheyRunOut() {
    CircuitBreaker b = halfOpenAt(T0);
    b.tryAcquire(T0);
    b.tryAcquire(T0);
    b.tryAcquire(T0 + 5 * S);
    long now = T0 + 10 * S;
    assertThat(b.tryAcquire(now)).isEqualTo(CircuitBreaker.REJECTED);

    CircuitBreakerOpenException e = b.rejection(now, 1_000_000L);

    assertThat(e.retryAt()).isEqualTo(Instant.ofEpochMilli(1_000_000L + 55_000L));
    assertThat(e.getMessage()).endsWith("(in 55000 ms)");
    // Refused then, when the trials run out: open until 65 s, half-open from there.
    assertThat(b.tryAcquire(T0 + 65 * S - 1)).isEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.tryAcquire(T0 + 65 * S)).isNotEqualTo(CircuitBreaker.REJECTED);
  }

  /**
   * The look before a wait for a rate-limit permit (RetryCall.breakerRefusesNow) says what
   * tryAcquire would, without taking a trial: refused while every trial is out and until openFor
   * after they count as lost; a trial left, or the breaker due again, is not refused. It looked at
   * an open breaker only (isOpenAt), so a call waited for its token while the trials were out.
   */
  @Test
  void theLookBeforeAPermitRefusesAsTryAcquireWouldWhileEveryTrialIsOutAndTakesNone() {
    CircuitBreaker b = halfOpenAt(T0);
    b.tryAcquire(T0);
    b.tryAcquire(T0);
    assertThat(b.refusesAt(T0 + S)).isFalse(); // a trial left
    b.tryAcquire(T0 + 5 * S); // the last trial out

    assertThat(b.refusesAt(T0 + 10 * S)).isTrue();
    assertThat(b.refusesAt(T0 + 40 * S)).isTrue(); // the trials lost: open until 65 s
    assertThat(b.refusesAt(T0 + 65 * S - 1)).isTrue();
    assertThat(b.refusesAt(T0 + 65 * S)).isFalse();
    assertThat(b.state()).isEqualTo(CircuitState.HALF_OPEN); // looked at only
    assertThat(b.tryAcquire(T0 + 65 * S - 1)).isEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.refusesAt(T0 + 65 * S - 1)).isTrue(); // reopened by that ask: the same answer
    assertThat(b.tryAcquire(T0 + 65 * S)).isNotEqualTo(CircuitBreaker.REJECTED);
  }

  @Test
  void anOpenBreakerTellsARefusedCallWhenItHalfOpens() {
    CircuitBreaker b = openedAt(T0);

    CircuitBreakerOpenException e = b.rejection(T0 + 10 * S, 1_000_000L);

    assertThat(e.retryAt()).isEqualTo(Instant.ofEpochMilli(1_000_000L + 20_000L));
  }

  @Test
  void allTrialsMustSucceedToClose() {
    CircuitBreaker b = halfOpenAt(T0);
    long p1 = b.tryAcquire(T0);
    long p2 = b.tryAcquire(T0);
    long p3 = b.tryAcquire(T0);
    b.onResult(p1, false, MS, T0);
    b.onResult(p2, false, MS, T0);
    assertThat(b.state()).isEqualTo(CircuitState.HALF_OPEN);
    b.onResult(p3, false, MS, T0);
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    assertThat(seen).containsExactly(HALF_OPEN_TO_CLOSED);
  }

  @Test
  void anyFailedTrialReopensForAnotherOpenFor() {
    CircuitBreaker b = halfOpenAt(T0);
    long p1 = b.tryAcquire(T0);
    long p2 = b.tryAcquire(T0);
    b.onResult(p1, false, MS, T0);
    b.onResult(p2, true, MS, T0 + 5 * S);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
    assertThat(b.openUntilNanos()).isEqualTo(T0 + 35 * S);
    assertThat(seen).containsExactly(HALF_OPEN_TO_OPEN);
    assertThat(b.tryAcquire(T0 + 35 * S - 1)).isEqualTo(CircuitBreaker.REJECTED);
  }

  /** Opened by four failures, then half-open at 30 s with three trials; slow is over 1 s. */
  private CircuitBreaker halfOpenWithSlowCalls(double slowCallRateThreshold) {
    CircuitBreaker b =
        breaker(
            count(4, 4)
                .slowCallDuration(Duration.ofSeconds(1))
                .slowCallRateThreshold(slowCallRateThreshold));
    for (int i = 0; i < 4; i++) {
      call(b, true, T0);
    }
    return b;
  }

  /** One trial at 30 s that succeeds, slow (2 s) or not (10 ms). */
  private static void trial(CircuitBreaker b, boolean slow) {
    long p = b.tryAcquire(T0 + 30 * S);
    assertThat(p).isNotEqualTo(CircuitBreaker.REJECTED);
    b.onResult(p, false, slow ? 2 * S : 10 * MS, T0 + 30 * S);
  }

  @Test
  void slowTrialsReopenTheBreakerAtTheSlowCallRateThresholdAsTheWindowDoes() {
    // "halfOpenCalls: all must succeed to close"; a slow call succeeded, and slow calls open the
    // breaker "at or above" slowCall.rateThreshold. Any slow trial reopened it: a host with a
    // few slow calls, well under the threshold, was held open again and again.
    CircuitBreaker atTheDefault = halfOpenWithSlowCalls(1.0);
    trial(atTheDefault, true);
    trial(atTheDefault, false);
    trial(atTheDefault, false);
    assertThat(atTheDefault.state()).isEqualTo(CircuitState.CLOSED); // 1 slow of 3 < 100%

    CircuitBreaker allSlow = halfOpenWithSlowCalls(1.0);
    trial(allSlow, true);
    trial(allSlow, true);
    assertThat(allSlow.state()).isEqualTo(CircuitState.HALF_OPEN);
    trial(allSlow, true);
    assertThat(allSlow.state()).isEqualTo(CircuitState.OPEN); // 3 of 3
    assertThat(allSlow.openUntilNanos()).isEqualTo(T0 + 60 * S);

    CircuitBreaker half = halfOpenWithSlowCalls(0.5);
    trial(half, true);
    assertThat(half.state()).isEqualTo(CircuitState.HALF_OPEN); // 1 of 3 < 50%
    trial(half, true);
    assertThat(half.state()).isEqualTo(CircuitState.OPEN); // 2 of 3, whatever the third
  }

  @Test
  void aFailedTrialStillReopensAtOnceWhateverTheSlowCalls() {
    CircuitBreaker b = halfOpenWithSlowCalls(1.0);
    trial(b, true);
    long p = b.tryAcquire(T0 + 30 * S);
    b.onResult(p, true, 10 * MS, T0 + 30 * S);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
  }

  @Test
  void aCancelledTrialGivesItsPermitBack() {
    CircuitBreaker b = halfOpenAt(T0);
    long p1 = b.tryAcquire(T0);
    b.tryAcquire(T0);
    b.tryAcquire(T0);
    assertThat(b.tryAcquire(T0)).isEqualTo(CircuitBreaker.REJECTED);
    b.release(p1);
    long p4 = b.tryAcquire(T0);
    assertThat(p4).isNotEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.tryAcquire(T0)).isEqualTo(CircuitBreaker.REJECTED);
  }

  @Test
  void trialsThatNeverAnswerReopenTheBreakerOnceOpenForHasPassed() {
    // issue 11: a trial whose attempt never reports (a hung connection without a timeout) kept the
    // breaker rejecting forever.
    CircuitBreaker b = halfOpenAt(T0);
    b.tryAcquire(T0);
    b.tryAcquire(T0);
    long last = b.tryAcquire(T0 + 5 * S);
    assertThat(b.tryAcquire(T0 + 35 * S - 1)).isEqualTo(CircuitBreaker.REJECTED);

    // openFor after the last trial went out, the trials count as failed: open from then on.
    assertThat(b.tryAcquire(T0 + 35 * S)).isEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
    assertThat(b.openUntilNanos()).isEqualTo(T0 + 65 * S);
    assertThat(seen).containsExactly(HALF_OPEN_TO_OPEN);

    // A late answer from a lost trial changes nothing; the next half-open lets new trials through.
    b.onResult(last, false, MS, T0 + 40 * S);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
    assertThat(b.tryAcquire(T0 + 65 * S)).isNotEqualTo(CircuitBreaker.REJECTED);
    assertThat(seen).containsExactly(HALF_OPEN_TO_OPEN, OPEN_TO_HALF_OPEN);
  }

  @Test
  void aTrialTimedBeforeTheLastOneDoesNotMoveItsTimeBack() {
    // The time is read before the breaker's lock: a thread held up there (callers of one host
    // queued on it, a JVM paused between the two) takes the last trial with a time older than the
    // one before it. The trials' time went back to it, and the trials still out were taken for
    // lost 4 s early: the breaker reopened at T0 + 31 s, 26 s after the last trial went out.
    CircuitBreaker b = halfOpenAt(T0);
    b.tryAcquire(T0);
    b.tryAcquire(T0 + 5 * S);
    assertThat(b.tryAcquire(T0 + 1 * S)).as("a trial left").isNotEqualTo(CircuitBreaker.REJECTED);

    assertThat(b.tryAcquire(T0 + 35 * S - 1)).isEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.state()).isEqualTo(CircuitState.HALF_OPEN);
    b.tryAcquire(T0 + 35 * S);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
    assertThat(b.openUntilNanos()).isEqualTo(T0 + 65 * S);
  }

  @Test
  void trialsTimedBeforeTheBreakerHalfOpenedKeepTheTimeOfTheTrialThatHalfOpenedIt() {
    // Held up before the lock since before openFor ended, threads take the trials left after the
    // one that half-opened the breaker (released): their older times moved the trials' time back
    // to before the half-open, and the trials out were taken for lost 15 s early.
    CircuitBreaker b = openedAt(T0 - 30 * S);
    long first = b.tryAcquire(T0 + 10 * S); // half-opens: T0 is when openFor ended
    b.release(first);
    b.tryAcquire(T0 - 5 * S);
    b.tryAcquire(T0 - 5 * S);
    b.tryAcquire(T0 - 5 * S);
    assertThat(b.tryAcquire(T0 + 30 * S - 1)).isEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.state()).isEqualTo(CircuitState.HALF_OPEN);
  }

  @Test
  void lostTrialsAreNoticedWhateverTheOriginOfTheClock() {
    // nanoTime's origin is arbitrary: every time it reads may be negative, before the trials'
    // time a breaker starts with. The trials' time must still move to the first trial's.
    long t = -1000 * S;
    CircuitBreaker b = halfOpenAt(t);
    b.tryAcquire(t);
    b.tryAcquire(t);
    b.tryAcquire(t);
    b.tryAcquire(t + 30 * S);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
  }

  @Test
  void lostTrialsNoticedLongAfterwardsLetANewTrialThroughAtOnce() {
    CircuitBreaker b = halfOpenAt(T0);
    b.tryAcquire(T0);
    b.tryAcquire(T0);
    b.tryAcquire(T0);
    // Nobody asked for an hour: the breaker reopened at T0 + 30 s and half-opened at T0 + 60 s.
    assertThat(b.tryAcquire(T0 + 3600 * S)).isNotEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.state()).isEqualTo(CircuitState.HALF_OPEN);
    assertThat(seen).containsExactly(HALF_OPEN_TO_OPEN, OPEN_TO_HALF_OPEN);
  }

  @Test
  void aTrialThatAnswersKeepsTheOthersTime() {
    CircuitBreaker b = halfOpenAt(T0);
    long p1 = b.tryAcquire(T0);
    b.tryAcquire(T0 + 10 * S);
    b.onResult(p1, false, MS, T0 + 20 * S);
    // One slot is free: a new call is a trial, whatever the age of the one still out.
    assertThat(b.tryAcquire(T0 + 50 * S)).isNotEqualTo(CircuitBreaker.REJECTED);
    assertThat(b.state()).isEqualTo(CircuitState.HALF_OPEN);
    assertThat(seen).isEmpty();
  }

  @Test
  void aCancelledTrialDoesNotCountAsASuccess() {
    CircuitBreaker b = halfOpenAt(T0);
    long p1 = b.tryAcquire(T0);
    long p2 = b.tryAcquire(T0);
    long p3 = b.tryAcquire(T0);
    b.onResult(p1, false, MS, T0);
    b.onResult(p2, false, MS, T0);
    b.release(p3);
    assertThat(b.state()).isEqualTo(CircuitState.HALF_OPEN);
    long p4 = b.tryAcquire(T0);
    b.onResult(p4, false, MS, T0);
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
  }

  // --- generations

  @Test
  void anOutcomeFromBeforeATransitionIsIgnored() {
    CircuitBreaker b = breaker(count(4, 4));
    long stale = b.tryAcquire(T0); // issued while CLOSED
    for (int i = 0; i < 4; i++) {
      call(b, true, T0);
    }
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
    long trial = b.tryAcquire(T0 + 30 * S);
    assertThat(b.state()).isEqualTo(CircuitState.HALF_OPEN);

    b.onResult(stale, true, MS, T0 + 30 * S);
    assertThat(b.state()).as("a stale failure does not reopen").isEqualTo(CircuitState.HALF_OPEN);
    b.onResult(stale, false, MS, T0 + 30 * S);
    b.onResult(stale, false, MS, T0 + 30 * S);
    b.onResult(stale, false, MS, T0 + 30 * S);
    assertThat(b.state()).as("stale successes are not trials").isEqualTo(CircuitState.HALF_OPEN);
    b.release(trial);
  }

  @Test
  void aStaleReleaseDoesNotFreeATrialPermit() {
    CircuitBreaker b = breaker(count(4, 4).halfOpenCalls(1));
    long stale = b.tryAcquire(T0);
    for (int i = 0; i < 4; i++) {
      call(b, true, T0);
    }
    long trial = b.tryAcquire(T0 + 30 * S);
    assertThat(trial).isNotEqualTo(CircuitBreaker.REJECTED);
    b.release(stale);
    assertThat(b.tryAcquire(T0 + 30 * S)).isEqualTo(CircuitBreaker.REJECTED);
  }

  @Test
  void aStaleFailureDoesNotCountInTheFreshWindowAfterClosing() {
    CircuitBreaker b = breaker(count(4, 4).halfOpenCalls(1));
    for (int i = 0; i < 4; i++) {
      call(b, true, T0);
    }
    long trial = b.tryAcquire(T0 + 30 * S);
    long staleTrial = trial;
    b.onResult(trial, false, MS, T0 + 30 * S);
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    b.onResult(staleTrial, true, MS, T0 + 30 * S);
    call(b, true, T0 + 31 * S);
    call(b, true, T0 + 31 * S);
    call(b, false, T0 + 31 * S);
    assertThat(b.state())
        .as("2 failures of 3 calls, below minimumCalls")
        .isEqualTo(CircuitState.CLOSED);
  }

  @Test
  void closingStartsAnEmptyWindow() {
    CircuitBreaker b = breaker(count(10, 4).halfOpenCalls(1));
    for (int i = 0; i < 4; i++) {
      call(b, true, T0);
    }
    call(b, false, T0 + 30 * S); // the trial closes it
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    call(b, true, T0 + 31 * S);
    call(b, true, T0 + 31 * S);
    call(b, true, T0 + 31 * S);
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    call(b, true, T0 + 31 * S);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
  }

  @Test
  void theWholeCycleIsReportedInOrder() {
    CircuitBreaker b = breaker(count(4, 4).halfOpenCalls(1));
    for (int i = 0; i < 4; i++) {
      call(b, true, T0);
    }
    call(b, true, T0 + 30 * S); // trial fails
    call(b, false, T0 + 60 * S); // trial succeeds
    assertThat(seen)
        .containsExactly(
            CLOSED_TO_OPEN,
            OPEN_TO_HALF_OPEN,
            HALF_OPEN_TO_OPEN,
            OPEN_TO_HALF_OPEN,
            HALF_OPEN_TO_CLOSED);
    assertThat(b.transitions()).isEqualTo(5);
  }

  @Test
  void aRejectedPermitReportsNothing() {
    CircuitBreaker b = openedAt(T0);
    b.onResult(CircuitBreaker.REJECTED, false, MS, T0 + 30 * S);
    b.release(CircuitBreaker.REJECTED);
    assertThat(b.state()).isEqualTo(CircuitState.OPEN);
  }

  @Test
  void idleMeansClosedWithoutFailures() {
    CircuitBreaker b = breaker(count(10, 10));
    assertThat(b.isIdle(T0)).isTrue();
    call(b, false, T0);
    assertThat(b.isIdle(T0)).isTrue();
    call(b, true, T0);
    assertThat(b.isIdle(T0)).isFalse();
    assertThat(b.isIdle(T0 + 3_600 * S)).as("a count window keeps its failure").isFalse();
    assertThat(openedAt(T0).isIdle(T0)).isFalse();
  }

  @Test
  void theOpenBreakersExceptionNamesARouteAsTheLogLinesDo() {
    // The message the application sees (and logs) wrote route:x, observe unquoted.
    assertThat(new CircuitBreakerOpenException("route:x, observe", 0, 5).getMessage())
        .startsWith("retry-agent: circuit breaker for route:\"x, observe\" is open;");
    assertThat(new CircuitBreakerOpenException("route:llm", 0, 5).getMessage())
        .startsWith("retry-agent: circuit breaker for route:llm is open;");
    assertThat(new CircuitBreakerOpenException("https://api.example.com:443", 0, 5).getMessage())
        .startsWith("retry-agent: circuit breaker for https://api.example.com:443 is open;");
    String longHost = "https://" + "a".repeat(300) + ".example:443";
    assertThat(new CircuitBreakerOpenException(longHost, 0, 5).getMessage())
        .doesNotContain("a".repeat(260));
  }

  @Test
  void aTimeWindowWhoseFailureHasLeftItIsIdleWithoutAnotherCall() {
    // The window moved only when a call recorded: a host that failed once and was never called
    // again kept its failure, was never idle, and so never made room under maxHosts before a
    // breaker in use did.
    CircuitBreaker b = timeWindowBreaker(); // 10 s
    call(b, true, T0);
    assertThat(b.state()).isEqualTo(CircuitState.CLOSED);
    assertThat(b.isIdle(T0 + 5 * S)).isFalse();
    assertThat(b.isIdle(T0 + 11 * S)).isTrue();
  }

  @Test
  void illegalTransitionsThrow() {
    assertThatThrownBy(() -> CircuitTransition.of(CircuitState.OPEN, CircuitState.CLOSED))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("OPEN -> CLOSED");
    assertThatThrownBy(() -> CircuitTransition.of(CircuitState.CLOSED, CircuitState.HALF_OPEN))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> CircuitTransition.of(CircuitState.CLOSED, CircuitState.CLOSED))
        .isInstanceOf(IllegalStateException.class);
    for (CircuitTransition t : CircuitTransition.values()) {
      assertThat(CircuitTransition.of(t.from(), t.to())).isEqualTo(t);
    }
  }

  @Test
  void underContentionAHalfOpenBreakerNeverHasMoreTrialsOutThanHalfOpenCallsAndLosesNoneGivenBack()
      throws Exception {
    // Many threads ask at once and give their permits back (their calls cancelled): at no moment
    // may more than halfOpenCalls trials be out, and once all are back every slot is free again.
    CircuitBreaker b = breaker(count(2, 2));
    call(b, true, T0);
    call(b, true, T0);
    long now = T0 + 30 * S;
    int threads = 8;
    int rounds = 20_000;
    java.util.concurrent.atomic.AtomicInteger out = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicInteger most =
        new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicInteger granted =
        new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(threads);
    List<Thread> all = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread thread =
          new Thread(
              () -> {
                try {
                  start.await();
                } catch (Exception e) {
                  return;
                }
                for (int i = 0; i < rounds; i++) {
                  long permit = b.tryAcquire(now);
                  if (permit != CircuitBreaker.REJECTED) {
                    granted.incrementAndGet();
                    most.accumulateAndGet(out.incrementAndGet(), Math::max);
                    out.decrementAndGet();
                    b.release(permit);
                  }
                }
              });
      thread.start();
      all.add(thread);
    }
    for (Thread thread : all) {
      thread.join(30_000);
      assertThat(thread.isAlive()).isFalse();
    }

    assertThat(granted.get()).isPositive();
    assertThat(most.get()).isBetween(1, 3);
    assertThat(b.state()).isEqualTo(CircuitState.HALF_OPEN);
    for (int i = 0; i < 3; i++) {
      assertThat(b.tryAcquire(now))
          .as("slot %d free again", i)
          .isNotEqualTo(CircuitBreaker.REJECTED);
    }
    assertThat(b.tryAcquire(now)).isEqualTo(CircuitBreaker.REJECTED);
  }

  @Test
  void transitionsAreToldInTheBreakersOrderWhileAListenerBlocksOnOne() throws Exception {
    // Another thread opens the breaker and the listener blocks on the opening; this thread then
    // moves it to half-open. Before, each thread told its own after the breaker's lock: the
    // half-open was told while the opening was still being told, and a listener that notes a
    // transition as it is done with it heard them in the wrong order.
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    List<CircuitTransition> told = Collections.synchronizedList(new ArrayList<>());
    CircuitBreaker b =
        new CircuitBreaker(
            "http://h:80",
            count(1, 1).build(),
            (br, t) -> {
              if (t == CLOSED_TO_OPEN) {
                entered.countDown();
                try {
                  release.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
              told.add(t);
            });
    ExecutorService other = Executors.newSingleThreadExecutor();
    try {
      long permit = b.tryAcquire(T0);
      Future<?> opening = other.submit(() -> b.onResult(permit, true, 10 * MS, T0));
      assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

      long trial = b.tryAcquire(T0 + 30 * S);

      assertThat(trial).isNotEqualTo(CircuitBreaker.REJECTED);
      assertThat(told).as("left to the thread telling").isEmpty();
      release.countDown();
      opening.get(10, TimeUnit.SECONDS);
      assertThat(told).containsExactly(CLOSED_TO_OPEN, OPEN_TO_HALF_OPEN);
    } finally {
      release.countDown();
      other.shutdownNow();
      assertThat(other.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    }
  }
}
