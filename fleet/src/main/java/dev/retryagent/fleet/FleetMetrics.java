package dev.retryagent.fleet;

import java.util.concurrent.atomic.LongAdder;

/**
 * The live counters of one route's fleet limit in this JVM, since its first limiter (a reload's new
 * limiter of the route counts on). Each getter sums a {@link LongAdder}: cheap to add to from many
 * threads, a consistent total only when nothing is adding. Thread-safe.
 *
 * <p>An acquisition is counted once as {@link #granted} or {@link #refused} when the fleet limit
 * decided it (in Redis, or from a lease Redis gave), or once as a {@link #fallbacks fallback} when
 * the local share decided it because Redis was unreachable.
 */
public final class FleetMetrics {
  private final LongAdder granted = new LongAdder();
  private final LongAdder waited = new LongAdder();
  private final LongAdder refused = new LongAdder();
  private final LongAdder leased = new LongAdder();
  private final LongAdder fallbacks = new LongAdder();
  private final LongAdder pausesSet = new LongAdder();
  private final LongAdder pausesHonoured = new LongAdder();
  private final LongAdder redisCalls = new LongAdder();

  FleetMetrics() {}

  /** Permits the fleet limit gave (at once or after a wait), leased ones included. */
  public long granted() {
    return granted.sum();
  }

  /** Of {@link #granted}, those that came with a wait (behind other permits or a pause). */
  public long waited() {
    return waited.sum();
  }

  /** Acquisitions the fleet limit refused: no permit within {@code maxWait} or the deadline. */
  public long refused() {
    return refused.sum();
  }

  /** Of {@link #granted}, those served from a lease without a round trip to Redis. */
  public long leased() {
    return leased.sum();
  }

  /** Acquisitions decided by this JVM's local share because Redis was unreachable. */
  public long fallbacks() {
    return fallbacks.sum();
  }

  /**
   * 429s in this JVM that set or extended the route's pause as this JVM knew it, each one, counted
   * as it came back: whether Redis was up or not (the pause is written to Redis for every JVM, at
   * once or when Redis is back), and however many of them the fleet's thread then wrote in one
   * round trip.
   */
  public long pausesSet() {
    return pausesSet.sum();
  }

  /** Acquisitions that waited for, or were refused because of, a pause after a 429. */
  public long pausesHonoured() {
    return pausesHonoured.sum();
  }

  /** Scripts run in Redis for this route (acquisitions and pauses): the round trips. */
  public long redisCalls() {
    return redisCalls.sum();
  }

  void granted(boolean waited, boolean paused, boolean leased) {
    granted.increment();
    if (waited) {
      this.waited.increment();
    }
    if (paused) {
      pausesHonoured.increment();
    }
    if (leased) {
      this.leased.increment();
    }
  }

  void refused(boolean paused) {
    refused.increment();
    if (paused) {
      pausesHonoured.increment();
    }
  }

  void fallback() {
    fallbacks.increment();
  }

  void pauseSet() {
    pausesSet.increment();
  }

  void redisCall() {
    redisCalls.increment();
  }

  @Override
  public String toString() {
    return "granted="
        + granted()
        + " waited="
        + waited()
        + " refused="
        + refused()
        + " leased="
        + leased()
        + " fallbacks="
        + fallbacks()
        + " pauses-set="
        + pausesSet()
        + " pauses-honoured="
        + pausesHonoured()
        + " redis-calls="
        + redisCalls();
  }
}
