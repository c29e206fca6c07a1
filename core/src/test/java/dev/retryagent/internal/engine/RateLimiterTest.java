package dev.retryagent.internal.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.retryagent.policy.RateLimitPolicy;
import org.junit.jupiter.api.Test;

class RateLimiterTest {
  private static final long S = 1_000_000_000L;
  private static final long MS = 1_000_000L;
  private static final long T0 = 1000 * S;
  private static final long FOREVER = Long.MAX_VALUE;

  private static RateLimiter limiter(double perSecond, int burst) {
    return new RateLimiter(
        RateLimitPolicy.builder().enabled(true).perSecond(perSecond).burst(burst).build(), T0);
  }

  @Test
  void aFullBucketLetsABurstGoAtOnce() {
    RateLimiter l = limiter(1, 3);
    for (int i = 0; i < 3; i++) {
      assertThat(l.reserve(T0, 0, FOREVER)).isZero();
    }
    assertThat(l.reserve(T0, 0, FOREVER)).isEqualTo(RateLimiter.REJECTED);
  }

  @Test
  void tokensComeBackAtTheRate() {
    RateLimiter l = limiter(10, 1);
    assertThat(l.reserve(T0, 0, FOREVER)).isZero();
    assertThat(l.reserve(T0 + 99 * MS, 0, FOREVER)).isEqualTo(RateLimiter.REJECTED);
    assertThat(l.reserve(T0 + 100 * MS, 0, FOREVER)).isZero();
  }

  @Test
  void aTokenIsThereAtTheNanosecondItFallsDueHoweverOftenTheBucketWasAsked() {
    // 100 a second: the token taken at T0 is back at T0 + 10 ms. The bucket, asked 1 ns after T0
    // by a caller it refused, summed its tokens in doubles: 1e-7, then 0.9999999 of the rest came
    // to 0.9999999999999999, and a caller with maxWait 0 was refused at T0 + 10 ms, when the
    // token was due, as if asked 1 ns early.
    RateLimiter l = limiter(100, 1);
    assertThat(l.reserve(T0, 0, FOREVER)).isZero();
    assertThat(l.reserve(T0 + 1, 0, FOREVER)).isEqualTo(RateLimiter.REJECTED);
    assertThat(l.reserve(T0 + 10 * MS - 1, 0, FOREVER)).isEqualTo(RateLimiter.REJECTED);
    assertThat(l.reserve(T0 + 10 * MS, 0, FOREVER)).isZero();
    // And a reservation's wait ends when its token falls due: one taken then is not refused.
    assertThat(l.reserve(T0 + 10 * MS, 20 * MS, FOREVER)).isEqualTo(10 * MS);
    assertThat(l.reserve(T0 + 20 * MS + 1, 0, FOREVER)).isEqualTo(RateLimiter.REJECTED);
    assertThat(l.reserve(T0 + 30 * MS, 0, FOREVER)).isZero();
  }

  @Test
  void theBucketNeverHoldsMoreThanBurst() {
    RateLimiter l = limiter(100, 2);
    assertThat(l.availableTokens(T0 + 3600 * S)).isEqualTo(2.0);
    assertThat(l.reserve(T0 + 3600 * S, 0, FOREVER)).isZero();
    assertThat(l.reserve(T0 + 3600 * S, 0, FOREVER)).isZero();
    assertThat(l.reserve(T0 + 3600 * S, 0, FOREVER)).isEqualTo(RateLimiter.REJECTED);
  }

  @Test
  void aCallerWithinMaxWaitReservesTheNextTokenAndLearnsItsWait() {
    RateLimiter l = limiter(2, 1); // a token every 500 ms
    assertThat(l.reserve(T0, 600 * MS, FOREVER)).isZero();
    assertThat(l.reserve(T0, 600 * MS, FOREVER)).isEqualTo(500 * MS);
    // The next one would wait 1 s: more than it accepts, so it is refused and costs nothing.
    assertThat(l.reserve(T0, 600 * MS, FOREVER)).isEqualTo(RateLimiter.REJECTED);
    assertThat(l.availableTokens(T0)).isCloseTo(-1.0, within(1e-9));
    // Waiters are served in order: the next caller queues behind the first reservation.
    assertThat(l.reserve(T0 + 500 * MS, 600 * MS, FOREVER)).isEqualTo(500 * MS);
  }

