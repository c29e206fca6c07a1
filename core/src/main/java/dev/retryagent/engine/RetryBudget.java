package dev.retryagent.engine;

import dev.retryagent.policy.BudgetPolicy;
import java.util.concurrent.atomic.LongAdder;

/**
 * A per-host retry budget: calls deposit, retries withdraw. A retry is allowed while the retries in
 * the window, this one included, stay at or below {@code ratio x calls in the window + the floor's
 * whole retries per window} ({@code minPerSecond x window seconds}, rounded down); when they would
 * not, the floor's rest may allow it.
 *
 * <p>The floor's rest is what the window cannot hold of {@code minPerSecond}: all of it when the
 * window is shorter than {@code 1/minPerSecond} (50 ms at 10 a second is half a retry per window,
 * which no retry fits in), the fraction of a retry per window otherwise (1.5 a window of 150 ms).
 * It is a bucket of one retry refilled at that rate ({@link #floorIntervalNanos}), kept apart from
 * the window: its retries are not counted there, so the floor and the ratio still add up, and the
 * floor allows retries at {@code minPerSecond} whatever the window. A window that holds a whole
 * number of the floor's retries (the default, 100 in 10 s) has no rest.
 *
 * <p>The window is kept as {@value #BUCKETS} buckets plus the current one, so it always covers at
 * least the last {@code window} and at most one bucket more: a retry granted now is counted for the
 * whole of the next {@code window}, never forgotten early. Thread-safe: a call's deposit into the
 * current bucket adds to a striped counter without a lock; everything else is a few array reads
 * under this object's lock.
 */
final class RetryBudget {
  /** Buckets per window: the window's resolution is a tenth of its length. */
  static final int BUCKETS = 10;

  private final BudgetPolicy policy;
  private final long bucketNanos;

  /** The floor's whole retries per window, counted in the window with the ratio's. */
  private final long freeRetriesPerWindow;

  /**
   * The floor's rest: at most one retry per this many nanoseconds, outside the window; 0 for none
   * (no rest, or so little that its retry would come once in decades).
   */
  private final long floorIntervalNanos;

  // The rest's bucket, guarded by this object's lock: empty until floorFreeAt once it was taken.
  private boolean floorTaken;
  private long floorFreeAt;
  // The last retry the rest allowed, until given back: what returnRetry restores. The rest's
  // retries are numbered (floorTakes), so that a ticket names the one it took.
  private boolean floorReturnable;
  private long floorTakes;
  private boolean floorWasTaken;
  private long floorWasFreeAt;
  // Guarded by this object's lock, except that a deposit adds to calls[current.index] without it.
  private final long[] epochs = new long[BUCKETS + 1];
  private final LongAdder[] calls = new LongAdder[BUCKETS + 1];
  // long like retrySum: a bucket past 2^31 retries (a huge ratio under a flood) would wrap an int,
  // and forgetting that bucket would leave the sum 2^32 up for good. The same increment per retry.
  private final long[] retries = new long[BUCKETS + 1];
  private long retrySum;

  /**
   * The bucket of the last operation, written under the lock once its slot is ready: a call
   * deposits into it without the lock while the time is in it (every call deposits, only retries
   * withdraw, so the deposit is the common case; issue 13). The window only moves, under the lock,
   * when the time reaches another bucket.
   */
  private volatile Bucket current = new Bucket(Long.MIN_VALUE, 0, 0, 0);

  /**
   * Where epochs count from: the first time this budget was asked about. nanoTime's origin is
   * arbitrary and its values may wrap; differences from a fixed time do not, for 292 years. Guarded
   * by this object's lock.
   */
  private long originNanos;

  private boolean hasOrigin;

  /** One bucket's place in time and in the arrays. Immutable. */
  private static final class Bucket {
    final long epoch;
    final long startNanos;
    // 0 for the bucket before any: no time is in it.
    final long lengthNanos;
    final int index;

    Bucket(long epoch, long startNanos, long lengthNanos, int index) {
      this.epoch = epoch;
      this.startNanos = startNanos;
      this.lengthNanos = lengthNanos;
      this.index = index;
    }
  }

  /** A rest's retry less often than this (over 36 years) is none; sums with it cannot overflow. */
  private static final long MAX_FLOOR_INTERVAL_NANOS = 1L << 60;

  public RetryBudget(BudgetPolicy policy) {
    this.policy = policy;
    this.bucketNanos = Math.max(1, policy.window().toNanos() / BUCKETS);
    // In whole numbers: minPerSecond x window nanoseconds is at most 10^6 x 3.6 x 10^12.
    long freeNanoRetries = policy.minPerSecond() * policy.window().toNanos();
    this.freeRetriesPerWindow = freeNanoRetries / 1_000_000_000L;
    this.floorIntervalNanos =
        floorInterval(policy.window().toNanos(), freeNanoRetries % 1_000_000_000L);
    java.util.Arrays.fill(epochs, Long.MIN_VALUE);
    for (int i = 0; i < calls.length; i++) {
      calls[i] = new LongAdder();
    }
  }

