package dev.retryagent.testing;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import java.util.List;
import java.util.function.UnaryOperator;

/** Engines for adapter tests: fake time, one route, retries and give-ups recorded. */
public final class TestEngines {
  private TestEngines() {}

  /**
   * An engine whose every call gets the default policy with {@code retry} applied and {@code
   * breaker}, on {@code time}; retries and give-ups are added to {@code events}.
   */
  public static RetryEngine engine(
      FakeTime time,
      Mode mode,
      UnaryOperator<RetryPolicy.Builder> retry,
      CircuitBreakerPolicy breaker,
      List<RetryEvent> events) {
    return engine(time, mode, retry, Policy.defaults().budget(), breaker, events);
  }

  /**
   * {@link #engine(FakeTime, Mode, UnaryOperator, CircuitBreakerPolicy, List)} with {@code budget}.
   */
  public static RetryEngine engine(
      FakeTime time,
      Mode mode,
      UnaryOperator<RetryPolicy.Builder> retry,
      BudgetPolicy budget,
      CircuitBreakerPolicy breaker,
      List<RetryEvent> events) {
    return engine(time, mode, retry, budget, breaker, Policy.defaults().rateLimit(), events);
  }

  /**
   * {@link #engine(FakeTime, Mode, UnaryOperator, BudgetPolicy, CircuitBreakerPolicy, List)} with
   * {@code rateLimit}.
   */
  public static RetryEngine engine(
      FakeTime time,
      Mode mode,
      UnaryOperator<RetryPolicy.Builder> retry,
      BudgetPolicy budget,
      CircuitBreakerPolicy breaker,
      RateLimitPolicy rateLimit,
      List<RetryEvent> events) {
    Policy policy =
        new Policy("test", retry.apply(RetryPolicy.builder()).build(), budget, breaker, rateLimit);
    return RetryEngine.builder()
        .clock(time)
        .sleeper(time)
        .scheduler(time)
        .mode(mode)
        .policy(policy)
        .listener(
            new RetryListener() {
              @Override
              public void onRetry(RetryEvent e) {
                events.add(e);
              }

              @Override
              public void onGiveUp(RetryEvent e) {
                events.add(e);
              }
            })
        .build();
  }
}
