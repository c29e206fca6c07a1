package dev.retryagent.bench;

import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.policy.Policy;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the engine adds to a call that succeeds at once (the common case): policy lookup, breaker
 * permit and record, budget deposit, classification, decision. The attempt itself is a constant, so
 * the difference between the two benchmarks is the engine's own cost per call. The engine has no
 * listeners here; {@code PolicyLayerBenchmark} (test sources) has the agent's wiring and the peers.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class EngineOverheadBenchmark {
  private static final Integer OK = 200;

  private RetryEngine engine;

  @Setup
  public void setUp() {
    engine = RetryEngine.builder().policy(Policy.defaults()).build();
  }

  @Benchmark
  public Integer direct() {
    return OK;
  }

  @Benchmark
  public Integer throughEngine() throws Exception {
    RetryCall call = engine.newCall(Fixtures.GET);
    return SyncRetryLoop.execute(call, engine.sleeper(), (n, t) -> OK, Fixtures.STATUS);
  }
}