  @Test
  void aPauseMakesEveryCallerWaitUntilItEnds() {
    RateLimiter l = limiter(1000, 100);
    l.pauseUntil(T0 + 5 * S);
    assertThat(l.reserve(T0, 0, FOREVER)).isEqualTo(5 * S);
    assertThat(l.reserve(T0 + 2 * S, 0, FOREVER)).isEqualTo(3 * S);
    assertThat(l.pauseRemainingNanos(T0 + 2 * S)).isEqualTo(3 * S);
    assertThat(l.reserve(T0 + 5 * S, 0, FOREVER)).isZero();
    assertThat(l.pauseRemainingNanos(T0 + 5 * S)).isZero();
  }

  @Test
  void aCallerThatCannotWaitForThePauseIsRefused() {
    RateLimiter l = limiter(1000, 100);
    l.pauseUntil(T0 + 5 * S);
    assertThat(l.reserve(T0, 0, 5 * S - 1)).isEqualTo(RateLimiter.REJECTED);
    assertThat(l.reserve(T0, 0, 5 * S)).isEqualTo(5 * S);
  }

  @Test
  void whenAPauseEndsNoMoreThanBurstCallersGoAtOnce() {
    // A token every second, a bucket of 2, a 10 s pause and five patient callers: two go when the
    // pause ends, the others one per second after it, not all five at once.
    RateLimiter l = limiter(1, 2);
    l.pauseUntil(T0 + 10 * S);
    long[] waits = new long[5];
    for (int i = 0; i < 5; i++) {
      waits[i] = l.reserve(T0, 20 * S, FOREVER);
    }
    assertThat(waits).containsExactly(10 * S, 10 * S, 11 * S, 12 * S, 13 * S);
  }

  @Test
  void aTokenWaitAfterThePauseMustStillFitTheCallersTime() {
    RateLimiter l = limiter(1, 1);
    l.pauseUntil(T0 + 10 * S);
    assertThat(l.reserve(T0, 20 * S, 10 * S)).isEqualTo(10 * S);
    assertThat(l.reserve(T0, 20 * S, 10 * S)).as("would start at 11 s").isEqualTo(-1);
    assertThat(l.reserve(T0, 20 * S, 11 * S)).isEqualTo(11 * S);
  }

  @Test
  void theLaterPauseWins() {
    RateLimiter l = limiter(1000, 100);
    l.pauseUntil(T0 + 5 * S);
    l.pauseUntil(T0 + 2 * S);
    assertThat(l.pauseRemainingNanos(T0)).isEqualTo(5 * S);
    l.pauseUntil(T0 + 8 * S);
    assertThat(l.pauseRemainingNanos(T0)).isEqualTo(8 * S);
  }

  @Test
  void aPauseThatEndedIsForgotten() {
    RateLimiter l = limiter(1000, 100);
    l.pauseUntil(T0 + 1 * S);
    assertThat(l.reserve(T0 + 2 * S, 0, 0)).isZero();
    l.pauseUntil(T0 + 1500 * MS); // earlier than now: no effect once the old pause is over
    assertThat(l.reserve(T0 + 2 * S, 0, 0)).isZero();
  }

  @Test
  void idleMeansAFullBucketAndNoPause() {
    RateLimiter l = limiter(10, 2);
    assertThat(l.isIdle(T0)).isTrue();
    l.reserve(T0, 0, FOREVER);
    assertThat(l.isIdle(T0)).isFalse();
    assertThat(l.isIdle(T0 + 100 * MS)).isTrue();
    l.pauseUntil(T0 + 10 * S);
    assertThat(l.isIdle(T0 + 1 * S)).isFalse();
    assertThat(l.isIdle(T0 + 10 * S)).isTrue();
  }

