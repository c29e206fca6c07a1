package dev.retryagent.engine;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Runs asynchronous retries later, without a thread waiting per pending retry: a small pool of
 * threads waits for the next due task and runs it (starting the next attempt). Injected so tests
 * drive time by hand.
 */
public interface Scheduler {
  /** A task that may still be cancelled. */
  interface Cancellable {
    /** Cancels the task if it has not run; true when it will not run. */
    boolean cancel();
  }

  /** Runs {@code task} after {@code delayNanos} (0 = as soon as possible, never on the caller). */
  Cancellable schedule(Runnable task, long delayNanos);

  /** The process-wide scheduler: daemon threads, created on first use. */
  static Scheduler shared() {
    return SharedScheduler.INSTANCE;
  }

  /**
   * At most {@value #THREADS} daemon threads named {@code retry-agent-async-N}, whatever the number
   * of waiting retries (issue 13: 10,000 waiting calls once grew an unbounded pool to 55 threads),
   * each both waiting for the next due task and running it. Two, not one: starting an attempt may
   * resolve a host name (java.net.http resolves in {@code sendAsync}), and one slow resolution must
   * not hold every other due retry. Idle threads end after 30 s; a pending task keeps one.
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
      ScheduledFuture<?> f = pool.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
      return new Cancel(f);
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
}
