package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.BudgetPolicy;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The retry budget against a model that keeps every call and retry with its time.
 *
 * <p>What {@link RetryBudget} promises, derived from its buckets: with {@code W} the window, {@code
 * b = W/10} a bucket and {@code k} the floor's whole retries per window ({@code minPerSecond x
 * W/1s} rounded down), a decision at time {@code t} counts the events of {@code S(t) = [b x
 * floor(t/b) - W, t]}, which holds all of {@code (t - W, t]} and nothing older than {@code t - W -
 * b}. Hence, at every retry the window grants at {@code t}:
 *
 * <pre>
 *   retries the window granted in (t - W, t]  <=  ratio x calls in (t - W - W/10, t]  +  k
 * </pre>
 *
 * and at every one it refuses: {@code retries it granted in (t - W - W/10, t] + 1 > ratio x calls
 * in (t - W, t] + k}. What the window refuses, the floor's rest grants at most once per {@code I},
 * with {@code k/W + 1/I} the floor's rate, {@code minPerSecond}. All of it is checked, and so is
 * the exact rule on {@code S(t)}.
 */
class RetryBudgetProperties {
  /** One step: time passes, then a call starts or a retry is asked for. */
  static final class Op {
    final long advanceNanos;
    final boolean retry;

    Op(long advanceNanos, boolean retry) {
      this.advanceNanos = advanceNanos;
      this.retry = retry;
    }

    @Override
    public String toString() {
      return "+" + advanceNanos + (retry ? " retry" : " call");
    }
  }

  /** A budget policy plus the steps to run against it. */
  static final class Case {
    final BudgetPolicy policy;
    final long start;
    final List<Op> ops;

    Case(BudgetPolicy policy, long start, List<Op> ops) {
      this.policy = policy;
      this.start = start;
      this.ops = ops;
    }

    @Override
    public String toString() {
      return policy + " from " + start + " " + ops;
    }
  }

  @Provide
  Arbitrary<Case> cases() {
    Arbitrary<Long> windowMillis = Arbitraries.longs().between(1, 20_000);
    Arbitrary<Double> ratio =
        Arbitraries.oneOf(
            Arbitraries.just(0.0),
            Arbitraries.just(0.2),
            Arbitraries.doubles().between(0, 3).ofScale(2));
    Arbitrary<Integer> minPerSecond =
        Arbitraries.oneOf(Arbitraries.just(0), Arbitraries.integers().between(0, 20));
    Arbitrary<Long> start =
        Arbitraries.oneOf(
            Arbitraries.just(0L),
            Arbitraries.longs().between(-1_000_000_000_000_000L, 1_000_000_000_000_000L));
    return Combinators.combine(windowMillis, ratio, minPerSecond, start)
        .flatAs(
            (w, r, m, s) -> {
              long windowNanos = w * 1_000_000L;
              Arbitrary<Long> step =
                  Arbitraries.oneOf(
                      Arbitraries.just(0L),
                      Arbitraries.longs().between(0, windowNanos / 5),
                      Arbitraries.longs().between(0, 3 * windowNanos));
              Arbitrary<Op> op =
                  Combinators.combine(step, Arbitraries.integers().between(0, 9))
                      .as((a, k) -> new Op(a, k < 4));
              return op.list()
                  .ofMaxSize(300)
                  .map(
                      ops ->
                          new Case(
                              BudgetPolicy.builder()
                                  .ratio(r)
                                  .minPerSecond(m)
                                  .window(Duration.ofMillis(w))
                                  .build(),
                              s,
                              ops));
            });
  }

  /** Events in (fromExclusive, toInclusive]; {@code times} is sorted (time never goes back). */
  private static int countIn(List<Long> times, long fromExclusive, long toInclusive) {
    return firstAfter(times, toInclusive) - firstAfter(times, fromExclusive);
  }

