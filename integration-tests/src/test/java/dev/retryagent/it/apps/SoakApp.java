package dev.retryagent.it.apps;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * The soak of issue 14: a service that calls one loopback server as hard as it can for a bounded
 * time, through every client the agent hooks, with no retry code of its own.
 *
 * <p>Arguments ({@code key=value}): {@code seconds} of load; {@code sample} seconds between
 * samples; {@code threads=platform|virtual} for the blocking callers; {@code base} URL of the
 * server; {@code pinned=true} records JFR {@code jdk.VirtualThreadPinned} events (JDK 21+); {@code
 * pace}: least milliseconds between the starts of one caller's calls (10), so that calls an open
 * breaker fails at once come at a service's pace, not in a spin.
 *
 * <p>64 blocking callers (16 each on {@code java.net.http send}, OkHttp {@code execute}, {@code
 * HttpURLConnection}, Apache HttpClient 5) call in a loop; 64 asynchronous callers (32 each on
 * {@code sendAsync} and OkHttp {@code enqueue}) each keep one call in flight, the next started from
 * the completion of the last. Every few seconds a sampler collects garbage and prints {@code
 * sample=MILLIS,THREADS,HEAP_BYTES,CALLS_DONE,DEADLOCKED,AGENT_THREADS} (the last: the agent's own
 * threads, named {@code retry-agent-...}), then {@code pools=NAME:COUNT;...} (the live platform
 * threads by pool name). At the end: {@code app.ROUTE.calls=}, {@code app.ROUTE.outcome.OUTCOME=},
 * for the asynchronous routes {@code app.ROUTE.started=} (calls made) and {@code
 * app.ROUTE.callbacksAgain=} (a call's outcome heard again, not counted in the rest), then the
 * agent's counters read from its MBeans ({@code jmx.ROUTE.ATTRIBUTE=}, {@code
 * jmx.engine.ATTRIBUTE=}), then {@code report=done}; it exits at {@code exit} on stdin (or its
 * end), so the test can scrape Prometheus first. A caller that does not finish within a minute of
 * the end prints {@code stuck=} and every thread's stack, and the JVM exits with 3.
 */
public final class SoakApp {
  private static final String[] BLOCKING = {
    SoakClients.JDK_SEND, SoakClients.OK_EXECUTE, SoakClients.URL, SoakClients.APACHE
  };
  private static final String[] ASYNC = {SoakClients.JDK_ASYNC, SoakClients.OK_ENQUEUE};
  private static final int BLOCKING_CALLERS = 64;
  private static final int ASYNC_CALLERS = 64;

  /** Every route attribute, each give-up reason included (SoakAppTest checks the list). */
  static final String[] ROUTE_ATTRIBUTES = {
    "Calls",
    "Succeeded",
    "Failed",
    "Attempts",
    "Retries",
    "GaveUp",
    "BreakerRejections",
    "BreakerOpens",
    "BudgetRejections",
    "RateLimitWaits",
    "RateLimitRejections",
    "GaveUpAttempts",
    "GaveUpBudget",
    "GaveUpCircuitOpen",
    "GaveUpRateLimited",
    "GaveUpNotIdempotent",
    "GaveUpNonRetryable",
    "GaveUpDeadline",
    "GaveUpCancelled",
    "GaveUpBodyNotReplayable",
    "GaveUpRetryAfterTooLong",
    "GaveUpRetryDisabled",
    "GaveUpCallTimeout",
    "GaveUpApplicationFailed",
    "GaveUpPoolTimeout"
  };

  private static final String[] ENGINE_ATTRIBUTES = {
    "Calls", "Retries", "GaveUp", "PendingAsyncRetries", "TrackedTargets", "TrackedHosts"
  };

  private final Map<String, LongAdder> calls = new ConcurrentHashMap<>();

  /** Asynchronous calls started, per route: each must be heard once ({@code callbacksAgain}). */
  private final Map<String, LongAdder> asyncStarted = new ConcurrentHashMap<>();

  private final Map<String, LongAdder> callbacksAgain = new ConcurrentHashMap<>();
  private final Map<String, LongAdder> outcomes = new ConcurrentHashMap<>();
  private final LongAdder done = new LongAdder();
  private final SoakClients clients;
  private final long endNanos;

  /**
   * Starts each asynchronous caller's next call: a call that fails at once (an open breaker)
   * completes on the thread that made it, and starting the next one there would recurse.
   */
  private final ScheduledExecutorService next = Executors.newScheduledThreadPool(2);

