package dev.retryagent.engine;

import dev.retryagent.internal.AgentThreads;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The process-wide {@link Scheduler} ({@link Scheduler#shared()}): at most {@value #THREADS} daemon
 * threads named {@code retry-agent-async-N}, whatever the number of waiting retries (issue 13:
 * 10,000 waiting calls once grew an unbounded pool to 55 threads), each both waiting for the next
 * due task and running it. Two, not one: starting an attempt may resolve a host name (java.net.http
 * resolves in {@code sendAsync}), and one slow resolution must not hold every other due retry. Idle
 * threads end after 30 s; a pending task keeps one. Thread-safe.
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
    return new Cancel(pool.schedule(task, delayNanos, TimeUnit.NANOSECONDS));
  }

  /** A named class: one small object per waiting retry, besides the pool's own task. */
  private static final class Cancel implements Cancellable {
    private final ScheduledFuture<?> future;

    Cancel(ScheduledFuture<?> future) {
      this.future = future;
    }

    @Override
    public boolean cancel() {
      return future.cancel(false);
    }
  }
}
