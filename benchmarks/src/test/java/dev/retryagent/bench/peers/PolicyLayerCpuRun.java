package dev.retryagent.bench.peers;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The variants of {@link PolicyLayerBenchmark}, timed in CPU time of the calling thread instead of
 * wall time: on a machine whose cores are shared with other builds, a thread that is descheduled
 * keeps its wall clock running but not its CPU clock. Each round runs every variant once (warm-up,
 * then {@code OPS} calls), in a rotating order; printed are the median and the spread over rounds
 * of CPU ns per call and the bytes the thread allocated per call.
 *
 * <p>Run (from the repository root, after the build): {@code java -cp
 * "benchmarks/target/test-classes:benchmarks/target/classes:$(cat
 * benchmarks/target/peer-classpath.txt)" dev.retryagent.bench.peers.PolicyLayerCpuRun [rounds]
 * [ops] [variant regex]}.
 */
public final class PolicyLayerCpuRun {
  private PolicyLayerCpuRun() {}

  /** One benchmark method. */
  @FunctionalInterface
  private interface Op {
    Object run(PolicyLayerBenchmark b) throws Throwable;
  }

  public static void main(String[] args) throws Throwable {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
    int ops = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
    String only = args.length > 2 ? args[2] : ".*";
    Blackhole bh =
        new Blackhole(
            "Today's password is swordfish. I understand instantiating Blackholes directly is"
                + " dangerous.");
    PolicyLayerBenchmark b = new PolicyLayerBenchmark();
    b.setUp(bh);
    Map<String, Op> variants = new LinkedHashMap<>();
    variants.put("successRetryAgent", PolicyLayerBenchmark::successRetryAgent);
    variants.put("successResilience4j", PolicyLayerBenchmark::successResilience4j);
    variants.put("successResilience4jPerHost", PolicyLayerBenchmark::successResilience4jPerHost);
    variants.put("successFailsafe", PolicyLayerBenchmark::successFailsafe);
    variants.put("partTarget", PolicyLayerBenchmark::partTarget);
    variants.put("partNewCall", PolicyLayerBenchmark::partNewCall);
    variants.put("partNoListeners", PolicyLayerBenchmark::partNoListeners);
    variants.put("failureRetryAgent", PolicyLayerBenchmark::failureRetryAgent);
    variants.put("failureResilience4j", PolicyLayerBenchmark::failureResilience4j);
    variants.put("failureFailsafe", PolicyLayerBenchmark::failureFailsafe);
    variants.put("rejectedRetryAgent", PolicyLayerBenchmark::rejectedRetryAgent);
    variants.put("rejectedRetryAgentLogWarn", PolicyLayerBenchmark::rejectedRetryAgentLogWarn);
    variants.put("rejectedResilience4j", PolicyLayerBenchmark::rejectedResilience4j);
    variants.put("rejectedFailsafe", PolicyLayerBenchmark::rejectedFailsafe);
    variants.keySet().removeIf(name -> !name.matches(only));
    List<String> names = new ArrayList<>(variants.keySet());
    Map<String, List<double[]>> samples = new LinkedHashMap<>();
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long self = Thread.currentThread().getId();
    for (int round = 0; round < rounds; round++) {
      for (int i = 0; i < names.size(); i++) {
        String name = names.get((i + round) % names.size());
        Op op = variants.get(name);
        b.openBreakers();
        for (int k = 0; k < ops / 4; k++) {
          bh.consume(op.run(b));
        }
        long cpu = threads.getCurrentThreadCpuTime();
        long bytes = threads.getThreadAllocatedBytes(self);
        for (int k = 0; k < ops; k++) {
          bh.consume(op.run(b));
        }
        double cpuPerOp = (threads.getCurrentThreadCpuTime() - cpu) / (double) ops;
        double bytesPerOp = (threads.getThreadAllocatedBytes(self) - bytes) / (double) ops;
        samples
            .computeIfAbsent(name, n -> new ArrayList<>())
            .add(new double[] {cpuPerOp, bytesPerOp});
      }
    }
    System.out.printf(
        "%d rounds x %d calls per variant, CPU time of the calling thread%n", rounds, ops);
    System.out.println("| variant | CPU ns/call, median (min-max) | B/call, median |");
    System.out.println("|---|---:|---:|");
    for (String name : names) {
      double[] cpu = samples.get(name).stream().mapToDouble(s -> s[0]).sorted().toArray();
      double[] bytes = samples.get(name).stream().mapToDouble(s -> s[1]).sorted().toArray();
      System.out.printf(
          "| %s | %.0f (%.0f-%.0f) | %.0f |%n",
          name, cpu[cpu.length / 2], cpu[0], cpu[cpu.length - 1], bytes[bytes.length / 2]);
    }
  }
}
