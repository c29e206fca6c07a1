package dev.retryagent.engine;

import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Jitter;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import java.time.Duration;

/**
 * A policy under construction for one test. Starts from the contract's defaults with one change: no
 * jitter (100ms, 200ms, 400ms, ...), so waits can be asserted exactly.
 */
final class TestPolicy {
  static final String ROUTE = "test-route";

  final RetryPolicy.Builder retry =
      RetryPolicy.builder().backoff(BackoffPolicy.builder().jitter(Jitter.NONE).build());
  final BudgetPolicy.Builder budget = BudgetPolicy.builder();
  final CircuitBreakerPolicy.Builder breaker = CircuitBreakerPolicy.builder();
  final RateLimitPolicy.Builder rateLimit = RateLimitPolicy.builder();

  static TestPolicy create() {
    return new TestPolicy();
  }

  TestPolicy backoff(Duration initial, double multiplier, Duration max) {
    retry.backoff(
        BackoffPolicy.builder()
            .initial(initial)
            .multiplier(multiplier)
            .max(max)
            .jitter(Jitter.NONE)
            .build());
    return this;
  }

  /**
   * Sets the deadline, and retryAfter.max to it when it is shorter (so a 429 pause is bounded by
   * the deadline too, as the tests using it expect).
   */
  TestPolicy deadline(Duration deadline) {
    retry.deadline(deadline);
    Duration max = RetryPolicy.DEFAULT_RETRY_AFTER_MAX;
    retry.retryAfterMax(deadline.compareTo(max) < 0 ? deadline : max);
    return this;
  }

  Policy build() {
    return new Policy(ROUTE, retry.build(), budget.build(), breaker.build(), rateLimit.build());
  }
}