  /**
   * A permit reserved ahead (1/s, burst 1, the bucket empty at T0, a retry 2 s on) holds the token
   * due at T0 + 2 s, not the next one: the one due at T0 + 1 s goes to a caller asking then
   * (before, refused), the one at T0 + 2 s is the reservation's, and the next caller waits for T0 +
   * 3 s.
   */
  @Test
  void aPermitReservedAheadLeavesTheTokensBeforeItsInstantToOthers() {
    RateLimiter l = limiter(1, 1);
    Object a = new Object();
    assertThat(l.reserve(T0, 0, FOREVER)).isZero();
    assertThat(l.reserveAhead(T0, 2 * S, 2 * S, FOREVER, a)).isEqualTo(S);
    assertThat(l.reserve(T0 + S, 0, FOREVER)).isZero();
    assertThat(l.reserve(T0 + 2 * S, 0, FOREVER)).isEqualTo(RateLimiter.REJECTED);
    assertThat(l.reserve(T0 + 2 * S, FOREVER, FOREVER)).isEqualTo(S);
  }

  /**
   * A caller whose permit would leave none for the reservation ahead at its instant is served after
   * it, as if the reservation had taken the next token at once: the rate holds.
   */
  @Test
  void aCallerThatWouldLeaveNoTokenForAReservationAheadComesAfterIt() {
    RateLimiter l = limiter(1, 1);
    Object a = new Object();
    assertThat(l.reserveAhead(T0, 2 * S, 2 * S, FOREVER, a)).isZero();
    assertThat(l.reserve(T0, 0, FOREVER)).as("T0's token; T0 + 1 s's is left").isZero();
    assertThat(l.reserve(T0, FOREVER, FOREVER)).as("T0 + 1 s's; T0 + 2 s's is left").isEqualTo(S);
    assertThat(l.reserve(T0, FOREVER, FOREVER))
        .as("T0 + 2 s's is the reservation's")
        .isEqualTo(3 * S);
  }

  /**
   * A reservation ahead given back by its holder before its instant is forgotten (the bucket as if
   * not asked); after its instant, or taken for its attempt, it goes back as a token, once.
   */
  @Test
  void aReservationAheadGoesBackExactlyOnce() {
    RateLimiter l = limiter(1, 1);
    Object a = new Object();
    assertThat(l.reserve(T0, 0, FOREVER)).isZero();
    l.reserveAhead(T0, 2 * S, 2 * S, FOREVER, a);
    l.giveBack(T0 + 500 * MS, a);
    assertThat(l.availableTokens(T0 + 500 * MS)).isCloseTo(0.5, within(1e-9));
    assertThat(l.isIdle(T0 + S)).isTrue();

    l.reserveAhead(T0 + S, 2 * S, 2 * S, FOREVER, a);
    assertThat(l.isIdle(T0 + S)).isFalse();
    l.takeAhead(T0 + 2 * S, a); // its attempt starts early: taken from the bucket then
    l.giveBack(T0 + 2 * S, a); // and never made
    assertThat(l.availableTokens(T0 + 2 * S)).isEqualTo(1.0);
    assertThat(l.isIdle(T0 + 2 * S)).isTrue();
  }

  /**
   * A caller whose permit would leave the token reserved ahead none is served after it, and both
   * tokens are taken at the reservation's instant: the bucket, full from T0 + 1 s until the retry
   * starts at T0 + 1.5 s, counts no token for that time. Taken from the bucket when that caller
   * asked, the retry's token counted as spent at T0 + 1 s, and the caller's came at T0 + 2 s, 500
   * ms after the retry's attempt (1/s, burst 1).
   */
  @Test
  void aCallerServedAfterAReservationAheadGetsTheTokenAfterTheRetrysInstant() {
    RateLimiter l = limiter(1, 1);
    Object a = new Object();
    assertThat(l.reserve(T0, 0, FOREVER)).isZero();
    assertThat(l.reserveAhead(T0, 1500 * MS, 1500 * MS, FOREVER, a)).isEqualTo(S);
    assertThat(l.reserve(T0 + 100 * MS, FOREVER, FOREVER))
        .as("T0 + 2.5 s, a token after the retry's start")
        .isEqualTo(2400 * MS);
    l.takeAhead(T0 + 1500 * MS, a);
    assertThat(l.reserve(T0 + 1500 * MS, FOREVER, FOREVER)).isEqualTo(2 * S);
  }

