package dev.retryagent.engine;

import dev.retryagent.internal.AgentThreads;
import java.util.concurrent.Callable;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The process-wide {@link Scheduler} ({@link Scheduler#shared()}): at most {@value #THREADS} daemon
 * threads named {@code retry-agent-async-N}, whatever the number of waiting retries (issue 13:
 * 10,000 waiting calls once grew an unbounded pool to 55 threads), each both waiting for the next
 * due task and running it. Two, not one: starting an attempt may resolve a host name (java.net.http
 * resolves in {@code sendAsync}), and one slow resolution must not hold every other due retry. Idle
 * threads end after 30 s; a pending task keeps one. The agent runs its other timed work here too
 * (the exporters' start, the reload watcher's looks at its file), so it has no thread of its own
 * for them. Thread-safe.
 */
final class SharedScheduler implements Scheduler {
  static final SharedScheduler INSTANCE = new SharedScheduler();

  /** Threads of the pool. */
  static final int THREADS = 2;

  private final ScheduledThreadPoolExecutor pool;

  // Package-private for tests, which need a fresh instance; everyone else uses INSTANCE.
  // Threads are made when the first tasks come: AgentThreads keeps them from inheriting the
  // caller's class loader.
  SharedScheduler() {
    pool = new ScheduledThreadPoolExecutor(THREADS, AgentThreads.factory("retry-agent-async-"));
    pool.setRemoveOnCancelPolicy(true);
    pool.setKeepAliveTime(30, TimeUnit.SECONDS);
    pool.allowCoreThreadTimeOut(true);
  }

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    Cancel cancel = new Cancel(task);
    cancel.future = pool.schedule(cancel, delayNanos, TimeUnit.NANOSECONDS);
    return cancel;
  }

  /**
   * The task as the pool runs it and the handle that cancels it: one small object per waiting
   * retry, besides the pool's own task. A {@link Callable}, because the pool wraps a {@link
   * Runnable} in an adapter of its own: one object more per waiting retry (issue 13: 10,000 calls
   * may wait at once). A failure of the task is kept in the pool's task, as it is for a Runnable.
   */
  private static final class Cancel implements Cancellable, Callable<Void> {
    private final Runnable task;
    // Set once scheduling returns, before the handle is returned: whoever cancels got it from
    // there.
    private ScheduledFuture<?> future;

    Cancel(Runnable task) {
      this.task = task;
    }

    @Override
    public Void call() {
      task.run();
      return null;
    }

    @Override
    public boolean cancel() {
      return future.cancel(false);
    }
  }
}
