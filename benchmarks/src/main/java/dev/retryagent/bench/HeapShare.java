package dev.retryagent.bench;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import javax.management.ObjectName;

/**
 * Which part of the heap a run's waiting calls retain is the agent's own: a live class histogram
 * (the JVM's {@code GC.class_histogram}, as {@code jmap -histo:live}, through the diagnostic
 * command MBean) taken before the calls and again while they wait, and the growth of the classes
 * that only the agent allocates per call: everything under {@code dev.retryagent.} (its lambdas
 * included) except this benchmark's own classes, and the shared scheduler's per-task objects
 * ({@code ScheduledFutureTask} and the {@code RunnableAdapter} it wraps around a {@code Runnable};
 * nothing else in these runs schedules). What is left of the retained heap is the application's own
 * call (the client's request, call and callback objects) and the futures the client and the agent
 * both chain, which a histogram cannot tell apart.
 */
final class HeapShare {
  private static final String SCHEDULED_TASK =
      "java.util.concurrent.ScheduledThreadPoolExecutor$ScheduledFutureTask";
  private static final String RUNNABLE_ADAPTER = "java.util.concurrent.Executors$RunnableAdapter";

  /** Bytes by class name (lambda classes folded to their host class plus {@code $$Lambda}). */
  private final Map<String, Long> bytes;

  private HeapShare(Map<String, Long> bytes) {
    this.bytes = bytes;
  }

  /** Takes a live histogram now (a full GC first, as {@code jmap -histo:live}). */
  static HeapShare now() throws Exception {
    String text =
        (String)
            ManagementFactory.getPlatformMBeanServer()
                .invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"),
                    "gcClassHistogram",
                    new Object[] {new String[0]},
                    new String[] {String[].class.getName()});
    Map<String, Long> bytes = new HashMap<>();
    for (String line : text.split("\n")) {
      String[] f = line.trim().split("\\s+");
      if (f.length >= 4 && f[0].endsWith(":")) {
        bytes.merge(fold(f[3]), Long.parseLong(f[2]), Long::sum);
      }
    }
    return new HeapShare(bytes);
  }

  private static String fold(String name) {
    int lambda = name.indexOf("$$Lambda");
    return lambda < 0 ? name : name.substring(0, lambda) + "$$Lambda";
  }

  static boolean agentOwned(String name) {
    return (name.startsWith("dev.retryagent.") && !name.startsWith("dev.retryagent.bench."))
        || name.equals(SCHEDULED_TASK)
        || name.equals(RUNNABLE_ADAPTER);
  }

  /** Bytes of every live object in the histogram. */
  long total() {
    long sum = 0;
    for (long b : bytes.values()) {
      sum += b;
    }
    return sum;
  }

  /** The {@code n} classes that grew most from {@code before} to this, in bytes per call. */
  List<Map.Entry<String, Long>> largestGrowthPerCall(HeapShare before, int calls, int n) {
    List<Map.Entry<String, Long>> grown = growthPerCall(before, calls, name -> true);
    return grown.subList(0, Math.min(n, grown.size()));
  }

  /**
   * The agent's classes that grew from {@code before} to this, in bytes per call, largest first.
   */
  List<Map.Entry<String, Long>> agentGrowthPerCall(HeapShare before, int calls) {
    return growthPerCall(before, calls, HeapShare::agentOwned);
  }

  /**
   * The classes named by {@code which} that grew by half a byte per call or more, largest first.
   */
  private List<Map.Entry<String, Long>> growthPerCall(
      HeapShare before, int calls, Predicate<String> which) {
    List<Map.Entry<String, Long>> grown = new ArrayList<>();
    for (Map.Entry<String, Long> e : bytes.entrySet()) {
      long growth = e.getValue() - before.bytes.getOrDefault(e.getKey(), 0L);
      if (which.test(e.getKey()) && growth >= calls / 2) {
        grown.add(Map.entry(e.getKey(), Math.round(growth / (double) calls)));
      }
    }
    grown.sort((a, b) -> Long.compare(b.getValue(), a.getValue()));
    return grown;
  }
}
