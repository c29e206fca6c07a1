package dev.retryagent.engine;

import dev.retryagent.testing.FakeRequest;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A storm of 429s through the real engine: {@code threads} threads, each deciding 429s as fast as
 * it can, the 429s spread over {@code hosts} hosts ({@code maxHosts} 1,000,000, so no pause is
 * forgotten), on the system clock, each 429 asking for a Retry-After of 1-15 s. Every 429 notes its
 * host's pause under the engine's one pause lock ({@code RetryEngine.notePause}) and pauses the
 * host's other buckets ({@code pauseHost}, under the limiter registry's lock). Prints the 429
 * decisions a second (all threads) and the slowest decision's wall time (the lock waits are in it,
 * and so is every preemption of a shared machine). Not a test: timing claims go in
 * docs/BENCHMARKS.md.
 *
 * <p>{@code java -cp core/target/classes:core/target/test-classes:<snakeyaml.jar>
 * dev.retryagent.engine.HostPauseStormRun threads hosts seconds}
 */
public final class HostPauseStormRun {
  private HostPauseStormRun() {}

  public static void main(String[] args) throws Exception {
    int threads = Integer.parseInt(args[0]);
    int hosts = Integer.parseInt(args[1]);
    long runSeconds = args.length > 2 ? Long.parseLong(args[2]) : 5;
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    // No breaker: one opened by the 429s would refuse the calls before their 429 is decided.
    p.breaker.enabled(false).maxHosts(1_000_000);
    // A bucket that never refuses: the run times the 429's decision, not the limit's waits.
    p.rateLimit
        .enabled(true)
        .perSecond(1_000_000_000)
        .burst(1_000_000)
        .maxWait(Duration.ofSeconds(20));
    RetryEngine engine =
        RetryEngine.builder().clock(Clock.SYSTEM).errors(line -> {}).policy(p.build()).build();
    String[] names = new String[hosts];
    for (int i = 0; i < hosts; i++) {
      names[i] = "h" + i + ".example";
    }
    // Warm-up: every host's state, bucket and pause made once, on this thread.
    for (int i = 0; i < hosts; i++) {
      decide(engine, names[i], "1");
    }
    AtomicBoolean stop = new AtomicBoolean();
    CountDownLatch start = new CountDownLatch(1);
    long[] counts = new long[threads];
    long[] slowest = new long[threads];
    Thread[] workers = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      int me = t;
      workers[t] =
          new Thread(
              () -> {
                java.util.Random random = new java.util.Random(42 + me);
                String[] seconds = new String[15];
                for (int s = 0; s < 15; s++) {
                  seconds[s] = String.valueOf(s + 1);
                }
                try {
                  start.await();
                } catch (InterruptedException e) {
                  return;
                }
                long n = 0;
                long max = 0;
                while (!stop.get()) {
                  long took =
                      decide(engine, names[random.nextInt(hosts)], seconds[random.nextInt(15)]);
                  max = Math.max(max, took);
                  n++;
                }
                counts[me] = n;
                slowest[me] = max;
              });
      workers[t].start();
    }
    long t0 = System.nanoTime();
    start.countDown();
    Thread.sleep(runSeconds * 1_000);
    stop.set(true);
    for (Thread w : workers) {
      w.join();
    }
    long elapsed = System.nanoTime() - t0;
    long total = 0;
    long max = 0;
    for (int t = 0; t < threads; t++) {
      total += counts[t];
      max = Math.max(max, slowest[t]);
    }
    System.out.printf(
        "threads %d, hosts %d: %,d 429 decisions in %.1f s, %,.0f a second; slowest %,d µs;"
            + " pauses noted %d%n",
        threads,
        hosts,
        total,
        elapsed / 1e9,
        total * 1e9 / elapsed,
        max / 1_000,
        engine.hostPausesNoted());
  }

  /** One call to {@code host} answered 429 with {@code Retry-After: seconds}: the decision's ns. */
  private static long decide(RetryEngine engine, String host, String seconds) {
    RetryCall call = engine.newCall(FakeRequest.of("GET", host));
    try {
      call.reservePermit();
    } catch (RateLimitedException e) {
      // not with this bucket; the 429 is decided all the same
    }
    try {
      call.beginAttempt();
    } catch (CircuitBreakerOpenException e) {
      throw new AssertionError(e); // no breaker
    }
    long t0 = System.nanoTime();
    call.onResponse(429, seconds);
    return System.nanoTime() - t0;
  }
}
