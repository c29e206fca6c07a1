package dev.retryagent.demo;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Harness for {@link AgentSeedSweepIT}: runs the demo for many seeds inside one JVM (the one
 * started with the agent), so JVM start-up is paid once. Prints one machine-readable line per run
 * and a final {@code SWEEP-DONE} line.
 *
 * <p>Usage: {@code SeedSweep FIRST_SEED COUNT PARALLEL_RUNS}
 */
public final class SeedSweep {
  private SeedSweep() {}

  public static void main(String[] args) throws Exception {
    long first = Long.parseLong(args[0]);
    int count = Integer.parseInt(args[1]);
    int parallel = Integer.parseInt(args[2]);
    PrintStream discard = new PrintStream(OutputStream.nullOutputStream());
    ExecutorService pool = Executors.newFixedThreadPool(parallel);
    List<Future<String>> runs = new ArrayList<>();
    for (long seed = first; seed < first + count; seed++) {
      long s = seed;
      runs.add(
          pool.submit(
              () -> {
                RunResult r = NewsProcessor.run(Options.defaults(s), discard);
                return String.format(
                    "RUN seed=%d succeeded=%d failed=%d charges=%d providerRequests=%d durationMs=%d",
                    s,
                    r.succeeded(),
                    r.failed(),
                    r.chargesCreated(),
                    r.providerRequests(),
                    r.duration().toMillis());
              }));
    }
    for (Future<String> f : runs) {
      System.out.println(f.get());
      System.out.flush();
    }
    pool.shutdown();
    System.out.println("SWEEP-DONE runs=" + count);
    System.out.flush();
    // The demo's own threads are daemons; exit explicitly in case the agent's are not.
    System.exit(0);
  }
}