  /** Least time between the starts of one caller's calls. */
  private final long paceNanos;

  private SoakApp(SoakClients clients, long endNanos, long paceNanos) {
    this.clients = clients;
    this.endNanos = endNanos;
    this.paceNanos = paceNanos;
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new TreeMap<>();
    for (String arg : args) {
      String[] kv = arg.split("=", 2);
      a.put(kv[0], kv[1]);
    }
    long seconds = Long.parseLong(a.get("seconds"));
    long sampleMillis = (long) (Double.parseDouble(a.getOrDefault("sample", "2")) * 1000);
    boolean virtual = "virtual".equals(a.get("threads"));
    PinnedEvents pinned = "true".equals(a.get("pinned")) ? PinnedEvents.start() : null;
    SoakClients clients = new SoakClients(a.get("base"));
    System.out.println("ready=" + ProcessHandle.current().pid());
    long start = System.nanoTime();
    SoakApp app =
        new SoakApp(
            clients,
            start + TimeUnit.SECONDS.toNanos(seconds),
            TimeUnit.MILLISECONDS.toNanos(Long.parseLong(a.getOrDefault("pace", "10"))));

    ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor();
    sampler.scheduleAtFixedRate(
        () -> app.sample(start), sampleMillis, sampleMillis, TimeUnit.MILLISECONDS);
    ExecutorService blocking =
        virtual ? virtualThreadPerTask() : Executors.newFixedThreadPool(BLOCKING_CALLERS);
    CountDownLatch finished = new CountDownLatch(BLOCKING_CALLERS + ASYNC_CALLERS);
    for (int i = 0; i < BLOCKING_CALLERS; i++) {
      String route = BLOCKING[i % BLOCKING.length];
      blocking.execute(() -> app.callInALoop(route, finished));
    }
    for (int i = 0; i < ASYNC_CALLERS; i++) {
      app.callAsyncInTurn(ASYNC[i % ASYNC.length], finished);
    }
    boolean allDone = finished.await(seconds + 60, TimeUnit.SECONDS);
    sampler.shutdown();
    sampler.awaitTermination(30, TimeUnit.SECONDS);
    if (!allDone) {
      System.out.println("stuck=" + finished.getCount() + " callers");
      dumpThreads();
      System.out.flush();
      System.exit(3);
    }
    blocking.shutdown();
    app.next.shutdown();
    System.out.println("elapsedMillis=" + (System.nanoTime() - start) / 1_000_000);
    app.report();
    if (pinned != null) {
      pinned.report();
    }
    System.out.println("report=done");
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null && !line.equals("exit"); ) {
      line = in.readLine();
    }
    System.exit(0); // the OkHttp and HttpClient threads would keep the JVM up a while longer
  }

  /** Executors.newVirtualThreadPerTaskExecutor(), JDK 21+, called by name: this compiles for 17. */
  private static ExecutorService virtualThreadPerTask() throws ReflectiveOperationException {
    return (ExecutorService)
        Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
  }

  /** Thread.startVirtualThread(task), JDK 21+, called by name like the executor above. */
  static Thread virtualThread(Runnable task) throws ReflectiveOperationException {
    return (Thread) Thread.class.getMethod("startVirtualThread", Runnable.class).invoke(null, task);
  }

  private boolean timeLeft() {
    return System.nanoTime() - endNanos < 0;
  }

  private void callInALoop(String route, CountDownLatch finished) {
    try {
      while (timeLeft()) {
        long started = System.nanoTime();
        count(route, clients.call(route));
        TimeUnit.NANOSECONDS.sleep(started + paceNanos - System.nanoTime());
      }
    } catch (InterruptedException e) {
      count(route, "interrupted");
    } finally {
      finished.countDown();
    }
  }

  /** Starts one asynchronous call; its completion starts the next while there is time. */
  private void callAsyncInTurn(String route, CountDownLatch finished) {
    if (!timeLeft()) {
      finished.countDown();
      return;
    }
    long started = System.nanoTime();
    asyncStarted.computeIfAbsent(route, r -> new LongAdder()).increment();
    AtomicBoolean heard = new AtomicBoolean();
    try {
      clients.callAsync(
          route,
          outcome -> {
            if (!heard.compareAndSet(false, true)) {
              // Counted apart, and no second chain started: the soak's other counts stay whole.
              callbacksAgain.computeIfAbsent(route, r -> new LongAdder()).increment();
              return;
            }
            count(route, outcome);
            callNext(route, finished, started);
          });
    } catch (RuntimeException e) {
      count(route, "thrown:" + e.getClass().getName());
      callNext(route, finished, started);
    }
  }

  private void callNext(String route, CountDownLatch finished, long started) {
    next.schedule(
        () -> callAsyncInTurn(route, finished),
        started + paceNanos - System.nanoTime(),
        TimeUnit.NANOSECONDS);
  }

  private void count(String route, String outcome) {
    calls.computeIfAbsent(route, r -> new LongAdder()).increment();
    outcomes.computeIfAbsent(route + ".outcome." + outcome, r -> new LongAdder()).increment();
    done.increment();
  }

  /** Collects garbage first: the heap figure is what is reachable, not what is yet to collect. */
  private void sample(long start) {
    System.gc();
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long[] deadlocked = threads.findDeadlockedThreads();
    Map<String, Integer> pools = threadPools();
    int agentThreads = 0;
    for (Map.Entry<String, Integer> pool : pools.entrySet()) {
      agentThreads += pool.getKey().startsWith("retry-agent-") ? pool.getValue() : 0;
    }
    System.out.println(
        "sample="
            + (System.nanoTime() - start) / 1_000_000
            + ","
            + threads.getThreadCount()
            + ","
            + ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed()
            + ","
            + done.sum()
            + ","
            + (deadlocked == null ? 0 : deadlocked.length)
            + ","
            + agentThreads);
    StringBuilder b = new StringBuilder("pools=");
    pools.forEach((name, n) -> b.append(name).append(':').append(n).append(';'));
    System.out.println(b.substring(0, b.length() - 1));
    if (deadlocked != null) {
      for (ThreadInfo t : threads.getThreadInfo(deadlocked, true, true)) {
        System.out.println("deadlock=" + t.toString().replace('\n', '|'));
      }
    }
  }

  /**
   * Live platform threads by pool, sorted, digits in names replaced by {@code #} (so {@code
   * pool-3-thread-17} counts as {@code pool-#-thread-#}): which pool grew.
   */
  private static Map<String, Integer> threadPools() {
    Map<String, Integer> pools = new TreeMap<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      String name = t.getName().replaceAll("[0-9]+", "#");
      pools.merge(name.length() > 40 ? name.substring(0, 40) : name, 1, Integer::sum);
    }
    return pools;
  }

  private void report() throws Exception {
    new TreeMap<>(calls).forEach((route, n) -> System.out.println("app." + route + ".calls=" + n));
    new TreeMap<>(outcomes).forEach((key, n) -> System.out.println("app." + key + "=" + n));
    new TreeMap<>(asyncStarted)
        .forEach((route, n) -> System.out.println("app." + route + ".started=" + n));
    new TreeMap<>(callbacksAgain)
        .forEach((route, n) -> System.out.println("app." + route + ".callbacksAgain=" + n));
    MBeanServer mbeans = ManagementFactory.getPlatformMBeanServer();
    // A call's end is counted before the caller sees it; wait (bounded) all the same, so a late
    // count shows as a difference, not as a race.
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    for (String route : new TreeMap<>(calls).keySet()) {
      ObjectName name = new ObjectName("dev.retryagent:type=Route,name=" + route);
      while (System.nanoTime() - until < 0
          && (!mbeans.isRegistered(name)
              || (Long) mbeans.getAttribute(name, "Calls") < calls.get(route).sum())) {
        Thread.sleep(50);
      }
      for (String attribute : ROUTE_ATTRIBUTES) {
        Object v = mbeans.isRegistered(name) ? mbeans.getAttribute(name, attribute) : "absent";
        System.out.println("jmx." + route + "." + attribute + "=" + v);
      }
    }
    ObjectName engine = new ObjectName("dev.retryagent:type=Engine");
    for (String attribute : ENGINE_ATTRIBUTES) {
      System.out.println("jmx.engine." + attribute + "=" + mbeans.getAttribute(engine, attribute));
    }
  }

  private static void dumpThreads() {
    List<String> lines = new ArrayList<>();
    Thread.getAllStackTraces()
        .forEach(
            (t, stack) -> {
              StringBuilder b = new StringBuilder("thread=").append(t.getName());
              for (StackTraceElement e : stack) {
                b.append(" | ").append(e);
              }
              lines.add(b.toString());
            });
    lines.forEach(System.out::println);
  }
}
