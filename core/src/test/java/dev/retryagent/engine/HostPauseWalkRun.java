package dev.retryagent.engine;

import dev.retryagent.testing.FakeRequest;
import java.util.Arrays;

/**
 * What a 429 pays to note its host's pause ({@code RetryEngine.notePause}) at {@code maxHosts}
 * 100,000, the pauses past the bound forgotten: a fake clock standing, each 429 of a host of its
 * own with a pause of 1-15 s. Prints, per round of 100,000 429s, the slowest 429's CPU µs, the
 * 99.9th percentile and the median; the slowest was the one that walked the map (before, once per
 * ~100,000 429s past the bound). Also when the slowest began (JVM uptime, to find it in {@code
 * -Xlog}'s lines) and how much of its CPU time was user time. Not a test: timing claims go in
 * docs/BENCHMARKS.md.
 *
 * <p>{@code java -cp core/target/classes:core/target/test-classes:<snakeyaml.jar>
 * dev.retryagent.engine.HostPauseWalkRun [rounds]}
 */
public final class HostPauseWalkRun {
  private static final java.lang.management.ThreadMXBean CPU =
      java.lang.management.ManagementFactory.getThreadMXBean();

  private HostPauseWalkRun() {}

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 8;
    int bound = 100_000;
    FakeClock clock = new FakeClock();
    RetryEngine engine = RateLimitThroughEngineTest.hostPausesEngine(bound, clock);
    java.util.Random random = new java.util.Random(42);
    long[] each = new long[bound];
    java.lang.management.RuntimeMXBean jvm =
        java.lang.management.ManagementFactory.getRuntimeMXBean();
    int host = 0;
    // Round 0 fills the map to the bound, round 1 is the first past it: warm-up.
    for (int round = 0; round <= rounds + 1; round++) {
      long slowest = -1;
      long slowestAt = 0; // JVM uptime, ms: to find the slowest 429 in -Xlog's lines
      long slowestUser = 0; // of its CPU time, the user part (the rest: the kernel's, for it)
      for (int i = 0; i < each.length; i++) {
        RetryCall call = engine.newCall(FakeRequest.of("GET", "h" + host++ + ".example"));
        call.reservePermit();
        call.beginAttempt();
        String seconds = String.valueOf(1 + random.nextInt(15));
        long at = jvm.getUptime();
        long u0 = CPU.getCurrentThreadUserTime();
        long t0 = CPU.getCurrentThreadCpuTime();
        call.onResponse(429, seconds);
        each[i] = CPU.getCurrentThreadCpuTime() - t0;
        if (each[i] > slowest) {
          slowest = each[i];
          slowestAt = at;
          slowestUser = CPU.getCurrentThreadUserTime() - u0;
        }
      }
      Arrays.sort(each);
      System.out.printf(
          "round %d: pauses left %d, forgotten so far %d; of its %d 429s the slowest %d µs CPU,"
              + " p99.9 %.1f µs, median %.1f µs; the slowest began at %.3f s of uptime, %d µs of it user time%n",
          round,
          engine.hostPausesNoted(),
          engine.hostPausesForgotten(),
          each.length,
          each[each.length - 1] / 1_000,
          each[each.length - each.length / 1_000] / 1_000.0,
          each[each.length / 2] / 1_000.0,
          slowestAt / 1_000.0,
          slowestUser / 1_000);
    }
  }
}
