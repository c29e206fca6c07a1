package dev.retryagent.agent.runtime;

import dev.retryagent.engine.Scheduler;
import dev.retryagent.internal.AgentThreads;
import dev.retryagent.internal.observe.Sanitizer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The timer of the one task {@code premain} schedules (the exporters' and the reload watcher's
 * start, 10 s after start-up): a thread made for the task, {@value #THREAD_NAME}, that waits, runs
 * it and ends, or ends at once when the task is cancelled (the first call brings the start forward,
 * onto the shared scheduler).
 *
 * <p>Why not {@link Scheduler#shared()}: its pool (a {@code ScheduledThreadPoolExecutor}, ~30
 * classes) costs the main thread ~4 ms of CPU to make in {@code premain}, before {@code main}, for
 * a task that runs 10 s later; a plain thread costs a fraction of that (docs/BENCHMARKS.md, issue
 * 13, twelfth pass). The pool is made when the first call or this task needs it. The thread count
 * is as before: this thread in place of the pool's first, and gone before the pool has two.
 *
 * <p>Thread-safe. Each {@link #schedule} makes a thread: meant for a task or two, not for retries.
 */
final class StartUpTimer implements Scheduler {
  static final String THREAD_NAME = AgentThreads.PREFIX + "start";

  private StartUpTimer() {}

  /**
   * A new timer, typed as the interface here: a caller that returned {@code new StartUpTimer()} as
   * a {@link Scheduler} would make the JVM's verifier load both classes with the caller's
   * (premain's {@code AgentRuntime}, file or not).
   */
  static Scheduler create() {
    return new StartUpTimer();
  }

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    OneShot shot = new OneShot(task, System.nanoTime() + Math.max(0, delayNanos));
    Thread thread = AgentThreads.newThread(shot, THREAD_NAME);
    shot.thread = thread;
    thread.start();
    return shot;
  }

  /** One task on its own thread: waiting, then run or cancelled (each at most once). */
  static final class OneShot implements Runnable, Cancellable {
    private static final int WAITING = 0;
    private static final int RUN = 1;
    private static final int CANCELLED = 2;

    private final Runnable task;
    private final long dueNanos;
    private final AtomicInteger state = new AtomicInteger(WAITING);
    private volatile Thread thread;

    OneShot(Runnable task, long dueNanos) {
      this.task = task;
      this.dueNanos = dueNanos;
    }

    @Override
    public void run() {
      // parkNanos may return early (unpark, spuriously): the state and the clock decide.
      for (long left = dueNanos - System.nanoTime();
          left > 0 && state.get() == WAITING;
          left = dueNanos - System.nanoTime()) {
        LockSupport.parkNanos(this, left);
      }
      if (state.compareAndSet(WAITING, RUN)) {
        try {
          task.run();
        } catch (RuntimeException | LinkageError e) {
          AgentLog.error("the agent's start-up task failed: " + Sanitizer.exception(e, true, null));
        }
      }
    }

    /** The thread made for the task (tests wait for its end). */
    Thread thread() {
      return thread;
    }

    @Override
    public boolean cancel() {
      if (!state.compareAndSet(WAITING, CANCELLED)) {
        return false;
      }
      LockSupport.unpark(thread); // the thread ends now rather than at the due time
      return true;
    }
  }
}
