import java.lang.instrument.Instrumentation;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Times another agent's {@code premain} alone: the main thread's CPU time between this agent's
 * {@code start} and its {@code end}, with the agent under test between them (agents run in their
 * order on the command line, on the main thread):
 *
 * <pre>
 * java -javaagent:timer.jar=start -javaagent:retry-agent.jar=... -javaagent:timer.jar=end ...
 * </pre>
 *
 * Prints {@code premain-cpu-us N}. The thread's CPU clock is exact (a {@code clock_gettime}, which
 * brings the kernel's figure up to date) and the JVM's own start is outside the window, so the
 * spread is the agent's own: a fraction of a millisecond between runs, where the main thread's
 * CPU until {@code main} spreads by a few. The timer loads {@code java.management} before the agent
 * runs (the same in every variant), so the agent's figure here is not its cost in a JVM without it:
 * compare variants with each other, not with {@code premain-cpu.sh}.
 */
public class PremainTimer {
  private static ThreadMXBean threads;
  private static long start;

  public static void premain(String args, Instrumentation inst) {
    if ("start".equals(args)) {
      threads = ManagementFactory.getThreadMXBean();
      threads.getCurrentThreadCpuTime(); // its own first call's classes before the window
      start = threads.getCurrentThreadCpuTime();
    } else {
      long end = threads.getCurrentThreadCpuTime();
      System.out.println("premain-cpu-us " + (end - start) / 1000);
    }
  }
}
