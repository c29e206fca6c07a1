package dev.retryagent.policy;

import java.util.Objects;

/**
 * The effective policy of one call: the four sections after a route's keys were merged over {@code
 * defaults}. Resolved once per route when a configuration is loaded, so matching a request returns
 * an existing object. Immutable and thread-safe; {@link #defaults()} is the contract's defaults.
 */
public final class Policy {
  /** Route name used for calls that no route claims. */
  public static final String DEFAULT_ROUTE = "default";

  private static final Policy DEFAULTS =
      new Policy(
          DEFAULT_ROUTE,
          RetryPolicy.defaults(),
          BudgetPolicy.defaults(),
          CircuitBreakerPolicy.defaults(),
          RateLimitPolicy.defaults());

  private final String routeName;
  private final RetryPolicy retry;
  private final BudgetPolicy budget;
  private final CircuitBreakerPolicy circuitBreaker;
  private final RateLimitPolicy rateLimit;

  public Policy(
      String routeName,
      RetryPolicy retry,
      BudgetPolicy budget,
      CircuitBreakerPolicy circuitBreaker,
      RateLimitPolicy rateLimit) {
    this.routeName = Checks.notNull("route name", routeName);
    this.retry = Checks.notNull("retry", retry);
    this.budget = Checks.notNull("budget", budget);
    this.circuitBreaker = Checks.notNull("circuitBreaker", circuitBreaker);
    this.rateLimit = Checks.notNull("rateLimit", rateLimit);
  }

  /** The built-in defaults of the contract, under route name {@value #DEFAULT_ROUTE}. */
  public static Policy defaults() {
    return DEFAULTS;
  }

  /** The route this policy came from, or {@value #DEFAULT_ROUTE}. */
  public String routeName() {
    return routeName;
  }

  public RetryPolicy retry() {
    return retry;
  }

  public BudgetPolicy budget() {
    return budget;
  }

  public CircuitBreakerPolicy circuitBreaker() {
    return circuitBreaker;
  }

  public RateLimitPolicy rateLimit() {
    return rateLimit;
  }

  /** A copy under another route name. */
  public Policy withRouteName(String name) {
    return new Policy(name, retry, budget, circuitBreaker, rateLimit);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Policy)) {
      return false;
    }
    Policy t = (Policy) o;
    return routeName.equals(t.routeName)
        && retry.equals(t.retry)
        && budget.equals(t.budget)
        && circuitBreaker.equals(t.circuitBreaker)
        && rateLimit.equals(t.rateLimit);
  }

  @Override
  public int hashCode() {
    return Objects.hash(routeName, retry, budget, circuitBreaker, rateLimit);
  }

  @Override
  public String toString() {
    return "policy["
        + routeName
        + "]{"
        + retry
        + ", "
        + budget
        + ", "
        + circuitBreaker
        + ", "
        + rateLimit
        + "}";
  }
}
