package dev.retryagent.engine;

import dev.retryagent.internal.AgentThreads;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The process-wide {@link Scheduler} ({@link Scheduler#shared()}): one daemon timer thread, {@code
 * retry-agent-timer}, hands due tasks to daemon workers, {@code retry-agent-async-N}, created as
 * needed and ended after 30 s idle. Thread-safe.
 */
final class SharedScheduler implements Scheduler {
  static final SharedScheduler INSTANCE = new SharedScheduler();

  private final ScheduledThreadPoolExecutor timer;
  private final Executor workers;

  // Package-private for tests, which need a fresh instance; everyone else uses INSTANCE.
  // Threads are made when the first task comes (the timer comes from the first caller, the
  // workers from the timer): AgentThreads keeps them from inheriting the caller's class loader.
  SharedScheduler() {
    timer = new ScheduledThreadPoolExecutor(1, r -> AgentThreads.newThread(r, "retry-agent-timer"));
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
