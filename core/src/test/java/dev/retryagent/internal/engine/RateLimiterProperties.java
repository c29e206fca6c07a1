package dev.retryagent.internal.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.RateLimitPolicy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The token bucket never lets more than {@code burst + perSecond x elapsed} attempts start by any
 * time, however callers arrive, wait, give up or get paused.
 */
class RateLimiterProperties {
  private static final long MS = 1_000_000L;

  static final class Op {
    final long advanceNanos;
    final long maxWaitNanos;
    final long pauseNanos; // > 0: a 429 pauses the host for this long instead of a reservation

    Op(long advanceNanos, long maxWaitNanos, long pauseNanos) {
      this.advanceNanos = advanceNanos;
      this.maxWaitNanos = maxWaitNanos;
      this.pauseNanos = pauseNanos;
    }

    @Override
    public String toString() {
      return "+"
          + advanceNanos / MS
          + "ms "
          + (pauseNanos > 0 ? "pause " + pauseNanos / MS : "wait<=" + maxWaitNanos / MS);
    }
  }

  static final class Case {
    final RateLimitPolicy policy;
    final List<Op> ops;

    Case(RateLimitPolicy policy, List<Op> ops) {
      this.policy = policy;
      this.ops = ops;
    }

    @Override
    public String toString() {
      return policy + " " + ops;
    }
  }

  @Provide
  Arbitrary<Case> cases() {
    Arbitrary<RateLimitPolicy> policies =
        Combinators.combine(
                Arbitraries.oneOf(
                    Arbitraries.doubles().between(0.1, 20).ofScale(2),
                    Arbitraries.doubles().between(20, 5_000).ofScale(1)),
                Arbitraries.integers().between(1, 30))
            .as(
                (rate, burst) ->
                    RateLimitPolicy.builder().enabled(true).perSecond(rate).burst(burst).build());
    Arbitrary<Op> op =
        Combinators.combine(
                Arbitraries.oneOf(
                    Arbitraries.just(0L), Arbitraries.longs().between(0, 2_000).map(ms -> ms * MS)),
                Arbitraries.oneOf(
                    Arbitraries.just(0L), Arbitraries.longs().between(0, 5_000).map(ms -> ms * MS)),
                Arbitraries.integers().between(0, 19),
                Arbitraries.longs().between(1, 3_000).map(ms -> ms * MS))
            .as((adv, wait, k, pause) -> new Op(adv, wait, k == 0 ? pause : 0));
    return Combinators.combine(policies, op.list().ofMaxSize(200)).as(Case::new);
  }

  /** Runs the case and returns the start time of every attempt the limiter let through. */
  private static List<Long> starts(Case c, boolean withPauses, long t0) {
    RateLimiter limiter = new RateLimiter(c.policy, t0);
    List<Long> starts = new ArrayList<>();
    long now = t0;
    for (Op op : c.ops) {
      now += op.advanceNanos;
      if (op.pauseNanos > 0) {
        if (withPauses) {
          limiter.pauseUntil(now + op.pauseNanos);
        }
        continue;
      }
      long pauseLeft = limiter.pauseRemainingNanos(now);
      long wait = limiter.reserve(now, op.maxWaitNanos, Long.MAX_VALUE);
      if (wait == RateLimiter.REJECTED) {
        continue;
      }
      assertThat(wait).as("nobody goes before the pause ends").isGreaterThanOrEqualTo(pauseLeft);
      assertThat(wait - pauseLeft).as("token wait").isLessThanOrEqualTo(op.maxWaitNanos);
      starts.add(now + wait);
    }
    Collections.sort(starts);
    return starts;
  }

  /**
   * In every interval [s, T]: attempts started <= burst + perSecond x (T - s). Waits are whole
   * nanoseconds rounded from floating-point token counts, so a start may come up to a nanosecond
   * early or late: the bound is checked with 2 ns of slack (at most 2e-6 of a token at 1000/s).
   */
  private static void assertBucketBound(Case c, List<Long> starts) {
    double perNano = c.policy.perSecond() / 1e9;
    for (int i = 0; i < starts.size(); i++) {
      for (int j = i; j < starts.size(); j++) {
        double allowed = c.policy.burst() + perNano * (starts.get(j) - starts.get(i) + 2);
        if (j - i + 1 > allowed + 1e-6) {
          throw new AssertionError(
              (j - i + 1)
                  + " attempts started from "
                  + starts.get(i) / MS
                  + " ms to "
                  + starts.get(j) / MS
                  + " ms; the bucket allows "
                  + allowed);
        }
      }
    }
  }

  @Property(tries = 300)
  void neverMoreThanBurstPlusRateTimesElapsedStartInAnyInterval(@ForAll("cases") Case c) {
    long t0 = 77_000 * MS;
    List<Long> starts = starts(c, false, t0);
    assertBucketBound(c, starts);
    // and, from the start: the whole run is one such interval
    double perNano = c.policy.perSecond() / 1e9;
    for (int i = 0; i < starts.size(); i++) {
      assertThat((double) (i + 1))
          .isLessThanOrEqualTo(c.policy.burst() + perNano * (starts.get(i) - t0 + 2) + 1e-6);
    }
  }

  @Property(tries = 300)
  void aPauseAfter429DoesNotLetMoreThanBurstGoAtOnceWhenItEnds(@ForAll("cases") Case c) {
    assertBucketBound(c, starts(c, true, 77_000 * MS));
  }

  @Property(tries = 300)
  void aCallerIsRefusedOnlyWhenItsTokenWouldComeTooLate(@ForAll("cases") Case c) {
    long t0 = 0;
    RateLimiter limiter = new RateLimiter(c.policy, t0);
    long now = t0;
    for (Op op : c.ops) {
      now += op.advanceNanos;
      if (op.pauseNanos > 0) {
        continue;
      }
      double tokens = limiter.availableTokens(now);
      long wait = limiter.reserve(now, op.maxWaitNanos, Long.MAX_VALUE);
      if (tokens >= 1) {
        assertThat(wait).as("a token is there").isZero();
      } else if (wait == RateLimiter.REJECTED) {
        double needNanos = (1 - tokens) / (c.policy.perSecond() / 1e9);
        assertThat(needNanos).isGreaterThan(op.maxWaitNanos - 1.0);
        assertThat(limiter.availableTokens(now)).as("a refusal costs nothing").isEqualTo(tokens);
      }
    }
  }
}