  /**
   * One retry per this many nanoseconds is {@code rest / 10^9} retries per window: {@code 10^9 x
   * window / rest}, rounded up (never above the rate); 0 for none.
   */
  private static long floorInterval(long windowNanos, long rest) {
    if (rest == 0) {
      return 0;
    }
    if (windowNanos > MAX_FLOOR_INTERVAL_NANOS / 1_000_000_000L) {
      // Only a window of over a second has this; a nanosecond more or less is nothing then.
      double interval = Math.ceil(1e9 * windowNanos / rest);
      return interval <= MAX_FLOOR_INTERVAL_NANOS ? (long) interval : 0;
    }
    long scaled = 1_000_000_000L * windowNanos;
    long interval = scaled / rest;
    return interval * rest == scaled ? interval : interval + 1;
  }

  public BudgetPolicy policy() {
    return policy;
  }

  /**
   * Counts one call (its first attempt). Without a lock while {@code nowNanos} is in the current
   * bucket: a striped counter, so concurrent calls to one host do not contend. (A thread held up
   * between reading the bucket and adding for a whole window, while the window moved on, would
   * count its call in a later bucket: a call more, never one lost.)
   */
  public void recordCall(long nowNanos) {
    Bucket b = current;
    long in = nowNanos - b.startNanos; // a difference: wrap-safe
    if (in >= 0 && in < b.lengthNanos) {
      calls[b.index].increment();
      return;
    }
    synchronized (this) {
      calls[bucket(nowNanos)].increment();
    }
  }

  // A ticket (acquireRetry) is where the retry was counted: its kind in the low two bits, above
  // them the bucket's epoch (OF_WINDOW) or the rest's retry number (OF_FLOOR). An epoch counts
  // bucket lengths from the origin: it needs more than 61 bits only for times 2^61 buckets apart.
  private static final int KIND_BITS = 2;
  private static final long KIND_MASK = (1L << KIND_BITS) - 1;

  /** {@link #acquireRetry}: the budget is spent; nothing was withdrawn. */
  static final long REFUSED = 0;

  /** A ticket's kind: a retry of the window (the ratio's, or the floor's whole ones). */
  static final long OF_WINDOW = 1;

  /** A ticket's kind: a retry of the floor's rest, outside the window. */
  static final long OF_FLOOR = 2;

  /** True when {@code ticket} ({@link #acquireRetry}) withdrew a retry. */
  static boolean granted(long ticket) {
    return (ticket & KIND_MASK) != REFUSED;
  }

  /** The kind of {@code ticket}: {@link #OF_WINDOW}, {@link #OF_FLOOR} or {@link #REFUSED}. */
  static long kind(long ticket) {
    return ticket & KIND_MASK;
  }

  /**
   * Withdraws one retry if the budget allows it.
   *
   * @return false when the budget is spent; nothing is withdrawn then
   */
  public boolean tryAcquireRetry(long nowNanos) {
    return granted(acquireRetry(nowNanos));
  }

  /**
   * Withdraws one retry if the budget allows it, and returns the ticket that says where it was
   * counted, for a caller that may give it back ({@link #returnRetry}): the window's bucket, which
   * is not always the bucket of {@code nowNanos} (a time read before the lock and older than the
   * window counts in the current bucket; see {@link #bucket}), or the rest's retry.
   *
   * @return a ticket; {@link #granted} is false, and nothing was withdrawn, when the budget is
   *     spent
   */
  synchronized long acquireRetry(long nowNanos) {
    int i = bucket(nowNanos);
    if (withinRatio(retrySum + 1 - freeRetriesPerWindow, callSum())) {
      retries[i]++;
      retrySum++;
      return (epochs[i] << KIND_BITS) | OF_WINDOW;
    }
    if (floorIntervalNanos == 0 || (floorTaken && nowNanos - floorFreeAt < 0)) {
      return REFUSED;
    }
    floorWasTaken = floorTaken;
    floorWasFreeAt = floorFreeAt;
    floorTaken = true;
    floorFreeAt = nowNanos + floorIntervalNanos;
    floorReturnable = true;
    floorTakes++;
    return (floorTakes << KIND_BITS) | OF_FLOOR;
  }

  /**
   * True when {@code retries <= ratio x calls}, as the decimal ratio written in the file says: 29%
   * of 100 calls is 29 retries. The product in doubles is not ({@code 0.29 x 100 =
   * 28.999999999999996}); the quotient is, because both {@code retries / calls} and the ratio are
   * correctly rounded, so a share equal to the ratio reads equal, and one below it never above.
   */
  private boolean withinRatio(long retries, long calls) {
    if (retries <= 0) {
      return true;
    }
    return calls > 0 && (double) retries / calls <= policy.ratio();
  }

