package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.Jitter;
import java.time.Duration;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/** Every jitter mode stays within the bounds of its formula, whatever the policy and the dice. */
class JitterProperties {
  @Provide
  Arbitrary<BackoffPolicy> policies() {
    return backoffs(10_000_000_000L, 60_000_000_000L);
  }

  /**
   * Backoff sections of every jitter, {@code initial} up to {@code maxInitialNanos} and {@code max}
   * up to {@code maxExtraNanos} above it, the multiplier and factor at their extremes too.
   */
  static Arbitrary<BackoffPolicy> backoffs(long maxInitialNanos, long maxExtraNanos) {
    Arbitrary<Long> initial = Arbitraries.longs().between(1, maxInitialNanos);
    Arbitrary<Long> extra = Arbitraries.longs().between(0, maxExtraNanos);
    Arbitrary<Double> multiplier =
        Arbitraries.oneOf(
            Arbitraries.just(1.0),
            Arbitraries.just(BackoffPolicy.MAX_MULTIPLIER),
            Arbitraries.doubles().between(1.0, BackoffPolicy.MAX_MULTIPLIER));
    Arbitrary<Double> factor =
        Arbitraries.oneOf(
            Arbitraries.just(0.0), Arbitraries.just(1.0), Arbitraries.doubles().between(0, 1));
    return Combinators.combine(initial, extra, multiplier, Arbitraries.of(Jitter.class), factor)
        .as(
            (i, e, m, j, f) ->
                BackoffPolicy.builder()
                    .initial(Duration.ofNanos(i))
                    .max(Duration.ofNanos(i + e))
                    .multiplier(m)
                    .jitter(j)
                    .jitterFactor(f)
                    .build());
  }

  @Property(tries = 1000)
  void theBaseDelayLiesBetweenInitialAndMax(
      @ForAll("policies") BackoffPolicy p, @ForAll @IntRange(min = 1, max = 10) int retry) {
    long d = Backoff.baseDelayNanos(p, retry);
    assertThat(d).isBetween(p.initial().toNanos(), p.max().toNanos());
    if (retry > 1) {
      assertThat(d)
          .as("never shrinks")
          .isGreaterThanOrEqualTo(Backoff.baseDelayNanos(p, retry - 1));
    }
  }

  @Property(tries = 2000)
  void everyJitterModeStaysInItsBounds(
      @ForAll("policies") BackoffPolicy p,
      @ForAll @IntRange(min = 1, max = 10) int retry,
      @ForAll @LongRange(min = 0, max = 120_000_000_000L) long previous,
      @ForAll @DoubleRange(min = 0, max = 1, maxIncluded = false) double random) {
    long d = Backoff.baseDelayNanos(p, retry);
    long x = Backoff.delayNanos(p, retry, previous, random);
    long initial = p.initial().toNanos();
    long max = p.max().toNanos();
    switch (p.jitter()) {
      case NONE:
        assertThat(x).isEqualTo(d);
        break;
      case FULL:
        assertThat(x).isBetween(0L, d);
        break;
      case EQUAL:
        assertThat(x).isBetween(d / 2, d);
        break;
      case DECORRELATED:
        assertThat(x).isBetween(initial, max);
        assertThat(x).isLessThanOrEqualTo(3 * Math.max(initial, previous));
        break;
      case PROPORTIONAL:
        assertThat(x).isBetween(d, d + (long) (p.jitterFactor() * d));
        break;
      default:
        throw new AssertionError(p.jitter());
    }
  }

  @Property(tries = 1000)
  void aLargerRandomValueNeverGivesAShorterDelay(
      @ForAll("policies") BackoffPolicy p,
      @ForAll @IntRange(min = 1, max = 10) int retry,
      @ForAll @LongRange(min = 0, max = 120_000_000_000L) long previous,
      @ForAll @DoubleRange(min = 0, max = 1, maxIncluded = false) double a,
      @ForAll @DoubleRange(min = 0, max = 1, maxIncluded = false) double b) {
    double lo = Math.min(a, b);
    double hi = Math.max(a, b);
    assertThat(Backoff.delayNanos(p, retry, previous, lo))
        .isLessThanOrEqualTo(Backoff.delayNanos(p, retry, previous, hi));
  }
}
