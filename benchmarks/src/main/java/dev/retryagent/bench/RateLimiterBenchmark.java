package dev.retryagent.bench;

import dev.retryagent.internal.engine.RateLimiter;
import dev.retryagent.policy.RateLimitPolicy;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What a host's token bucket costs a call that takes one permit ({@code rateLimit.enabled}), time
 * handed in as the engine hands it. Two shapes: {@code full}, a bucket that never runs dry (the
 * usual case); {@code busy}, callers at twice the refill rate, each waiting for a token still to
 * come, so the bucket is never full and every call computes when its token falls due.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(2)
@State(Scope.Thread)
public class RateLimiterBenchmark {
  @Param({"full", "busy"})
  String shape;

  private RateLimiter limiter;
  private long now;
  private long step;

  @Setup
  public void setUp() {
    RateLimitPolicy p = RateLimitPolicy.builder().enabled(true).perSecond(1000).burst(50).build();
    limiter = new RateLimiter(p, 0);
    now = 0;
    step = "full".equals(shape) ? 100_000_000L : 500_000L;
  }

  @Benchmark
  public long reserve() {
    now += step;
    return limiter.reserve(now, Long.MAX_VALUE, Long.MAX_VALUE);
  }
}
