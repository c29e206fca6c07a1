import java.io.BufferedReader;
import java.io.File;
import java.io.FileReader;
import java.io.IOException;

/**
 * Prints, as its first act, the CPU time the JVM has used until {@code main}: the main thread's
 * (JVM start-up on that thread and every agent's {@code premain}) and all threads' (JIT compilers
 * and GC included), in microseconds, from Linux's {@code /proc/.../schedstat} (time on a CPU, in
 * nanoseconds: waiting for a core under load is not counted, unlike wall time). Linux only.
 *
 * <p>The kernel brings a running thread's figure up to date only at a scheduler tick (4 ms at 250
 * Hz) or when the thread leaves the CPU, not when the file is read: read as it is, the main thread's
 * time lagged by 0-4 ms, a noise of its own in every run. A {@code Thread.yield()} (a {@code
 * sched_yield}, which updates it) just before each read of the main thread's makes that read
 * exact. The other threads' figures may still lag by up to a tick each while they run.
 *
 * <p>With the argument {@code client}, also the main thread's CPU time spent in the application's
 * first {@code HttpClient.newHttpClient()} (where the agent rewrites the JDK's {@code
 * HttpClientFacade} as the JVM loads it), as a third number.
 */
public class CpuAtMain {
  public static void main(String[] args) throws IOException {
    long main = mainThreadNow();
    long all = 0;
    File[] tasks = new File("/proc/self/task").listFiles();
    for (File task : tasks) {
      all += onCpu(task + "/schedstat");
    }
    if (args.length > 0 && args[0].equals("client")) {
      long before = mainThreadNow();
      java.net.http.HttpClient.newHttpClient();
      long spent = mainThreadNow() - before;
      System.out.println(main / 1000 + " " + all / 1000 + " " + spent / 1000);
    } else {
      System.out.println(main / 1000 + " " + all / 1000);
    }
  }

  /** The main thread's CPU time now, exact (see above). */
  private static long mainThreadNow() throws IOException {
    Thread.yield();
    return onCpu("/proc/thread-self/schedstat");
  }

  private static long onCpu(String file) throws IOException {
    try (BufferedReader r = new BufferedReader(new FileReader(file))) {
      String line = r.readLine();
      return Long.parseLong(line.substring(0, line.indexOf(' ')));
    }
  }
}
