package dev.retryagent.internal.observe;

import dev.retryagent.engine.PolicyResolver;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Jitter;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.testing.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

/**
 * A real engine on fake time, driven through {@link SyncRetryLoop} by scripted attempts: each step
 * is a status ({@code 503}), a response with {@code Retry-After} ({@link Resp}), or an exception to
 * throw. The events the listeners see are the engine's own.
 */
final class Rig {
  /** A scripted response. */
  static final class Resp {
    final int status;
    final String retryAfter;

    Resp(int status, String retryAfter) {
      this.status = status;
      this.retryAfter = retryAfter;
    }
  }

  static final ResponseAccess<Resp> ACCESS =
      new ResponseAccess<>() {
        @Override
        public int status(Resp r) {
          return r.status;
        }

        @Override
        public String header(Resp r, String name) {
          return "Retry-After".equalsIgnoreCase(name) ? r.retryAfter : null;
        }

        @Override
        public void discard(Resp r) {}
      };

  final FakeTime time = new FakeTime();
  final RetryEngine engine;

  Rig(Mode mode, Policy policy, RetryListener... listeners) {
    RetryEngine.Builder b =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .random(() -> 0.5)
            .mode(mode)
            .policy(policy);
    for (RetryListener l : listeners) {
      b.listener(l);
    }
    engine = b.build();
  }

  Rig(Policy policy, RetryListener... listeners) {
    this(Mode.ENFORCE, policy, listeners);
  }

  /** Each request's policy from {@code policies} (routes by method, host, path). */
  Rig(PolicyResolver policies, RetryListener... listeners) {
    RetryEngine.Builder b =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .random(() -> 0.5)
            .policies(policies);
    for (RetryListener l : listeners) {
      b.listener(l);
    }
    engine = b.build();
  }

  /** Backoff 117ms constant, no jitter; breaker, budget and rate limit as given. */
  static Policy policy(
      String route,
      UnaryOperator<RetryPolicy.Builder> retry,
      CircuitBreakerPolicy breaker,
      BudgetPolicy budget,
      RateLimitPolicy rateLimit) {
    RetryPolicy.Builder r =
        RetryPolicy.builder()
            .backoff(
                BackoffPolicy.builder()
                    .initial(Duration.ofMillis(117))
                    .multiplier(1.0)
                    .jitter(Jitter.NONE)
                    .build());
    return new Policy(route, retry.apply(r).build(), budget, breaker, rateLimit);
  }

  static Policy policy(String route, UnaryOperator<RetryPolicy.Builder> retry) {
    return policy(
        route,
        retry,
        CircuitBreakerPolicy.defaults(),
        BudgetPolicy.defaults(),
        RateLimitPolicy.defaults());
  }

  static Policy policy(String route) {
    return policy(route, b -> b);
  }

  /** One attempt a call; the breaker opens at half of 4 calls for 30 s, then lets 1 trial in. */
  static Policy breakerPolicy(String route, CircuitBreakerPolicy.Scope scope) {
    return Rig.policy(
        route,
        b -> b.maxAttempts(1),
        CircuitBreakerPolicy.builder()
            .scope(scope)
            .countWindow(4)
            .minimumCalls(4)
            .failureRateThreshold(0.5)
            .openFor(Duration.ofSeconds(30))
            .halfOpenCalls(1)
            .build(),
        BudgetPolicy.defaults(),
        RateLimitPolicy.defaults());
  }

  /** A policy on {@code route} whose rate limit lets one call a second through, none waits. */
  static Policy onePermitASecond(String route) {
    return policy(
        route,
        r -> r,
        CircuitBreakerPolicy.defaults(),
        BudgetPolicy.defaults(),
        RateLimitPolicy.builder().enabled(true).perSecond(1).burst(1).build());
  }

  /** A rig on {@code route} whose retry budget (ratio 0, no minimum) refuses every retry. */
  static Rig budgetSpent(String route, RetryListener... listeners) {
    return new Rig(
        policy(
            route,
            r -> r,
            CircuitBreakerPolicy.defaults(),
            BudgetPolicy.builder().ratio(0).minPerSecond(0).build(),
            RateLimitPolicy.defaults()),
        listeners);
  }

  /** One call of {@link #onThreads}: the {@code i}th of thread {@code thread}. */
  interface ThreadCall {
    void run(int thread, int i) throws Exception;
  }

  /**
   * Runs {@code call} {@code perThread} times on each of {@code threads} threads, all let go at
   * once, and returns when every thread is done (its failure thrown here).
   */
  static void onThreads(int threads, int perThread, ThreadCall call) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<?>> done = new ArrayList<>();
    try {
      for (int t = 0; t < threads; t++) {
        int id = t;
        done.add(
            pool.submit(
                () -> {
                  go.await();
                  for (int i = 0; i < perThread; i++) {
                    call.run(id, i);
                  }
                  return null;
                }));
      }
      go.countDown();
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** A step: the application's own code fails the attempt with {@code error}. */
  static final class Applications {
    final java.io.IOException error;

    Applications(java.io.IOException error) {
      this.error = error;
    }
  }

  /**
   * Runs one call. Returns the final response, or the exception the caller would have seen.
   *
   * @param steps one per attempt: an Integer status, a {@link Resp}, a Throwable to throw, or
   *     {@link Applications}
   */
  Object call(RequestInfo request, Object... steps) {
    List<Object> script = List.of(steps);
    AtomicInteger next = new AtomicInteger();
    RetryCall call = engine.newCall(request);
    try {
      return SyncRetryLoop.execute(
          call,
          time,
          (attempt, timeout) -> {
            int i = next.getAndIncrement();
            if (i >= script.size()) {
              throw new AssertionError("attempt " + attempt + " was not scripted");
            }
            Object step = script.get(i);
            if (step instanceof Applications) {
              // The application's own code (its request body) failed the attempt, and told the
              // call first, as the client adapters do.
              java.io.IOException own = ((Applications) step).error;
              call.applicationFailed(own);
              throw own;
            }
            if (step instanceof java.io.IOException) {
              throw (java.io.IOException) step;
            }
            if (step instanceof RuntimeException) {
              throw (RuntimeException) step;
            }
            if (step instanceof Resp) {
              return (Resp) step;
            }
            return new Resp((Integer) step, null);
          },
          ACCESS);
    } catch (Exception e) {
      return e;
    }
  }
}