  /**
   * The holder gives its token back before its instant while a caller waits after it (1/s, burst
   * 1): the bucket is never a token richer than without the reservation. A later caller comes a
   * token after that one, not with it: the bucket, full from the retry's instant until that
   * caller's, holds no second token to give (before, the two went at the same instant).
   */
  @Test
  void aReservationAheadGivenBackWhileACallerWaitsAfterItLeavesNoExtraToken() {
    RateLimiter l = limiter(1, 1);
    Object a = new Object();
    assertThat(l.reserve(T0, 0, FOREVER)).isZero();
    assertThat(l.reserveAhead(T0, 1500 * MS, 1500 * MS, FOREVER, a)).isEqualTo(S);
    assertThat(l.reserve(T0 + 100 * MS, FOREVER, FOREVER)).as("b: T0 + 2.5 s").isEqualTo(2400 * MS);
    l.giveBack(T0 + 200 * MS, a);
    assertThat(l.reserve(T0 + 300 * MS, FOREVER, FOREVER))
        .as("c: T0 + 3.5 s, a token after b's")
        .isEqualTo(3200 * MS);
    assertThat(l.isIdle(T0 + 4500 * MS)).isTrue();
  }

  /**
   * With burst 2 the same give-back is exact: the holder's token is not taken at its instant, and
   * the next caller has it, at the instant the caller before it has its own (within burst).
   */
  @Test
  void aReservationAheadGivenBackWhileACallerWaitsAfterItGoesBackWithBurstTwo() {
    RateLimiter l = limiter(1, 2);
    Object a = new Object();
    assertThat(l.reserve(T0, 0, FOREVER)).isZero();
    assertThat(l.reserve(T0, 0, FOREVER)).isZero();
    assertThat(l.reserveAhead(T0, S, S, FOREVER, a)).isEqualTo(S);
    assertThat(l.reserve(T0, FOREVER, FOREVER)).as("b: T0 + 2 s").isEqualTo(2 * S);
    l.giveBack(T0 + 500 * MS, a);
    assertThat(l.reserve(T0 + 600 * MS, FOREVER, FOREVER)).as("c: T0 + 2 s").isEqualTo(1400 * MS);
    assertThat(l.reserve(T0 + 600 * MS, FOREVER, FOREVER)).as("d: T0 + 3 s").isEqualTo(2400 * MS);
  }

  /**
   * {@link RateLimiter#availableTokens}: a token reserved ahead for a retry counts only once the
   * bucket could not give it to another caller and keep one for the retry's instant. Before, the
   * bucket said 0 during the whole backoff while a caller asking got the token at once.
   */
  @Test
  void availableTokensCountATokenReservedAheadOnlyOnceOthersCannotHaveIt() {
    RateLimiter l = limiter(1, 1);
    Object a = new Object();
    assertThat(l.reserveAhead(T0, 2 * S, 2 * S, FOREVER, a)).isZero();
    assertThat(l.availableTokens(T0)).as("a caller now goes at once").isEqualTo(1.0);
    // At T0 + 1.5 s a caller would be served after the retry, at T0 + 3 s: 1.5 tokens' wait.
    assertThat(l.availableTokens(T0 + 1500 * MS)).isCloseTo(-0.5, within(1e-9));
    assertThat(l.reserve(T0 + 1500 * MS, FOREVER, FOREVER)).isEqualTo(1500 * MS);
    assertThat(l.availableTokens(T0 + 1500 * MS)).isCloseTo(-1.5, within(1e-9));
  }

