package dev.retryagent.engine;

import dev.retryagent.policy.BudgetPolicy;

/**
 * A per-host retry budget: calls deposit, retries withdraw. A retry is allowed while the retries in
 * the window, this one included, stay at or below {@code ratio x calls in the window + minPerSecond
 * x window seconds}.
 *
 * <p>The window is kept as {@value #BUCKETS} buckets plus the current one, so it always covers at
 * least the last {@code window} and at most one bucket more: a retry granted now is counted for the
 * whole of the next {@code window}, never forgotten early. Thread-safe; every operation is a few
 * array reads under this object's lock.
 */
final class RetryBudget {
  /** Buckets per window: the window's resolution is a tenth of its length. */
  static final int BUCKETS = 10;

  private final BudgetPolicy policy;
  private final long bucketNanos;
  private final double freeRetriesPerWindow;
  private final long[] epochs = new long[BUCKETS + 1];
  private final int[] calls = new int[BUCKETS + 1];
  private final int[] retries = new int[BUCKETS + 1];
  private long callSum;
  private long retrySum;

  public RetryBudget(BudgetPolicy policy) {
    this.policy = policy;
    this.bucketNanos = Math.max(1, policy.window().toNanos() / BUCKETS);
    this.freeRetriesPerWindow = policy.minPerSecond() * (policy.window().toNanos() / 1e9);
    java.util.Arrays.fill(epochs, Long.MIN_VALUE);
  }

  public BudgetPolicy policy() {
    return policy;
  }

  /** Counts one call (its first attempt). */
  public synchronized void recordCall(long nowNanos) {
    int i = bucket(nowNanos);
    calls[i]++;
    callSum++;
  }

  /**
   * Withdraws one retry if the budget allows it.
   *
   * @return false when the budget is spent; nothing is withdrawn then
   */
  public synchronized boolean tryAcquireRetry(long nowNanos) {
    int i = bucket(nowNanos);
    if (retrySum + 1 > policy.ratio() * callSum + freeRetriesPerWindow) {
      return false;
    }
    retries[i]++;
    retrySum++;
    return true;
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
   * Gives back a retry withdrawn at {@code takenAtNanos} that was never made (the call was
   * cancelled during the wait, or the breaker or the rate limit refused the attempt). A retry taken
   * so long ago that its bucket left the window is already forgotten: nothing to give back.
   */
  public synchronized void returnRetry(long takenAtNanos, long nowNanos) {
    bucket(nowNanos);
    long epoch = Math.floorDiv(takenAtNanos, bucketNanos);
    int i = (int) Math.floorMod(epoch, (long) epochs.length);
    if (epochs[i] == epoch && retries[i] > 0) {
      retries[i]--;
      retrySum--;
    }
  }

  /** Calls counted in the current window. */
  public synchronized long callsInWindow(long nowNanos) {
    bucket(nowNanos);
    return callSum;
  }

  /** Retries counted in the current window. */
  public synchronized long retriesInWindow(long nowNanos) {
    bucket(nowNanos);
    return retrySum;
  }

  /** Expires buckets that left the window and returns the index of the current one. */
  private int bucket(long nowNanos) {
    long epoch = Math.floorDiv(nowNanos, bucketNanos);
    for (int i = 0; i < epochs.length; i++) {
      if (epochs[i] != Long.MIN_VALUE && epochs[i] < epoch - BUCKETS) {
        callSum -= calls[i];
        retrySum -= retries[i];
        calls[i] = 0;
        retries[i] = 0;
        epochs[i] = Long.MIN_VALUE;
      }
    }
    int index = (int) Math.floorMod(epoch, (long) epochs.length);
    if (epochs[index] != epoch) {
      callSum -= calls[index];
      retrySum -= retries[index];
      calls[index] = 0;
      retries[index] = 0;
      epochs[index] = epoch;
    }
    return index;
  }
}
