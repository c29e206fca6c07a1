package dev.retryagent.engine;

import dev.retryagent.internal.AgentThreads;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Runs asynchronous retries later, without a thread waiting per pending retry: one timer thread
 * fires due tasks and hands them to a small pool that starts the next attempt (starting one may
 * resolve DNS, which must not stall the timer). Injected so tests drive time by hand.
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

  /** Daemon threads named {@code retry-agent-timer} and {@code retry-agent-async-N}. */
  final class SharedScheduler implements Scheduler {
    static final SharedScheduler INSTANCE = new SharedScheduler();

    private final ScheduledThreadPoolExecutor timer;
    private final Executor workers;

    // Package-private for tests, which need a fresh instance; everyone else uses INSTANCE.
    // Threads are made when the first task comes (the timer comes from the first caller, the
    // workers from the timer): AgentThreads keeps them from inheriting the caller's class loader.
    SharedScheduler() {
      timer =
          new ScheduledThreadPoolExecutor(1, r -> AgentThreads.newThread(r, "retry-agent-timer"));
      timer.setRemoveOnCancelPolicy(true);
      workers =
          new ThreadPoolExecutor(
              0,
              Integer.MAX_VALUE,
              30,
              TimeUnit.SECONDS,
              new SynchronousQueue<>(),
              AgentThreads.factory("retry-agent-async-"));
    }

    @Override
    public Cancellable schedule(Runnable task, long delayNanos) {
      ScheduledFuture<?> f =
          timer.schedule(() -> workers.execute(task), delayNanos, TimeUnit.NANOSECONDS);
      return () -> f.cancel(false);
    }
  }
}
