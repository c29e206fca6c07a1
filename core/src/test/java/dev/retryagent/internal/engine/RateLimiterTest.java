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
   * With burst 2 one permit given back with later ones queued goes back: the bucket, one token
   * richer, still never fills before their turn. A second would: c and d given back before e's
   * turn, the bucket counted both after it, and e, f and g all went at T0 + 3 s.
   */
  @Test
  void queuedPermitsGivenBackWithBurstTwoGoBackOneAtATimeBeforeTheLastQueued() {
    RateLimiter l = limiter(1, 2);
    assertThat(l.reserve(T0, FOREVER, FOREVER)).isZero();
    assertThat(l.reserve(T0, FOREVER, FOREVER)).isZero();
    assertThat(l.reserve(T0, FOREVER, FOREVER)).as("c: T0 + 1 s").isEqualTo(S);
    assertThat(l.reserve(T0, FOREVER, FOREVER)).as("d: T0 + 2 s").isEqualTo(2 * S);
    assertThat(l.reserve(T0, FOREVER, FOREVER)).as("e: T0 + 3 s").isEqualTo(3 * S);
    l.giveBack(T0 + 500 * MS); // c
    l.giveBack(T0 + 600 * MS); // d
    // At T0 + 3 s the bucket holds 2 (full since T0 + 2 s): e and f go, g a token later.
    assertThat(l.reserve(T0 + 3 * S, 0, FOREVER)).as("f: with e").isZero();
    assertThat(l.reserve(T0 + 3 * S, FOREVER, FOREVER)).as("g: T0 + 4 s").isEqualTo(S);
    // Once those reserved have come due, a give-back with a later one queued goes back again.
    long t = T0 + 100 * S;
    assertThat(l.reserve(t, FOREVER, FOREVER)).isZero();
    assertThat(l.reserve(t, FOREVER, FOREVER)).isZero();
    assertThat(l.reserve(t, FOREVER, FOREVER)).as("h: t + 1 s").isEqualTo(S);
    assertThat(l.reserve(t, FOREVER, FOREVER)).as("i: t + 2 s").isEqualTo(2 * S);
    l.giveBack(t + 500 * MS); // h
    assertThat(l.reserve(t + 500 * MS, FOREVER, FOREVER)).as("j: with i").isEqualTo(1500 * MS);
  }
}