  /**
   * Counts a retry that happened without asking: the client sent the request again on its own (the
   * JDK's resend after a connection closed before any byte of the answer; OkHttp's repeat of a
   * 408). It may take the budget past its limit; the next {@link #tryAcquireRetry} pays for that.
   */
  public synchronized void recordRetry(long nowNanos) {
    int i = bucket(nowNanos);
    retries[i]++;
    retrySum++;
  }

  /**
   * Gives back the retry of {@code ticket} ({@link #acquireRetry}) that was never made (the call
   * was cancelled during the wait, its wait ended past the deadline, or the breaker or the rate
   * limit refused the attempt), where it was counted. A retry whose bucket left the window is
   * already forgotten: nothing to give back. A retry of the floor's rest goes back to the rest if
   * it is still the last the rest allowed, and never to the window.
   *
   * <p>The ticket, not the time the retry was asked at, says where: a time read before the lock and
   * older than the window counted in the current bucket, where a give-back looking in the bucket of
   * that time found nothing and the retry stayed counted for a whole window; and a rest's retry
   * that another call had taken again since was given back to the window (ae61c30).
   */
  public synchronized void returnRetry(long ticket, long nowNanos) {
    long kind = kind(ticket);
    long at = ticket >> KIND_BITS;
    if (kind == OF_FLOOR) {
      if (floorReturnable && floorTakes == at) {
        floorReturnable = false;
        floorTaken = floorWasTaken;
        floorFreeAt = floorWasFreeAt;
      }
      // else the rest was taken again since: it refilled meanwhile, nothing to restore
      return;
    }
    if (kind != OF_WINDOW) {
      return;
    }
    bucket(nowNanos);
    int i = (int) Math.floorMod(at, (long) epochs.length);
    if (epochs[i] == at && retries[i] > 0) {
      retries[i]--;
      retrySum--;
    }
  }

  /**
   * True when forgetting this budget allows no retry it would refuse: no retry in the window, and
   * the floor's rest not waiting to refill. (Forgetting calls only allows fewer retries.)
   */
  public synchronized boolean isIdle(long nowNanos) {
    bucket(nowNanos);
    return retrySum == 0 && !(floorTaken && nowNanos - floorFreeAt < 0);
  }

  /** Calls counted in the current window. */
  public synchronized long callsInWindow(long nowNanos) {
    bucket(nowNanos);
    return callSum();
  }

  /** Retries counted in the current window (not those of the floor's rest). */
  public synchronized long retriesInWindow(long nowNanos) {
    bucket(nowNanos);
    return retrySum;
  }

  /** The calls of the buckets in the window. Caller holds the lock, after {@link #bucket}. */
  private long callSum() {
    long sum = 0;
    for (int i = 0; i < epochs.length; i++) {
      if (epochs[i] != Long.MIN_VALUE) {
        sum += calls[i].sum();
      }
    }
    return sum;
  }

  /** Expires buckets that left the window and returns the index of the current one. */
  private int bucket(long nowNanos) {
    if (!hasOrigin) {
      // On a bucket boundary, as if counted from 0: the buckets are where they would be.
      originNanos = nowNanos - Math.floorMod(nowNanos, bucketNanos);
      hasOrigin = true;
    }
    long epoch = epochOf(nowNanos);
    Bucket b = current;
    if (epoch == b.epoch) {
      return b.index;
    }
    if (epoch < b.epoch && b.lengthNanos != 0) {
      // An earlier time, read before the lock by a thread held up there (a queue on this host, a
      // pause of the JVM) while others moved the window on. Still in the window, it counts in its
      // own bucket (the slot holds that bucket or one already gone); older, it counts now: its
      // own bucket's slot is a bucket of the window, and emptying it forgot the retries just
      // granted, so the budget allowed more than its ratio. The window does not move back.
      if (epoch < b.epoch - BUCKETS) {
        return b.index;
      }
      int index = (int) Math.floorMod(epoch, (long) epochs.length);
      if (epochs[index] != epoch) {
        forget(index);
        epochs[index] = epoch;
      }
      return index;
    }
    for (int i = 0; i < epochs.length; i++) {
      if (epochs[i] != Long.MIN_VALUE && epochs[i] < epoch - BUCKETS) {
        forget(i);
      }
    }
    int index = (int) Math.floorMod(epoch, (long) epochs.length);
    if (epochs[index] != epoch) {
      forget(index);
      epochs[index] = epoch;
    }
    // Published after the slot is ready: a deposit without the lock lands in a counted bucket.
    current = new Bucket(epoch, originNanos + epoch * bucketNanos, bucketNanos, index);
    return index;
  }

  /** The bucket number of {@code nanos}, counted from the origin. Caller holds the lock. */
  private long epochOf(long nanos) {
    return Math.floorDiv(nanos - originNanos, bucketNanos);
  }

  private void forget(int i) {
    retrySum -= retries[i];
    calls[i].reset();
    retries[i] = 0;
    epochs[i] = Long.MIN_VALUE;
  }
}
