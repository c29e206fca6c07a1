package dev.retryagent.bench.peers;

import dev.failsafe.Failsafe;
import dev.failsafe.FailsafeExecutor;
import dev.retryagent.bench.Fixtures;
import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.SyncRetryLoop;
import io.github.resilience4j.circuitbreaker.CallNotPermittedException;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerRegistry;
import io.github.resilience4j.core.functions.CheckedSupplier;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.github.resilience4j.retry.RetryRegistry;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The policy layer alone, around an attempt that is a constant, side by side in one run (issue 13):
 * retry-agent's engine wired as the agent wires it, resilience4j 2.4 Retry + CircuitBreaker, the
 * same with a per-host registry lookup, and Failsafe 3.3 RetryPolicy + CircuitBreaker. Three paths:
 *
 * <ul>
 *   <li>{@code success}: the first attempt answers 200. Every library with its defaults.
 *   <li>{@code failure}: the first attempt answers 429, the second 200: one retry, no wait (the
 *       engine's sleeper sleeps nothing, resilience4j waits 0, Failsafe's default delay is 0). The
 *       peers are told to retry on the result 429; retry-agent does by default but runs without its
 *       budget here, which at one retry per call would refuse most retries (that is its job).
 *   <li>{@code rejected}: the breaker is open; the call fails without an attempt. The peers are
 *       told not to retry their own rejection (by default both would: resilience4j after 500 ms).
 * </ul>
 *
 * <p>The agent's log listener writes to a sink that drops each line (building the line is counted,
 * writing it to stderr is not): at the default level {@code info} a retry and a call failed fast by
 * an open breaker each make a line. {@code rejectedLogWarn} shows the engine without that line.
 *
 * <p>The {@code part} benchmarks split retry-agent's success path: the per-host key, starting a
 * call, and the whole path without listeners.
 *
 * <p>Test scope: resilience4j and Failsafe are test dependencies of this module and in no shipped
 * artifact. Run from {@code target/test-classes} (see docs/BENCHMARKS.md).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(3)
@State(Scope.Benchmark)
public class PolicyLayerBenchmark {
  private static final Integer OK = 200;
  private static final Integer TOO_MANY = 429;
  private static final CheckedSupplier<Integer> R4J_OK = () -> OK;
  private static final dev.failsafe.function.CheckedSupplier<Integer> FS_OK = () -> OK;

  private RetryEngine agentDefaults;
  private RetryEngine noListeners;
  private RetryEngine agentNoBudget;
  private RetryEngine agentOpen;
  private RetryEngine agentOpenLogWarn;

  private Retry r4jRetry;
  private CircuitBreaker r4jBreaker;
  private RetryRegistry r4jRetries;
  private CircuitBreakerRegistry r4jBreakers;
  private Retry r4jRetryOn429;
  private Retry r4jRetryNotRejections;
  private CircuitBreaker r4jOpenBreaker;

  private FailsafeExecutor<Integer> failsafe;
  private FailsafeExecutor<Integer> failsafeOn429;
  private dev.failsafe.CircuitBreaker<Integer> fsOpenBreaker;
  private FailsafeExecutor<Integer> failsafeOpen;

  /** Receives the agent's log lines; a sink must be thread-safe, this one keeps nothing. */
  private volatile Blackhole lines;

  @Setup(Level.Trial)
  public void setUp(Blackhole bh) throws Exception {
    lines = bh;
    agentDefaults = Fixtures.agentEngine(AgentConfig.defaults(), this::line);
    noListeners = RetryEngine.builder().build();
    agentNoBudget =
        Fixtures.agentEngine(yaml("defaults:\n  budget: { enabled: false }\n"), this::line);
    agentOpen = Fixtures.agentEngine(AgentConfig.defaults(), this::line);
    agentOpenLogWarn = Fixtures.agentEngine(yaml("agent:\n  log: { level: warn }\n"), this::line);

    r4jRetry = Retry.ofDefaults("api");
    r4jBreaker = CircuitBreaker.ofDefaults("api");
    r4jRetries = RetryRegistry.ofDefaults();
    r4jBreakers = CircuitBreakerRegistry.ofDefaults();
    r4jRetryOn429 =
        Retry.of(
            "api",
            RetryConfig.<Integer>custom()
                .retryOnResult(s -> s == 429)
                .waitDuration(Duration.ZERO)
                .build());
    r4jRetryNotRejections =
        Retry.of(
            "api", RetryConfig.custom().ignoreExceptions(CallNotPermittedException.class).build());
    r4jOpenBreaker = CircuitBreaker.ofDefaults("api");

    failsafe =
        Failsafe.with(
            dev.failsafe.RetryPolicy.<Integer>ofDefaults(),
            dev.failsafe.CircuitBreaker.<Integer>ofDefaults());
    failsafeOn429 =
        Failsafe.with(
            dev.failsafe.RetryPolicy.<Integer>builder().handleResultIf(s -> s == 429).build(),
            dev.failsafe.CircuitBreaker.<Integer>ofDefaults());
    fsOpenBreaker = dev.failsafe.CircuitBreaker.ofDefaults();
    failsafeOpen =
        Failsafe.with(
            dev.failsafe.RetryPolicy.<Integer>builder()
                .abortOn(dev.failsafe.CircuitBreakerOpenException.class)
                .build(),
            fsOpenBreaker);
  }

