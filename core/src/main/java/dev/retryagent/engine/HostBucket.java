package dev.retryagent.engine;

import dev.retryagent.internal.engine.RateLimiter;

/**
 * A host's own rate-limit bucket as the engine keeps it (one per target and {@code rateLimit}
 * section), and how long another route's 429 may pause it: the longest {@code retryAfter.max} of
 * the routes of the latest configuration that use it, as each route's pause is bounded by its own.
 * A bucket still held only by calls of an older configuration keeps that configuration's bound.
 * Thread-safe.
 */
final class HostBucket {
  final RateLimiter limiter;

  /** The configuration ({@link EngineSettings#generation}) whose routes set the bound. */
  private long boundOf;

  private long pauseBoundNanos;

  /**
   * Made for a route of configuration {@code generation}, bounded by {@code retryAfterMaxNanos}.
   */
  HostBucket(RateLimiter limiter, long generation, long retryAfterMaxNanos) {
    this.limiter = limiter;
    this.boundOf = generation;
    this.pauseBoundNanos = retryAfterMaxNanos;
  }

  /**
   * A route of configuration {@code generation}, bounded by {@code retryAfterMaxNanos}, uses it.
   * True when that made the bound longer: a 429 pause under way may now hold the bucket longer
   * ({@link RetryEngine#limiterFor} applies it again).
   */
  synchronized boolean usedBy(long generation, long retryAfterMaxNanos) {
    long before = pauseBoundNanos;
    if (generation > boundOf) {
      boundOf = generation;
      pauseBoundNanos = retryAfterMaxNanos;
    } else if (generation == boundOf) {
      pauseBoundNanos = Math.max(pauseBoundNanos, retryAfterMaxNanos);
    }
    return pauseBoundNanos > before;
  }

  /**
   * The longest pause a 429 applies to it, the 429's own route's included when it uses the bucket
   * too (routes with equal {@code rateLimit} sections share it): the longest bound of the routes
   * that use it.
   */
  synchronized long pauseBoundNanos() {
    return pauseBoundNanos;
  }
}
