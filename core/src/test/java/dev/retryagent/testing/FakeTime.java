package dev.retryagent.testing;

import dev.retryagent.engine.Clock;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.engine.Sleeper;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Time for adapter tests: a clock that only moves when the engine waits, a sleeper and a scheduler
 * that record each wait and advance the clock instead of waiting. Network calls take real time,
 * which the clock ignores, so deadlines depend only on the waits the engine chose.
 */
public final class FakeTime implements Clock, Sleeper, Scheduler {
  private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
  private final long wallStart = 1_700_000_000_000L;
  private final List<Long> waits = Collections.synchronizedList(new ArrayList<>());
  private final ConcurrentLinkedQueue<Runnable> held = new ConcurrentLinkedQueue<>();
  private volatile boolean holding;
  private volatile long lateNanos;

  @Override
  public long nanoTime() {
    return nanos.get();
  }

  @Override
  public long wallMillis() {
    return wallStart + nanos.get() / 1_000_000;
  }

  @Override
  public void sleep(long n) throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    waits.add(n);
    nanos.addAndGet(n + lateNanos);
  }

  /**
   * Runs the task at once on a new thread, as if its delay had passed; or, after {@link
   * #holdTasks()}, keeps it until {@link #runHeldTasks()}.
   */
  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    RuntimeException r = refusal;
    if (r != null) {
      throw r;
    }
    waits.add(delayNanos);
    if (holding) {
      AtomicBoolean cancelled = new AtomicBoolean();
      held.add(
          () -> {
            if (!cancelled.get()) {
              nanos.addAndGet(delayNanos + lateNanos);
              task.run();
            }
          });
      return () -> !cancelled.getAndSet(true);
    }
    nanos.addAndGet(delayNanos + lateNanos);
    Thread t = new Thread(task, "fake-time-scheduler");
    t.setDaemon(true);
    t.start();
    return () -> false;
  }

  private volatile RuntimeException refusal;

  /**
   * From now on {@link #schedule} throws {@code e} (null: takes tasks again), as a pool that cannot
   * start a thread does.
   */
  public void refuse(RuntimeException e) {
    refusal = e;
  }

  /** From now on, scheduled tasks wait for {@link #runHeldTasks()}. */
  public void holdTasks() {
    holding = true;
  }

  /** Tasks scheduled and not yet run (cancelled ones included). */
  public int heldTasks() {
    return held.size();
  }

  /**
   * Runs, on the calling thread, the tasks held when called (cancelled ones do nothing). Not one
   * held later: a retry run here goes on in another thread and may hold its next wait before this
   * loop ends, and a test that looks for that next wait must find it held, not already run.
   */
  public void runHeldTasks() {
    List<Runnable> due = new ArrayList<>();
    for (Runnable r = held.poll(); r != null; r = held.poll()) {
      due.add(r);
    }
    for (Runnable r : due) {
      r.run();
    }
  }

  /**
   * From now on every wait (a sleep, a scheduled task) ends {@code n} late, as when the JVM is
   * paused or its timer thread held up during it.
   */
  public void late(long n) {
    lateNanos = n;
  }

  public void advance(long n) {
    nanos.addAndGet(n);
  }

  /**
   * A sleeper on this time that, at its first wait, runs {@code task} on a thread of its own (the
   * application's other caller, during a retry's wait) and waits for it: {@code outcome} gets its
   * value, or the exception it threw.
   */
  public Sleeper withOtherCallerAtFirstWait(
      java.util.concurrent.Callable<Object> task,
      java.util.concurrent.atomic.AtomicReference<Object> outcome) {
    AtomicBoolean ran = new AtomicBoolean();
    return n -> {
      if (ran.compareAndSet(false, true)) {
        java.util.concurrent.FutureTask<Object> call = new java.util.concurrent.FutureTask<>(task);
        new Thread(call, "other-caller").start();
        try {
          outcome.set(call.get());
        } catch (java.util.concurrent.ExecutionException e) {
          outcome.set(e.getCause());
        }
      }
      sleep(n);
    };
  }

  /** Every wait so far, in nanoseconds. */
  public List<Long> waits() {
    synchronized (waits) {
      return new ArrayList<>(waits);
    }
  }
}
