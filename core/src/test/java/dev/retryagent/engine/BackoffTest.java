package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.Jitter;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class BackoffTest {
  private static final long MS = 1_000_000L;

  private static BackoffPolicy policy(Jitter jitter) {
    return BackoffPolicy.builder()
        .initial(Duration.ofMillis(100))
        .multiplier(2.0)
        .max(Duration.ofSeconds(5))
        .jitter(jitter)
        .jitterFactor(0.2)
        .build();
  }

  @Test
  void theBaseDelayGrowsByTheMultiplierFromInitial() {
    BackoffPolicy p = policy(Jitter.NONE);
    assertThat(Backoff.baseDelayNanos(p, 1)).isEqualTo(100 * MS);
    assertThat(Backoff.baseDelayNanos(p, 2)).isEqualTo(200 * MS);
    assertThat(Backoff.baseDelayNanos(p, 3)).isEqualTo(400 * MS);
    assertThat(Backoff.baseDelayNanos(p, 6)).isEqualTo(3200 * MS);
  }

  @Test
  void theBaseDelayIsCappedAtMax() {
    BackoffPolicy p = policy(Jitter.NONE);
    assertThat(Backoff.baseDelayNanos(p, 7)).isEqualTo(5000 * MS); // 6.4s uncapped
    assertThat(Backoff.baseDelayNanos(p, 10)).isEqualTo(5000 * MS);
    assertThat(Backoff.baseDelayNanos(p, 2_000)).isEqualTo(5000 * MS); // pow overflows to infinity
    BackoffPolicy steep = p.toBuilder().multiplier(BackoffPolicy.MAX_MULTIPLIER).build();
    assertThat(Backoff.baseDelayNanos(steep, 2)).isEqualTo(5000 * MS);
  }

  @Test
  void multiplierOneGivesAConstantDelay() {
    BackoffPolicy p = policy(Jitter.NONE).toBuilder().multiplier(1.0).build();
    for (int retry = 1; retry <= 10; retry++) {
      assertThat(Backoff.delayNanos(p, retry, 0, 0.7)).isEqualTo(100 * MS);
    }
  }

  @Test
  void aBackoffOfZeroRetriesAtOnceWhateverTheJitter() {
    for (Jitter jitter : Jitter.values()) {
      BackoffPolicy p = policy(jitter).toBuilder().initial(Duration.ZERO).build();
      for (int retry = 1; retry <= 10; retry++) {
        assertThat(Backoff.delayNanos(p, retry, 0, 0.999))
            .as("%s, retry %d", jitter, retry)
            .isZero();
      }
      BackoffPolicy capped =
          policy(jitter).toBuilder().initial(Duration.ZERO).max(Duration.ZERO).build();
      assertThat(Backoff.delayNanos(capped, 3, 0, 0.999)).as("%s, max 0", jitter).isZero();
    }
  }

  @Test
  void noJitterIsExactlyTheBaseDelayWhateverTheRandomValue() {
    BackoffPolicy p = policy(Jitter.NONE);
    assertThat(Backoff.delayNanos(p, 3, 0, 0.0)).isEqualTo(400 * MS);
    assertThat(Backoff.delayNanos(p, 3, 0, 0.999)).isEqualTo(400 * MS);
  }

  @Test
  void fullJitterIsUniformFromZeroToTheDelay() {
    BackoffPolicy p = policy(Jitter.FULL);
    assertThat(Backoff.delayNanos(p, 2, 0, 0.0)).isZero();
    assertThat(Backoff.delayNanos(p, 2, 0, 0.25)).isEqualTo(50 * MS);
    assertThat(Backoff.delayNanos(p, 2, 0, 0.5)).isEqualTo(100 * MS);
    assertThat(Backoff.delayNanos(p, 10, 0, 0.5)).isEqualTo(2500 * MS); // half of the cap
    assertThat(Backoff.delayNanos(p, 2, 0, Math.nextDown(1.0))).isLessThan(200 * MS);
  }

  @Test
  void equalJitterIsHalfTheDelayPlusUniformUpToTheOtherHalf() {
    BackoffPolicy p = policy(Jitter.EQUAL);
    assertThat(Backoff.delayNanos(p, 2, 0, 0.0)).isEqualTo(100 * MS);
    assertThat(Backoff.delayNanos(p, 2, 0, 0.5)).isEqualTo(150 * MS);
    assertThat(Backoff.delayNanos(p, 3, 0, 0.25)).isEqualTo(250 * MS);
    assertThat(Backoff.delayNanos(p, 10, 0, 0.0)).isEqualTo(2500 * MS);
    assertThat(Backoff.delayNanos(p, 2, 0, Math.nextDown(1.0))).isLessThan(200 * MS);
  }

  @Test
  void decorrelatedJitterStartsFromInitialAndTriplesThePreviousDelay() {
    BackoffPolicy p = policy(Jitter.DECORRELATED);
    // Before the first retry "previous" is initial: U(100ms, 300ms).
    assertThat(Backoff.delayNanos(p, 1, 0, 0.0)).isEqualTo(100 * MS);
    assertThat(Backoff.delayNanos(p, 1, 0, 0.5)).isEqualTo(200 * MS);
    // previous 1s: U(100ms, 3s)
    assertThat(Backoff.delayNanos(p, 2, 1000 * MS, 0.5)).isEqualTo(1550 * MS);
    assertThat(Backoff.delayNanos(p, 2, 1000 * MS, 0.0)).isEqualTo(100 * MS);
    // A previous delay below initial counts as initial.
    assertThat(Backoff.delayNanos(p, 2, 10 * MS, 0.5)).isEqualTo(200 * MS);
  }

  @Test
  void decorrelatedJitterIsCappedAtMax() {
    BackoffPolicy p = policy(Jitter.DECORRELATED);
    // previous 4s: U(100ms, 12s) = 8.16s at 0.7, capped at 5s.
    assertThat(Backoff.delayNanos(p, 5, 4000 * MS, 0.7)).isEqualTo(5000 * MS);
    // previous 1.5s: U(100ms, 4.5s) = 4.06s at 0.9, under the cap.
    assertThat(Backoff.delayNanos(p, 5, 1500 * MS, 0.9)).isEqualTo(4060 * MS);
  }

  @Test
  void decorrelatedJitterIgnoresTheRetryNumber() {
    BackoffPolicy p = policy(Jitter.DECORRELATED);
    assertThat(Backoff.delayNanos(p, 1, 500 * MS, 0.3))
        .isEqualTo(Backoff.delayNanos(p, 9, 500 * MS, 0.3));
  }

  @Test
  void proportionalJitterAddsUpToJitterFactorOfTheDelay() {
    BackoffPolicy p = policy(Jitter.PROPORTIONAL);
    assertThat(Backoff.delayNanos(p, 3, 0, 0.0)).isEqualTo(400 * MS);
    assertThat(Backoff.delayNanos(p, 3, 0, 0.5)).isEqualTo(440 * MS);
    assertThat(Backoff.delayNanos(p, 3, 0, 0.25)).isEqualTo(420 * MS);
    BackoffPolicy wide = p.toBuilder().jitterFactor(1.0).build();
    assertThat(Backoff.delayNanos(wide, 1, 0, 0.5)).isEqualTo(150 * MS);
    BackoffPolicy none = p.toBuilder().jitterFactor(0.0).build();
    assertThat(Backoff.delayNanos(none, 1, 0, 0.9)).isEqualTo(100 * MS);
  }

  @Test
  void proportionalJitterIsAddedAfterTheCap() {
    // The contract caps "the computed delay" d and then adds U(0, jitterFactor x d): at the cap the
    // delay can reach max x (1 + jitterFactor). Pinned here so a change is deliberate.
    BackoffPolicy p = policy(Jitter.PROPORTIONAL);
    assertThat(Backoff.delayNanos(p, 10, 0, 0.5)).isEqualTo(5500 * MS);
  }

  /**
   * A file with {@code initial} above {@code max} loads with {@code initial = max} (CrossChecks):
   * with the cap, every jitter kind then gives what the contract's formula gives with the written
   * initial (here 10s over a max of 5s), the base delay being the cap from the first retry on.
   */
  @Test
  void anInitialCappedAtMaxGivesWhatTheContractsFormulasGiveWithTheWrittenInitial() {
    long initial = 10_000 * MS; // as written
    long max = 5_000 * MS;
    for (Jitter jitter : Jitter.values()) {
      BackoffPolicy p =
          BackoffPolicy.builder()
              .initial(Duration.ofNanos(max))
              .multiplier(2.0)
              .max(Duration.ofNanos(max))
              .jitter(jitter)
              .jitterFactor(0.2)
              .build();
      long previous = 0;
      for (int retry = 1; retry <= 4; retry++) {
        for (double r : new double[] {0.0, 0.3, 0.999}) {
          long d = Math.min(max, (long) (initial * Math.pow(2.0, retry - 1))); // min(max, ...)
          long expected;
          switch (jitter) {
            case NONE:
              expected = d;
              break;
            case FULL:
              expected = (long) (r * d);
              break;
            case EQUAL:
              expected = d / 2 + (long) (r * (d - d / 2));
              break;
            case DECORRELATED:
              long prev = Math.max(initial, previous);
              expected = Math.min(max, initial + (long) (r * (3.0 * prev - initial)));
              break;
            case PROPORTIONAL:
              expected = d + (long) (r * 0.2 * d);
              break;
            default:
              throw new AssertionError(jitter);
          }
          assertThat(Backoff.delayNanos(p, retry, previous, r))
              .as("%s retry %d random %s", jitter, retry, r)
              .isEqualTo(expected);
        }
        previous = Backoff.delayNanos(p, retry, previous, 0.5);
      }
    }
  }
}