  /** Opens every breaker again before each iteration: the engine's would half-open after 30 s. */
  @Setup(Level.Iteration)
  public void openBreakers() throws Exception {
    Fixtures.tripBreaker(agentOpen);
    Fixtures.tripBreaker(agentOpenLogWarn);
    r4jOpenBreaker.transitionToForcedOpenState();
    fsOpenBreaker.open();
  }

  private static AgentConfig yaml(String text) throws Exception {
    return ConfigLoader.parse(text, "benchmark", Map.of());
  }

  private void line(String line) {
    lines.consume(line);
  }

  // ---- success: the first attempt answers 200 ----

  @Benchmark
  public Integer successRetryAgent() throws Exception {
    return SyncRetryLoop.execute(
        agentDefaults.newCall(Fixtures.GET),
        agentDefaults.sleeper(),
        (n, t) -> OK,
        Fixtures.STATUS);
  }

  @Benchmark
  public Integer successResilience4j() throws Throwable {
    return Retry.decorateCheckedSupplier(
            r4jRetry, CircuitBreaker.decorateCheckedSupplier(r4jBreaker, R4J_OK))
        .get();
  }

  @Benchmark
  public Integer successResilience4jPerHost() throws Throwable {
    // Keyed like the engine's per-host state: scheme://host:port of the request.
    String target = Fixtures.GET.target();
    return Retry.decorateCheckedSupplier(
            r4jRetries.retry(target),
            CircuitBreaker.decorateCheckedSupplier(r4jBreakers.circuitBreaker(target), R4J_OK))
        .get();
  }

  @Benchmark
  public Integer successFailsafe() {
    return failsafe.get(FS_OK);
  }

  // ---- where the success path's time and bytes go (for whoever makes it cheaper) ----

  /** The per-host key the engine computes for every call: {@code scheme://host:port}. */
  @Benchmark
  public String partTarget() {
    return Fixtures.GET.target();
  }

  /** Policy lookup and per-host state (breaker, budget), without an attempt. */
  @Benchmark
  public Object partNewCall() {
    return agentDefaults.newCall(Fixtures.GET);
  }

  /** The success path of an engine without listeners (as {@code EngineOverheadBenchmark}). */
  @Benchmark
  public Integer partNoListeners() throws Exception {
    return SyncRetryLoop.execute(
        noListeners.newCall(Fixtures.GET), noListeners.sleeper(), (n, t) -> OK, Fixtures.STATUS);
  }

  // ---- failure: 429, then 200 ----

  @Benchmark
  public Integer failureRetryAgent() throws Exception {
    return SyncRetryLoop.execute(
        agentNoBudget.newCall(Fixtures.GET),
        Fixtures.NO_SLEEP,
        (n, t) -> n == 1 ? TOO_MANY : OK,
        Fixtures.STATUS);
  }

  @Benchmark
  public Integer failureResilience4j() throws Throwable {
    return Retry.decorateCheckedSupplier(
            r4jRetryOn429, CircuitBreaker.decorateCheckedSupplier(r4jBreaker, new FlakyOnce()))
        .get();
  }

  @Benchmark
  public Integer failureFailsafe() {
    return failsafeOn429.get(ctx -> ctx.getAttemptCount() == 0 ? TOO_MANY : OK);
  }

  // ---- rejected: the breaker is open ----

  @Benchmark
  public Object rejectedRetryAgent() throws Exception {
    return rejected(agentOpen);
  }

  @Benchmark
  public Object rejectedRetryAgentLogWarn() throws Exception {
    return rejected(agentOpenLogWarn);
  }

  private static Object rejected(RetryEngine engine) throws Exception {
    try {
      return SyncRetryLoop.execute(
          engine.newCall(Fixtures.GET), Fixtures.NO_SLEEP, (n, t) -> OK, Fixtures.STATUS);
    } catch (IOException rejected) {
      return rejected;
    }
  }

  @Benchmark
  public Object rejectedResilience4j() throws Throwable {
    try {
      return Retry.decorateCheckedSupplier(
              r4jRetryNotRejections, CircuitBreaker.decorateCheckedSupplier(r4jOpenBreaker, R4J_OK))
          .get();
    } catch (CallNotPermittedException rejected) {
      return rejected;
    }
  }

  @Benchmark
  public Object rejectedFailsafe() {
    try {
      return failsafeOpen.get(FS_OK);
    } catch (dev.failsafe.CircuitBreakerOpenException rejected) {
      return rejected;
    }
  }

  /** 429 on the first attempt, 200 after: resilience4j does not tell the attempt its number. */
  private static final class FlakyOnce implements CheckedSupplier<Integer> {
    private int attempts;

    @Override
    public Integer get() {
      return ++attempts == 1 ? TOO_MANY : OK;
    }
  }
}
