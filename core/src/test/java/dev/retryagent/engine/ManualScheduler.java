package dev.retryagent.engine;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A scheduler that runs nothing by itself: tasks wait until the test moves the fake clock past
 * their due time ({@link #advance}) or asks to run everything ({@link #runUntilIdle}). Tasks run on
 * the test's thread, never inside {@link #schedule}.
 */
final class ManualScheduler implements Scheduler {
  private final FakeClock clock;
  private final List<Task> tasks = new ArrayList<>();
  private final List<Long> delays = new ArrayList<>();
  private long seq;
  private int ran;
  private boolean cancelWorks = true;
  private RuntimeException refusal;
  private long lateNanos;

  ManualScheduler(FakeClock clock) {
    this.clock = clock;
  }

  /** Makes {@link Cancellable#cancel()} a no-op, as when the timer already fired. */
  ManualScheduler cancelDoesNothing() {
    cancelWorks = false;
    return this;
  }

  private final class Task implements Cancellable {
    final long due;
    final long order;
    final Runnable body;

    Task(long due, long order, Runnable body) {
      this.due = due;
      this.order = order;
      this.body = body;
    }

    @Override
    public boolean cancel() {
      synchronized (ManualScheduler.this) {
        return cancelWorks && tasks.remove(this);
      }
    }
  }

  /**
   * Makes {@link #schedule} throw {@code e} from now on (null: take tasks again), as a pool that
   * cannot start a thread does.
   */
  synchronized ManualScheduler refuse(RuntimeException e) {
    refusal = e;
    return this;
  }

  @Override
  public synchronized Cancellable schedule(Runnable task, long delayNanos) {
    if (refusal != null) {
      throw refusal;
    }
    if (delayNanos < 0) {
      throw new AssertionError("negative delay " + delayNanos);
    }
    delays.add(delayNanos);
    Task t = new Task(clock.nanoTime() + delayNanos, seq++, task);
    tasks.add(t);
    return t;
  }

  /** Each task from now on runs {@code nanos} after its due time (a paused JVM, a late timer). */
  synchronized ManualScheduler late(long nanos) {
    lateNanos = nanos;
    return this;
  }

  private synchronized long lateNanos() {
    return lateNanos;
  }

  /** Tasks waiting to run. */
  synchronized int pending() {
    return tasks.size();
  }

  /** Every delay asked for, in order. */
  synchronized List<Long> delays() {
    return new ArrayList<>(delays);
  }

  /** Tasks run so far. */
  synchronized int ran() {
    return ran;
  }

  /** Moves the clock forward by {@code nanos}, running each task when its time comes. */
  void advance(long nanos) {
    long target = clock.nanoTime() + nanos;
    while (true) {
      Task next = nextDue(target);
      if (next == null) {
        break;
      }
      clock.advanceTo(next.due + lateNanos());
      run(next);
    }
    clock.advanceTo(target);
  }

  /** Runs tasks in due order, moving the clock to each, until none is left. */
  void runUntilIdle() {
    for (int i = 0; i < 10_000; i++) {
      Task next = nextDue(Long.MAX_VALUE);
      if (next == null) {
        return;
      }
      clock.advanceTo(next.due + lateNanos());
      run(next);
    }
    throw new AssertionError("scheduler never went idle");
  }

  private synchronized Task nextDue(long until) {
    Task best =
        tasks.stream()
            .filter(t -> t.due - until <= 0)
            .min(Comparator.<Task>comparingLong(t -> t.due).thenComparingLong(t -> t.order))
            .orElse(null);
    if (best != null) {
      tasks.remove(best);
    }
    return best;
  }

  private void run(Task t) {
    synchronized (this) {
      ran++;
    }
    t.body.run();
  }
}