  /**
   * {@link RateLimiter#giveBack(long)}: with burst 1, a permit given back before it falls due while
   * a later one is still queued stays spent. Put back as a token, the bucket counted it after the
   * last one queued: the next caller was told that one's instant, two attempts at once at 1/s.
   */
  @Test
  void aQueuedPermitGivenBackWithALaterOneQueuedLeavesNoSecondAttemptAtItsInstantWithBurstOne() {
    RateLimiter l = limiter(1, 1);
    assertThat(l.reserve(T0, FOREVER, FOREVER)).as("a: now").isZero();
    assertThat(l.reserve(T0, FOREVER, FOREVER)).as("b: T0 + 1 s").isEqualTo(S);
    assertThat(l.reserve(T0, FOREVER, FOREVER)).as("c: T0 + 2 s").isEqualTo(2 * S);
    l.giveBack(T0 + 500 * MS); // b gives up waiting
    assertThat(l.reserve(T0 + 500 * MS, FOREVER, FOREVER)).as("d: after c").isEqualTo(2500 * MS);
  }

  /**
   * With burst 2, permits given back with later ones queued after them stay spent too: which ones
   * they were, and so whether their instant had passed, is not known (see the next tests), and a
   * token put back after its instant can be one the bucket, never asked, would have lost to the
   * cap. Before, c and d went back as tokens, exact for a waiter that gave up but a token over the
   * limit for a permit whose attempt was refused after its instant. The last one queued still goes
   * back whole.
   */
  @Test
  void queuedPermitsGivenBackWithLaterOnesQueuedStaySpentAndTheLastGoesBackWhole() {
    RateLimiter l = limiter(1, 2);
    Object c = new Object();
    Object d = new Object();
    Object e = new Object();
    assertThat(l.reserve(T0, FOREVER, FOREVER, new Object())).isZero();
    assertThat(l.reserve(T0, FOREVER, FOREVER, new Object())).isZero();
    assertThat(l.reserve(T0, FOREVER, FOREVER, c)).as("c: T0 + 1 s").isEqualTo(S);
    assertThat(l.reserve(T0, FOREVER, FOREVER, d)).as("d: T0 + 2 s").isEqualTo(2 * S);
    assertThat(l.reserve(T0, FOREVER, FOREVER, e)).as("e: T0 + 3 s").isEqualTo(3 * S);
    l.giveBack(T0 + 500 * MS, c);
    l.giveBack(T0 + 600 * MS, d);
    // e, taken last, gives up its wait: the bucket as if it had not asked.
    l.giveBack(T0 + 2500 * MS, e);
    assertThat(l.reserve(T0 + 3 * S, 0, FOREVER)).as("f: e's instant").isZero();
    assertThat(l.reserve(T0 + 3 * S, FOREVER, FOREVER)).as("g: a token after f").isEqualTo(S);
  }

  /**
   * 1/s, burst 1: a takes the token at T0 and its attempt is never made; b takes the token due at
   * T0 + 1 s, at T0 + 1.2 s; a's permit goes back at T0 + 1.5 s. A bucket never asked by a was full
   * from T0 until b took its token, and holds 0.3 of one at T0 + 1.5 s: c waits until T0 + 2.2 s.
   * Before, a's token went back whole and c went at T0 + 1.5 s, b and c 300 ms apart.
   */
  @Test
  void aPermitGivenBackAfterItsInstantLeavesNoTokenThatABucketFullMeanwhileLost() {
    RateLimiter l = limiter(1, 1);
    Object a = new Object();
    assertThat(l.reserve(T0, 0, FOREVER, a)).isZero();
    assertThat(l.reserve(T0 + 1200 * MS, 0, FOREVER, new Object())).as("b").isZero();
    l.giveBack(T0 + 1500 * MS, a);
    assertThat(l.reserve(T0 + 1500 * MS, FOREVER, FOREVER, new Object()))
        .as("c: T0 + 2.2 s")
        .isEqualTo(700 * MS);
  }

