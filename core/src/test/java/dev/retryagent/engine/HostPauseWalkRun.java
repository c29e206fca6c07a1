package dev.retryagent.engine;

import dev.retryagent.testing.FakeRequest;
import java.util.Arrays;

/**
 * What the 429 that walks the engine's host pauses pays ({@code RetryEngine.forgetPauses}) at
 * {@code maxHosts} 100,000: a fake clock standing, each 429 of a host of its own with a pause of
 * 1-15 s; the walking 429 sees ~200,000 pauses and forgets ~100,000. Prints each walk's 429 in µs
 * and the median of the other 429s. Not a test: timing claims go in docs/BENCHMARKS.md.
 *
 * <p>{@code java -cp core/target/classes:core/target/test-classes:<snakeyaml.jar>
 * dev.retryagent.engine.HostPauseWalkRun [walks]}
 */
public final class HostPauseWalkRun {
  private static final java.lang.management.ThreadMXBean CPU =
      java.lang.management.ManagementFactory.getThreadMXBean();

  private HostPauseWalkRun() {}

  public static void main(String[] args) throws Exception {
    int walks = args.length > 0 ? Integer.parseInt(args[0]) : 8;
    int bound = 100_000;
    FakeClock clock = new FakeClock();
    RetryEngine engine = RateLimitThroughEngineTest.hostPausesEngine(bound, clock);
    java.util.Random random = new java.util.Random(42);
    long[] others = new long[bound];
    int host = 0;
    for (int walk = 0; walk <= walks; walk++) {
      long sweeps = engine.hostPauseSweeps();
      int n = 0;
      long walked = -1;
      while (engine.hostPauseSweeps() == sweeps) {
        RetryCall call = engine.newCall(FakeRequest.of("GET", "h" + host++ + ".example"));
        call.reservePermit();
        call.beginAttempt();
        String seconds = String.valueOf(1 + random.nextInt(15));
        long t0 = CPU.getCurrentThreadCpuTime();
        call.onResponse(429, seconds);
        long t = CPU.getCurrentThreadCpuTime() - t0;
        if (engine.hostPauseSweeps() != sweeps) {
          walked = t;
        } else if (n < others.length) {
          others[n++] = t;
        }
      }
      Arrays.sort(others, 0, n);
      // Walk 0 is the first 429's (one pause) and walk 1 forgets one: warm-up.
      System.out.printf(
          "walk %d: pauses left %d, forgotten so far %d, the walking 429 %d µs CPU, other"
              + " 429s median %.1f µs%n",
          walk,
          engine.hostPausesNoted(),
          engine.hostPausesForgotten(),
          walked / 1_000,
          n == 0 ? 0.0 : others[n / 2] / 1_000.0);
    }
  }
}
