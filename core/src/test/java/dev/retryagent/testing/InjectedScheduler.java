package dev.retryagent.testing;

import dev.retryagent.engine.Scheduler;
import dev.retryagent.internal.Discards;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A scheduler a library user injects into the engine ({@code RetryEngine.Builder.scheduler}): runs
 * each task at once on a thread of its own, as if its delay had passed, and keeps what it was
 * given, for a test of which timed work of an adapter runs on it (a retried body's grace, {@link
 * Discards.Grace}, must not: it runs on the shared scheduler, in real time).
 */
public final class InjectedScheduler implements Scheduler {
  private final List<Runnable> tasks = new CopyOnWriteArrayList<>();

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    tasks.add(task);
    Thread t = new Thread(task, "injected-scheduler");
    t.setDaemon(true);
    t.start();
    return () -> false; // already run, or running
  }

  /** Retried bodies' graces scheduled here so far. */
  public long graces() {
    return tasks.stream().filter(t -> t instanceof Discards.Grace).count();
  }
}
