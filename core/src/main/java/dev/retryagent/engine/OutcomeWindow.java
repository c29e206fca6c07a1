package dev.retryagent.engine;

import dev.retryagent.policy.CircuitBreakerPolicy;

/**
 * The sliding window of a circuit breaker: how many attempts, failures and slow attempts it holds.
 * Not thread-safe: the breaker guards it with its lock.
 */
abstract class OutcomeWindow {
  long total;
  long failures;
  long slow;

  static OutcomeWindow of(CircuitBreakerPolicy policy) {
    return policy.windowType() == CircuitBreakerPolicy.WindowType.COUNT
        ? new CountWindow(policy.windowSize())
        : new TimeWindow(policy.windowDuration().toNanos());
  }

  /** Adds one attempt's outcome. */
  abstract void record(boolean failure, boolean isSlow, long nowNanos);

  /** Drops outcomes that left the window (time windows only). */
  abstract void expire(long nowNanos);

  /** Forgets everything (the breaker closed or opened). */
  abstract void clear();

  /**
   * True when one more success would change no count: a full count window without a failure or a
   * slow call. Never for a time window (its outcomes leave it with time).
   */
  boolean fullOfSuccesses() {
    return false;
  }

  /** The last N attempts, as a ring of flags; the time is not used. */
  static final class CountWindow extends OutcomeWindow {
    private static final byte FAILURE = 1;
    private static final byte SLOW = 2;
    private final byte[] ring;
    private int next;

    CountWindow(int size) {
      this.ring = new byte[size];
    }

    @Override
    void record(boolean failure, boolean isSlow, long nowNanos) {
      if (total == ring.length) {
        byte old = ring[next];
        failures -= old & FAILURE;
        slow -= (old & SLOW) >> 1;
        total--;
      }
      ring[next] = (byte) ((failure ? FAILURE : 0) | (isSlow ? SLOW : 0));
      if (++next == ring.length) {
        next = 0;
      }
      total++;
      failures += failure ? 1 : 0;
      slow += isSlow ? 1 : 0;
    }

    @Override
    void expire(long nowNanos) {}

    @Override
    boolean fullOfSuccesses() {
      return total == ring.length && failures == 0 && slow == 0;
    }

    @Override
    void clear() {
      java.util.Arrays.fill(ring, (byte) 0);
      next = 0;
      total = failures = slow = 0;
    }
  }

  /** The attempts of the last T, in {@value #BUCKETS} buckets of T/{@value #BUCKETS} each. */
  static final class TimeWindow extends OutcomeWindow {
    static final int BUCKETS = 20;
    private final long bucketNanos;
    private final long[] epochs = new long[BUCKETS];
    private final long[] totals = new long[BUCKETS];
    private final long[] fails = new long[BUCKETS];
    private final long[] slows = new long[BUCKETS];
    // The first time recorded: epochs count from it.
    private long originNanos;
    private boolean hasOrigin;
    // The latest bucket the window has moved to: it never moves back.
    private long newestEpoch;

    TimeWindow(long windowNanos) {
      this.bucketNanos = Math.max(1, windowNanos / BUCKETS);
      java.util.Arrays.fill(epochs, Long.MIN_VALUE);
    }

    @Override
    void record(boolean failure, boolean isSlow, long nowNanos) {
      int i = current(nowNanos);
      totals[i]++;
      total++;
      if (failure) {
        fails[i]++;
        failures++;
      }
      if (isSlow) {
        slows[i]++;
        slow++;
      }
    }

    @Override
    void expire(long nowNanos) {
      current(nowNanos);
    }

    private int current(long nowNanos) {
      if (!hasOrigin) {
        // On a bucket boundary, as if counted from 0: the buckets are where they would be.
        originNanos = nowNanos - Math.floorMod(nowNanos, bucketNanos);
        hasOrigin = true;
      }
      // From a fixed time: nanoTime's origin is arbitrary and its values may wrap, differences
      // from one time do not (for 292 years).
      long epoch = Math.floorDiv(nowNanos - originNanos, bucketNanos);
      if (epoch <= newestEpoch - BUCKETS) {
        // A time read before the lock by a thread held up there (a queue on this breaker, a pause
        // of the JVM) while others moved the window past it: the outcome counts now, in the newest
        // bucket. Its own bucket's slot is one of the window's, and emptying it forgot the
        // failures just recorded: the breaker failed to open. (A time still in the window counts
        // in its own bucket, whose slot holds that bucket or one already gone.)
        epoch = newestEpoch;
      }
      newestEpoch = Math.max(newestEpoch, epoch);
      for (int i = 0; i < BUCKETS; i++) {
        if (epochs[i] != Long.MIN_VALUE && epochs[i] <= epoch - BUCKETS) {
          drop(i);
        }
      }
      int index = (int) Math.floorMod(epoch, (long) BUCKETS);
      if (epochs[index] != epoch) {
        drop(index);
        epochs[index] = epoch;
      }
      return index;
    }

    private void drop(int i) {
      total -= totals[i];
      failures -= fails[i];
      slow -= slows[i];
      totals[i] = fails[i] = slows[i] = 0;
      epochs[i] = Long.MIN_VALUE;
    }

    @Override
    void clear() {
      for (int i = 0; i < BUCKETS; i++) {
        drop(i);
      }
    }
  }
}
