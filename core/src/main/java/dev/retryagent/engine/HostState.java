package dev.retryagent.engine;

import dev.retryagent.internal.engine.TargetKey;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import java.time.Duration;

/**
 * What every call to one target ({@code scheme://host:port}) under one policy shares, found once:
 * the host's breaker, budget and rate limiter, the listeners' counters ({@link CallCounter}), the
 * mode, and the numbers a call reads from its policy. The engine keeps one per target and policy
 * (per configuration: a reload starts afresh), so a call to a host seen before finds all of it with
 * one map read instead of building a key and taking three registry locks (issue 13).
 *
 * <p>The breaker, budget and limiter stay the registries' (which bound how many hosts are tracked):
 * each call marks them used ({@link #touch}), and once a registry drops one ({@link #current()}
 * false) the engine builds this again from the registries. Immutable; thread-safe.
 */
final class HostState {
  final RetryEngine engine;
  final Policy policy;
  final RetryPolicy retry;
  final boolean observe;
  final boolean passThrough;
  final String scheme;
  final String host;
  final int port;

  /** {@code scheme://host:port}: names the host in exceptions. */
  final String target;

  final CircuitBreaker breaker;
  final RetryBudget budget;

  /** The host's own limiter, the fleet's (fleet mode, enforce only), or null. */
  final PermitLimiter limiter;

  /** Each listener's counters, or null when none counts that way. */
  final CallCounter[] counters;

  /** {@code perAttemptTimeout} in nanoseconds, or -1 for none. */
  final long perAttemptNanos;

  /** {@code deadline} in nanoseconds. */
  final long deadlineNanos;

  // The configuration this state was made under ({@link EngineSettings#generation}): a call of it
  // began before any later reload ({@link RetryEngine#reloadedSince}).
  final long generation;

  private final BoundedRegistry.Entry<CircuitBreaker> breakerEntry;
  private final BoundedRegistry.Entry<RetryBudget> budgetEntry;
  private final BoundedRegistry.Entry<HostBucket> limiterEntry;

  /** The state of calls that pass through ({@link Mode#OFF}): no host, no guard, no counter. */
  static HostState passThrough(RetryEngine engine) {
    return new HostState(
        engine, Policy.defaults(), Mode.OFF, "", "", -1, null, null, null, null, null, 0);
  }

  HostState(
      RetryEngine engine,
      Policy policy,
      Mode mode,
      String scheme,
      String host,
      int port,
      BoundedRegistry.Entry<CircuitBreaker> breakerEntry,
      BoundedRegistry.Entry<RetryBudget> budgetEntry,
      BoundedRegistry.Entry<HostBucket> limiterEntry,
      PermitLimiter fleetLimiter,
      CallCounter[] counters,
      long generation) {
    this.engine = engine;
    this.generation = generation;
    this.policy = policy;
    this.retry = policy.retry();
    this.observe = mode == Mode.OBSERVE;
    this.passThrough = mode == Mode.OFF;
    this.scheme = scheme;
    this.host = host;
    this.port = port;
    // As the breaker, the metrics and the log lines name the host: one key however it is written.
    this.target = TargetKey.of(scheme, host, port);
    this.breakerEntry = breakerEntry;
    this.budgetEntry = budgetEntry;
    this.limiterEntry = limiterEntry;
    this.breaker = breakerEntry == null ? null : breakerEntry.value;
    this.budget = budgetEntry == null ? null : budgetEntry.value;
    this.limiter =
        fleetLimiter != null
            ? fleetLimiter
            : limiterEntry == null ? null : limiterEntry.value.limiter;
    this.counters = counters;
    Duration perAttempt = retry.perAttemptTimeout();
    this.perAttemptNanos = perAttempt == null ? -1 : perAttempt.toNanos();
    this.deadlineNanos = retry.deadline().toNanos();
  }

  /** True when this state is for {@code policy} and the request's scheme, host and port. */
  boolean isFor(Policy policy, String scheme, int port) {
    return this.policy == policy && this.port == port && this.scheme.equals(scheme);
  }

  /** False once a registry dropped the breaker, budget or limiter kept here. */
  boolean current() {
    return (breakerEntry == null || !breakerEntry.evicted())
        && (budgetEntry == null || !budgetEntry.evicted())
        && (limiterEntry == null || !limiterEntry.evicted());
  }

  /**
   * True once the registry dropped the host bucket kept here (maxHosts): {@link
   * RetryEngine#pauseDroppedBucket}.
   */
  boolean limiterDropped() {
    return limiterEntry != null && limiterEntry.evicted();
  }

  /**
   * The longest a 429 pauses this state's limiter: its host bucket's bound, the longest {@code
   * retryAfter.max} of the routes sharing it ({@link HostBucket#pauseBoundNanos}), and never less
   * than this route's own (a call of the configuration before a reload keeps its route's). A
   * fleet's limit: this route's (its pause is the route's).
   */
  long pauseBoundNanos() {
    long own = retry.retryAfterMax().toNanos();
    return limiterEntry == null ? own : Math.max(own, limiterEntry.value.pauseBoundNanos());
  }

  /** The circuit-breaker section of the policy. */
  CircuitBreakerPolicy breakerPolicy() {
    return policy.circuitBreaker();
  }

  /** Marks the breaker, budget and limiter used, for the registries' least-recently-used bound. */
  void touch() {
    engine.touch(breakerEntry, budgetEntry, limiterEntry);
  }
}