  /**
   * 1/s, burst 1: a takes the token at T0, b reserves the next (T0 + 1 s), and a's attempt, refused
   * by the client, gives its permit back at T0 + 500 ms. Never asked by a, the bucket was full at
   * T0 and b's token is the one due at T0 + 1 s: c comes a token after b. Before, a's token was
   * counted as b's wait given up (the last reservation), and c went at T0 + 1 s with b.
   */
  @Test
  void aPermitGivenBackAfterItsInstantWhileAnotherWaitsLeavesNoSecondAttemptAtThatOnesInstant() {
    RateLimiter l = limiter(1, 1);
    Object a = new Object();
    assertThat(l.reserve(T0, 0, FOREVER, a)).isZero();
    assertThat(l.reserve(T0, FOREVER, FOREVER, new Object())).as("b: T0 + 1 s").isEqualTo(S);
    l.giveBack(T0 + 500 * MS, a);
    assertThat(l.reserve(T0 + 500 * MS, FOREVER, FOREVER, new Object()))
        .as("c: T0 + 2 s")
        .isEqualTo(1500 * MS);
  }

  /**
   * 1/s, burst 2: a and b take the full bucket at T0, a's attempt is never made; by T0 + 5 s the
   * bucket is full again and c and d take it; a's permit goes back at T0 + 5.5 s. Never asked by a,
   * the bucket was full from T0 + 1 s: it holds 0.5 at T0 + 5.5 s, and e waits 500 ms. Before, e
   * went at once: c, d and e in 500 ms, one over burst + rate.
   */
  @Test
  void aPermitGivenBackLongAfterItsInstantLeavesNoTokenOverTheNextBurst() {
    RateLimiter l = limiter(1, 2);
    Object a = new Object();
    assertThat(l.reserve(T0, 0, FOREVER, a)).isZero();
    assertThat(l.reserve(T0, 0, FOREVER, new Object())).isZero();
    assertThat(l.reserve(T0 + 5 * S, 0, FOREVER, new Object())).as("c").isZero();
    assertThat(l.reserve(T0 + 5 * S, 0, FOREVER, new Object())).as("d").isZero();
    l.giveBack(T0 + 5500 * MS, a);
    assertThat(l.availableTokens(T0 + 5500 * MS)).isCloseTo(0.5, within(1e-9));
    assertThat(l.reserve(T0 + 5500 * MS, FOREVER, FOREVER, new Object()))
        .as("e")
        .isEqualTo(500 * MS);
  }

  /**
   * The permit taken last goes back whole after its instant (a bucket never asked for it would hold
   * that token), never beyond burst: 1/s, burst 2, a takes a token at T0 and gives it back at T0 +
   * 300 ms: the bucket holds 2, not 2.3; a lone waiter giving up (burst 1) leaves the bucket as if
   * it had not asked.
   */
  @Test
  void thePermitTakenLastGoesBackWholeAndNeverBeyondBurst() {
    RateLimiter l = limiter(1, 2);
    Object a = new Object();
    assertThat(l.reserve(T0, 0, FOREVER, a)).isZero();
    l.giveBack(T0 + 300 * MS, a);
    assertThat(l.availableTokens(T0 + 300 * MS)).isEqualTo(2.0);
    assertThat(l.isIdle(T0 + 300 * MS)).isTrue();

    RateLimiter one = limiter(1, 1);
    Object b = new Object();
    assertThat(one.reserve(T0, 0, FOREVER, new Object())).isZero();
    assertThat(one.reserve(T0, FOREVER, FOREVER, b)).as("b: T0 + 1 s").isEqualTo(S);
    one.giveBack(T0 + 500 * MS, b);
    assertThat(one.reserve(T0 + 500 * MS, FOREVER, FOREVER, new Object()))
        .as("c: b's instant")
        .isEqualTo(500 * MS);
  }

  /** forget: the holder's permit is no longer known (it stays spent); another holder's is. */
  @Test
  void aForgottenHolderGivesBackNothingAndAnotherHolderIsNotForgotten() {
    RateLimiter l = limiter(1, 5);
    Object a = new Object();
    Object b = new Object();
    assertThat(l.reserve(T0, 0, FOREVER, a)).isZero();
    l.forget(b);
    l.giveBack(T0, a);
    assertThat(l.availableTokens(T0)).as("a's permit, still the last").isEqualTo(5.0);
    assertThat(l.reserve(T0, 0, FOREVER, a)).isZero();
    l.forget(a);
    l.giveBack(T0, a);
    assertThat(l.availableTokens(T0)).as("a's permit, forgotten").isEqualTo(4.0);
  }
}
