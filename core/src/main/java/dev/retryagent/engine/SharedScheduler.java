package dev.retryagent.engine;

import dev.retryagent.internal.AgentThreads;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.RunnableScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * The process-wide {@link Scheduler} ({@link Scheduler#shared()}): at most {@value #THREADS} daemon
 * threads named {@code retry-agent-async-N}, whatever the number of waiting retries (issue 13:
 * 10,000 waiting calls once grew an unbounded pool to 55 threads), each both waiting for the next
 * due task and running it. Two, not one: starting an attempt may resolve a host name (java.net.http
 * resolves in {@code sendAsync}), and one slow resolution must not hold every other due retry. Idle
 * threads end after 30 s; a pending task keeps one. The agent runs its other timed work here too
 * (the exporters' start, the reload watcher's looks at its file), so it has no thread of its own
 * for them. Thread-safe.
 *
 * <p>{@link #schedule} returns only for a task that will run (unless cancelled), and throws only
 * for one that never will: a {@code ScheduledThreadPoolExecutor} whose worker cannot start ("unable
 * to create native thread", an {@code OutOfMemoryError}) throws after it queued the task, which
 * then ran all the same once a worker came. Its callers took the throw as a refusal and went on
 * without the task (ran it here instead, ended the call, took another thread), so the task ran
 * twice, or late into a later wait of the same call (a retry's backoff skipped).
 */
final class SharedScheduler implements Scheduler {
  static final SharedScheduler INSTANCE = new SharedScheduler();

  /** Threads of the pool. */
  static final int THREADS = 2;

  private final Pool pool;

  // Package-private for tests, which need a fresh instance; everyone else uses INSTANCE.
  // Threads are made when the first tasks come: AgentThreads keeps them from inheriting the
  // caller's class loader.
  SharedScheduler() {
    this(AgentThreads.factory("retry-agent-async-"));
  }

  // Tests give a factory that fails as the JVM out of native threads does.
  SharedScheduler(ThreadFactory threads) {
    pool = new Pool(threads);
    pool.setRemoveOnCancelPolicy(true);
    pool.setKeepAliveTime(30, TimeUnit.SECONDS);
    pool.allowCoreThreadTimeOut(true);
  }

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    Cancel cancel = new Cancel(task);
    try {
      pool.schedule(cancel, delayNanos, TimeUnit.NANOSECONDS);
    } catch (RuntimeException | Error failed) {
      // Queued (decorateTask told its future before), the task runs on a worker whose thread runs
      // (not one another schedule is failing to start): the last one never ends while a task
      // waits, unless it was ending at this very moment and its replacement cannot start either
      // (the plain pool's own way, which strands its queued tasks until the next schedule). With
      // none, it would wait for the next schedule's
      // worker, maybe for good: taken back, it never runs, and the caller hears a refusal. Not
      // queued (the queue could not grow), it never runs either. A worker took it meanwhile: it
      // runs, or ran: withdrawing it fails (Cancel.cancel), where the pool's own cancel(false)
      // succeeds on a task under way, and a task that ran was reported refused (run twice by a
      // caller that went on without it). (The queue's contains is a look at the task's own index,
      // not a search.)
      RunnableScheduledFuture<?> f = cancel.future;
      if ((f != null && pool.getQueue().contains(f) && pool.hasRunningWorker())
          || !cancel.cancel()) {
        return cancel;
      }
      throw new RejectedExecutionException("retry-agent: no thread for the task", failed);
    }
    return cancel;
  }

  /**
   * The pool, which tells each task its future before it may be queued, and its own thread factory
   * (the given one's threads, kept to see which run).
   */
  private static final class Pool extends ScheduledThreadPoolExecutor implements ThreadFactory {
    private final ThreadFactory threads;
    // At most THREADS running, and those whose start failed or is under way; ended ones go.
    private final Set<Thread> made = ConcurrentHashMap.newKeySet();

    Pool(ThreadFactory threads) {
      super(THREADS, threads);
      this.threads = threads;
      setThreadFactory(this);
    }

    @Override
    public Thread newThread(Runnable worker) {
      forgetEnded(false);
      Thread t = threads.newThread(worker);
      if (t != null) {
        made.add(t);
      }
      return t;
    }

    /**
     * True when a worker thread runs. Not getPoolSize(): it counts a worker from before its
     * thread's start, so another schedule's worker, whose start is failing at that moment, counted
     * as one there, and a task it left queued waited with no worker at all.
     */
    boolean hasRunningWorker() {
      forgetEnded(true);
      for (Thread t : made) {
        if (t.isAlive()) {
          return true;
        }
      }
      return false;
    }

    // unstarted: a thread not running yet goes too (its start failed, or it is under way: then it
    // is not counted, and the task it would run is refused, which is safe).
    private void forgetEnded(boolean unstarted) {
      for (Thread t : made) {
        Thread.State state = t.getState();
        if (state == Thread.State.TERMINATED || (unstarted && state == Thread.State.NEW)) {
          made.remove(t);
        }
      }
    }

    @Override
    protected <V> RunnableScheduledFuture<V> decorateTask(
        Callable<V> callable, RunnableScheduledFuture<V> task) {
      if (callable instanceof Cancel) {
        ((Cancel) callable).future = task;
      }
      return task;
    }
  }

  /**
   * The task as the pool runs it and the handle that cancels it: one small object per waiting
   * retry, besides the pool's own task. A {@link Callable}, because the pool wraps a {@link
   * Runnable} in an adapter of its own: one object more per waiting retry (issue 13: 10,000 calls
   * may wait at once). A failure of the task is kept in the pool's task, as it is for a Runnable.
   */
  private static final class Cancel implements Cancellable, Callable<Void> {
    private static final AtomicIntegerFieldUpdater<Cancel> STATE =
        AtomicIntegerFieldUpdater.newUpdater(Cancel.class, "state");
    private static final int WAITING = 0;
    private static final int RUN = 1;
    private static final int WITHDRAWN = 2;

    private final Runnable task;
    // Set by the pool (decorateTask) before the task is queued, on the scheduling thread: whoever
    // cancels got the handle from there, and the worker took it from the pool's queue.
    private RunnableScheduledFuture<?> future;
    // Whether the task runs or never will, decided once. Not the pool's future: its cancel(false)
    // succeeds on a task under way (its state changes only once the task returned), and a worker
    // past its own check runs the task all the same; "true when it will not run" was then false,
    // and a caller that took the task for withdrawn went on without it while it ran.
    private volatile int state;

    Cancel(Runnable task) {
      this.task = task;
    }

    @Override
    public Void call() {
      if (STATE.compareAndSet(this, WAITING, RUN)) {
        // This thread runs every call's due work: a step of one call must not block it on the
        // network (a fleet limit's Redis), the other due retries would wait with it.
        boolean marked = SharedThreads.enter();
        try {
          task.run();
        } finally {
          SharedThreads.exit(marked);
        }
      }
      return null;
    }

    @Override
    public boolean cancel() {
      if (!STATE.compareAndSet(this, WAITING, WITHDRAWN)) {
        return false; // it runs, or ran, or was withdrawn before
      }
      RunnableScheduledFuture<?> f = future;
      if (f != null) {
        f.cancel(false); // out of the pool's queue (remove on cancel), no worker kept for it
      }
      return true;
    }
  }
}
