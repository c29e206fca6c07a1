package dev.retryagent.demo.server;

import java.nio.charset.StandardCharsets;

/**
 * Decides which fault, if any, the simulated provider injects into an attempt. A pure function of
 * (seed, key, attempt number): the same seed gives the same fault pattern for each request key
 * however the worker threads interleave, so a run is reproducible.
 *
 * <p>The three probabilities are bands of one uniform draw, so they are exclusive and add up: with
 * the defaults (0.3, 0.1, 0.05) an attempt fails with probability 0.45.
 */
public final class FaultPlan {
  /** What the provider does with one attempt. */
  public enum Fault {
    NONE,
    RATE_LIMIT,
    SERVER_ERROR,
    RESET
  }

  private final long seed;
  private final double rateLimit;
  private final double serverErrors;
  private final double resets;

  /**
   * @throws IllegalArgumentException when a probability is outside [0, 1] or they add up to more
   *     than 1
   */
  public FaultPlan(long seed, double rateLimit, double serverErrors, double resets) {
    check("rateLimit", rateLimit);
    check("serverErrors", serverErrors);
    check("resets", resets);
    if (rateLimit + serverErrors + resets > 1.0 + 1e-9) {
      throw new IllegalArgumentException(
          "fault probabilities must add up to at most 1, was "
              + (rateLimit + serverErrors + resets));
    }
    this.seed = seed;
    this.rateLimit = rateLimit;
    this.serverErrors = serverErrors;
    this.resets = resets;
  }

  private static void check(String name, double p) {
    if (!(p >= 0.0 && p <= 1.0)) {
      throw new IllegalArgumentException(name + " must be in [0, 1], was " + p);
    }
  }

  /** The fault for the {@code attempt}-th request (1-based) that carried {@code key}. */
  public Fault decide(String key, int attempt) {
    double u = uniform(key, attempt);
    if (u < rateLimit) {
      return Fault.RATE_LIMIT;
    }
    if (u < rateLimit + serverErrors) {
      return Fault.SERVER_ERROR;
    }
    if (u < rateLimit + serverErrors + resets) {
      return Fault.RESET;
    }
    return Fault.NONE;
  }

  /** A uniform value in [0, 1) determined by seed, key and attempt. */
  double uniform(String key, int attempt) {
    long h = mix(seed ^ fnv1a(key));
    h = mix(h + 0x9E3779B97F4A7C15L * attempt);
    return (h >>> 11) * 0x1.0p-53;
  }

  private static long fnv1a(String s) {
    long h = 0xcbf29ce484222325L;
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xff;
      h *= 0x100000001b3L;
    }
    return h;
  }

  /** SplitMix64's finaliser: a bijection that spreads every input bit over the output. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  public double rateLimit() {
    return rateLimit;
  }

  public double serverErrors() {
    return serverErrors;
  }

  public double resets() {
    return resets;
  }
}
