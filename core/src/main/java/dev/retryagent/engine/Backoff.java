package dev.retryagent.engine;

import dev.retryagent.policy.BackoffPolicy;

/**
 * Backoff and jitter as pure functions: the random value is a parameter, so every formula can be
 * checked exactly. Delays are in nanoseconds.
 */
final class Backoff {
  private Backoff() {}

  /**
   * The delay before retry {@code retry} (1 = the first retry) without jitter: {@code min(max,
   * initial x multiplier^(retry-1))}.
   */
  public static long baseDelayNanos(BackoffPolicy policy, int retry) {
    long initial = policy.initial().toNanos();
    long max = policy.max().toNanos();
    double d = initial * Math.pow(policy.multiplier(), Math.max(0, retry - 1));
    return d >= max ? max : (long) d;
  }

  /**
   * The delay before retry {@code retry} after jitter.
   *
   * @param previousNanos the delay chosen before the previous retry, or 0 before the first; only
   *     {@code decorrelated} jitter uses it
   * @param random a uniform value in {@code [0, 1)}
   */
  public static long delayNanos(
      BackoffPolicy policy, int retry, long previousNanos, double random) {
    long d = baseDelayNanos(policy, retry);
    switch (policy.jitter()) {
      case NONE:
        return d;
      case FULL:
        return (long) (random * d);
      case EQUAL:
        return d / 2 + (long) (random * (d - d / 2));
      case DECORRELATED:
        {
          // AWS "decorrelated jitter": sleep = min(cap, U(base, 3 x previous sleep)).
          long initial = policy.initial().toNanos();
          long previous = Math.max(initial, previousNanos);
          double upper = 3.0 * previous;
          long next = initial + (long) (random * (upper - initial));
          return Math.min(policy.max().toNanos(), next);
        }
      case PROPORTIONAL:
        return d + (long) (random * policy.jitterFactor() * d);
      default:
        throw new AssertionError(policy.jitter());
    }
  }
}
