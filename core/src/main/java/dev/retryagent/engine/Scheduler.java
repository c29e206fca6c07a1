package dev.retryagent.engine;

/**
 * Runs asynchronous retries later, without a thread waiting per pending retry: a small pool of
 * threads waits for the next due task and runs it (starting the next attempt; the agent's own timed
 * work, too). Injected so tests drive time by hand. Implementations are thread-safe; the default is
 * {@link #shared()}. A bound on a read from the network (a retried body's grace on Apache
 * HttpClient classic, {@code Discards.Grace}; java.net.http's; the Apache 5.x async call's grace
 * for an exchange its client's close never told) runs on {@link #shared()} whatever scheduler an
 * engine was given: it is real time, as the client's own network timeouts are, and on a scheduler a
 * test drives by hand a held body waited for as long as the socket timeout.
 */
public interface Scheduler {
  /** A task that may still be cancelled. */
  interface Cancellable {
    /**
     * Cancels the task if it has not started: true when this cancel withdrew it (it will not run);
     * false when it runs, ran, or was withdrawn before.
     */
    boolean cancel();
  }

  /**
   * Runs {@code task} after {@code delayNanos} (0 = as soon as possible, never on the caller).
   * Returns only for a task that will run unless cancelled; throws (a refusal: the JVM out of
   * threads, or ending) only for one that never runs, since callers then go on without it.
   */
  Cancellable schedule(Runnable task, long delayNanos);

  /** The process-wide scheduler: daemon threads, created on first use. */
  static Scheduler shared() {
    return SharedScheduler.INSTANCE;
  }
}