  /** Index of the first element greater than {@code x}. */
  private static int firstAfter(List<Long> times, long x) {
    int lo = 0;
    int hi = times.size();
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (times.get(mid) <= x) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /** The floor's rest's interval: 10^9 x W / rest nanoseconds, rounded up; 0 for none. */
  private static long restInterval(long windowNanos, int minPerSecond) {
    java.math.BigInteger nanoRetries =
        java.math.BigInteger.valueOf(minPerSecond)
            .multiply(java.math.BigInteger.valueOf(windowNanos));
    java.math.BigInteger[] wholeAndRest =
        nanoRetries.divideAndRemainder(java.math.BigInteger.valueOf(1_000_000_000L));
    if (wholeAndRest[1].signum() == 0) {
      return 0;
    }
    java.math.BigInteger[] q =
        java.math.BigInteger.valueOf(windowNanos)
            .multiply(java.math.BigInteger.valueOf(1_000_000_000L))
            .divideAndRemainder(wholeAndRest[1]);
    return q[0].longValueExact() + (q[1].signum() == 0 ? 0 : 1);
  }

  /**
   * {@code retries <= ratio x calls} in exact decimals, as the file writes the ratio (the cases'
   * ratios have two decimals, which {@code BigDecimal.valueOf} gives back as written).
   */
  private static boolean atMostTheShare(long retries, double ratio, long calls) {
    return BigDecimal.valueOf(retries)
            .compareTo(BigDecimal.valueOf(ratio).multiply(BigDecimal.valueOf(calls)))
        <= 0;
  }

  @Property(tries = 600)
  void theBudgetKeepsItsPromiseAtEveryRetry(@ForAll("cases") Case c) {
    RetryBudget budget = new RetryBudget(c.policy);
    long w = c.policy.window().toNanos();
    long b = w / RetryBudget.BUCKETS;
    double ratio = c.policy.ratio();
    long whole = c.policy.minPerSecond() * w / 1_000_000_000L;
    long interval = restInterval(w, c.policy.minPerSecond());
    // The floor's rate, k a window plus one each interval: minPerSecond, to a nanosecond.
    double rate = whole * 1e9 / w + (interval == 0 ? 0 : 1e9 / interval);
    assertThat(rate).isCloseTo(c.policy.minPerSecond(), org.assertj.core.data.Offset.offset(1e-6));
    List<Long> calls = new ArrayList<>();
    List<Long> granted = new ArrayList<>();
    Long restGranted = null;
    long t = c.start;
    for (Op op : c.ops) {
      t += op.advanceNanos;
      if (!op.retry) {
        budget.recordCall(t);
        calls.add(t);
        continue;
      }
      // The exact rule, on the span S(t) the buckets cover.
      long spanStartExclusive = Math.floorDiv(t, b) * b - w - 1;
      int callsInSpan = countIn(calls, spanStartExclusive, t);
      int retriesInSpan = countIn(granted, spanStartExclusive, t);
      boolean byWindow = atMostTheShare(retriesInSpan + 1 - whole, ratio, callsInSpan);
      boolean byRest =
          !byWindow && interval > 0 && (restGranted == null || t - restGranted >= interval);

      boolean ok = budget.tryAcquireRetry(t);

      assertThat(ok)
          .as("decision at %d (calls %d, retries %d in S)", t, callsInSpan, retriesInSpan)
          .isEqualTo(byWindow || byRest);
      if (byWindow) {
        granted.add(t);
        int retriesInWindow = countIn(granted, t - w, t);
        int callsInWiderWindow = countIn(calls, t - w - b, t);
        assertThat(atMostTheShare(retriesInWindow - whole, ratio, callsInWiderWindow))
            .as("retries in (t-W, t] at %d", t)
            .isTrue();
      } else {
        int retriesInWiderWindow = countIn(granted, t - w - b, t);
        int callsInWindow = countIn(calls, t - w, t);
        assertThat(atMostTheShare(retriesInWiderWindow + 1 - whole, ratio, callsInWindow))
            .as("the window's refusal at %d is justified", t)
            .isFalse();
        if (byRest) {
          restGranted = t;
        }
      }
      assertThat(budget.callsInWindow(t)).isEqualTo(callsInSpan);
      assertThat(budget.retriesInWindow(t)).isEqualTo(countIn(granted, spanStartExclusive, t));
    }
  }
}
