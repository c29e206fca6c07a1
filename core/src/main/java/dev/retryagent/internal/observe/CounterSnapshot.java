package dev.retryagent.internal.observe;

import dev.retryagent.engine.CircuitTransition;
import dev.retryagent.engine.GiveUpReason;

/**
 * The counters of one series (a route, a host, or a route and host) at one moment. Immutable.
 * Counters only grow, except that a snapshot taken while events arrive may be a few events out of
 * step between fields.
 */
public final class CounterSnapshot {
  static final int STATS = Stat.values().length;
  static final int REASONS = GiveUpReason.values().length;
  static final int TRANSITIONS = CircuitTransition.values().length;
  static final int SIZE = STATS + REASONS + TRANSITIONS;

  /** All zero. */
  public static final CounterSnapshot ZERO = new CounterSnapshot(new long[SIZE]);

  private final long[] values;

  /** Takes ownership of {@code values}, laid out as stats, give-up reasons, transitions. */
  CounterSnapshot(long[] values) {
    this.values = values;
  }

  long get(Stat s) {
    return values[s.ordinal()];
  }

  /** Calls that ended (succeeded + failed). */
  public long calls() {
    return get(Stat.CALLS);
  }

  public long succeeded() {
    return get(Stat.SUCCEEDED);
  }

  public long failed() {
    return get(Stat.FAILED);
  }

  /** Attempts made, first attempts included. */
  public long attempts() {
    return get(Stat.ATTEMPTS);
  }

  /** Retries made (enforce mode). */
  public long retries() {
    return get(Stat.RETRIES);
  }

  /** Retries observe mode decided on but did not make. */
  public long wouldRetry() {
    return get(Stat.WOULD_RETRY);
  }

  public long breakerRejections() {
    return get(Stat.BREAKER_REJECTIONS);
  }

  public long wouldFailFast() {
    return get(Stat.WOULD_FAIL_FAST);
  }

  public long rateLimitWaits() {
    return get(Stat.RATE_LIMIT_WAITS);
  }

  public long rateLimitRejections() {
    return get(Stat.RATE_LIMIT_REJECTIONS);
  }

  public long wouldRateLimit() {
    return get(Stat.WOULD_RATE_LIMIT);
  }

  /** Failed calls given up for {@code reason}. */
  public long giveUps(GiveUpReason reason) {
    return values[STATS + reason.ordinal()];
  }

  /** Failed calls given up, for any reason. */
  public long giveUps() {
    long sum = 0;
    for (int i = 0; i < REASONS; i++) {
      sum += values[STATS + i];
    }
    return sum;
  }

  /** Retries refused because the host's retry budget was spent. */
  public long budgetRejections() {
    return giveUps(GiveUpReason.BUDGET);
  }

  public long transitions(CircuitTransition t) {
    return values[STATS + REASONS + t.ordinal()];
  }

  /** Times a breaker opened (from closed, or again after a failed trial call). */
  public long breakerOpens() {
    return transitions(CircuitTransition.CLOSED_TO_OPEN)
        + transitions(CircuitTransition.HALF_OPEN_TO_OPEN);
  }

  /** The sum of this and {@code other}. */
  public CounterSnapshot plus(CounterSnapshot other) {
    long[] sum = values.clone();
    for (int i = 0; i < SIZE; i++) {
      sum[i] += other.values[i];
    }
    return new CounterSnapshot(sum);
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("{");
    for (Stat s : Stat.values()) {
      b.append(s.attribute).append('=').append(get(s)).append(", ");
    }
    for (GiveUpReason r : GiveUpReason.values()) {
      if (giveUps(r) > 0) {
        b.append("gaveUp[").append(r.label()).append("]=").append(giveUps(r)).append(", ");
      }
    }
    return b.append("breakerOpens=").append(breakerOpens()).append('}').toString();
  }
}
