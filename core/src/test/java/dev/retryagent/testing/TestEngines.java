package dev.retryagent.testing;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.engine.Sleeper;
import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Jitter;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import java.time.Duration;
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
   * An enforcing engine with the default policy, but for the host's rate-limit bucket: {@code
   * permits} permits that the test never sees refilled ({@link #neverRefilled}).
   */
  public static RetryEngine rateLimitedTo(int permits, FakeTime time, List<RetryEvent> events) {
    return engine(
        time,
        Mode.ENFORCE,
        r -> r,
        Policy.defaults().budget(),
        CircuitBreakerPolicy.defaults(),
        neverRefilled(permits),
        events);
  }

  /**
   * As {@link #rateLimitedTo(int, FakeTime, List)}, but each retry waits {@code backoff} (no
   * jitter): over 1 s, a retried response is not kept through the wait (RetryCall.keepThroughWait).
   */
  public static RetryEngine rateLimitedTo(
      int permits, Duration backoff, FakeTime time, List<RetryEvent> events) {
    return engine(
        time,
        Mode.ENFORCE,
        r -> r.backoff(BackoffPolicy.builder().initial(backoff).jitter(Jitter.NONE).build()),
        Policy.defaults().budget(),
        CircuitBreakerPolicy.defaults(),
        neverRefilled(permits),
        events);
  }

  /**
   * As {@link #rateLimitedTo(int, FakeTime, List)}, its calls counted by {@code counted} too (a
   * listener that counts, such as the metrics, through its CallCounter), its give-ups in {@code
   * events}.
   */
  public static RetryEngine rateLimitedTo(
      int permits, FakeTime time, List<RetryEvent> events, RetryListener counted) {
    return RetryEngine.builder()
        .clock(time)
        .sleeper(time)
        .scheduler(time)
        .policy(rateLimited(neverRefilled(permits)))
        .listener(counted)
        .listener(
            new RetryListener() {
              @Override
              public void onGiveUp(RetryEvent e) {
                events.add(e);
              }
            })
        .build();
  }

  /**
   * An enforcing engine with the default policy but for its rate limit, {@code rateLimit}, on
   * {@code time}'s clock, waiting with {@code sleeper}; its retries and give-ups in {@code events}.
   */
  public static RetryEngine rateLimited(
      FakeTime time, RateLimitPolicy rateLimit, Sleeper sleeper, List<RetryEvent> events) {
    return builder(
            time,
            Mode.ENFORCE,
            r -> r,
            Policy.defaults().budget(),
            CircuitBreakerPolicy.defaults(),
            rateLimit)
        .sleeper(sleeper)
        .listener(recorder(events))
        .build();
  }

  /**
   * {@link #rateLimited(FakeTime, RateLimitPolicy, Sleeper, List)} to {@code permits} permits
   * ({@link #neverRefilled}), on {@code time}'s sleeper, which first runs, once, what {@code
   * duringTheWait} holds as a wait starts (a caller giving up during a retry's wait).
   */
  public static RetryEngine rateLimitedTo(
      int permits,
      FakeTime time,
      java.util.concurrent.atomic.AtomicReference<Runnable> duringTheWait,
      List<RetryEvent> events) {
    Sleeper sleeper =
        nanos -> {
          Runnable r = duringTheWait.getAndSet(null);
          if (r != null) {
            r.run();
          }
          time.sleep(nanos);
        };
    return rateLimited(time, neverRefilled(permits), sleeper, events);
  }

  /**
   * An enforcing engine whose rate limit gives one permit now and the next a second later (a call
   * waits up to 5 s for its permit), telling {@code listener}; its sleeper first runs, once, what
   * {@code duringTheWait} holds as a wait starts (a caller giving up while its first attempt waits
   * for its permit), then moves {@code time} on.
   */
  public static RetryEngine onePermitASecond(
      FakeTime time,
      java.util.concurrent.atomic.AtomicReference<Runnable> duringTheWait,
      RetryListener listener) {
    Sleeper sleeper =
        nanos -> {
          Runnable r = duringTheWait.getAndSet(null);
          if (r != null) {
            r.run();
          }
          time.sleep(nanos);
        };
    RateLimitPolicy limit =
        RateLimitPolicy.builder()
            .enabled(true)
            .perSecond(1)
            .burst(1)
            .maxWait(Duration.ofSeconds(5))
            .build();
    return RetryEngine.builder()
        .clock(time)
        .sleeper(sleeper)
        .scheduler(time)
        .mode(Mode.ENFORCE)
        .policy(rateLimited(limit))
        .listener(listener)
        .build();
  }

  /** The default policy, route "test", but for its rate limit, {@code rateLimit}. */
  public static Policy rateLimited(RateLimitPolicy rateLimit) {
    return new Policy(
        "test",
        RetryPolicy.builder().build(),
        Policy.defaults().budget(),
        CircuitBreakerPolicy.defaults(),
        rateLimit);
  }

  /**
   * A host's bucket of {@code permits} permits, none added during a test and none waited for: one
   * more comes every 1000 s of {@link FakeTime}'s clock, which moves only by the engine's own waits
   * (a retry's backoff, a breaker's open second), never that far in a test. A call that finds the
   * bucket empty is refused at once with RateLimitedException.
   */
  public static RateLimitPolicy neverRefilled(int permits) {
    return RateLimitPolicy.builder()
        .enabled(true)
        .perSecond(0.001)
        .burst(permits)
        .maxWait(Duration.ZERO)
        .build();
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
    return builder(time, mode, retry, budget, breaker, rateLimit)
        .listener(recorder(events))
        .build();
  }

  /** A listener that adds every retry and give-up to {@code events}. */
  public static RetryListener recorder(List<RetryEvent> events) {
    return new RetryListener() {
      @Override
      public void onRetry(RetryEvent e) {
        events.add(e);
      }

      @Override
      public void onGiveUp(RetryEvent e) {
        events.add(e);
      }
    };
  }

  /**
   * The engine of {@link #engine(FakeTime, Mode, UnaryOperator, BudgetPolicy, CircuitBreakerPolicy,
   * RateLimitPolicy, List)} before its listener: for a test that records other events.
   */
  public static RetryEngine.Builder builder(
      FakeTime time,
      Mode mode,
      UnaryOperator<RetryPolicy.Builder> retry,
      BudgetPolicy budget,
      CircuitBreakerPolicy breaker,
      RateLimitPolicy rateLimit) {
    Policy policy =
        new Policy("test", retry.apply(RetryPolicy.builder()).build(), budget, breaker, rateLimit);
    return RetryEngine.builder()
        .clock(time)
        .sleeper(time)
        .scheduler(time)
        .mode(mode)
        .policy(policy);
  }
}
