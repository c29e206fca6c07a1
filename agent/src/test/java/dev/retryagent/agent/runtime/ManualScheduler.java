package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.Scheduler;
import java.util.ArrayList;
import java.util.List;

/** Records what is scheduled; runs the soonest only when the test says so. */
final class ManualScheduler implements Scheduler {
  private final List<Task> queue = new ArrayList<>();
  int cancelled;

  private final class Task implements Cancellable {
    final Runnable body;
    final long delayNanos;

    Task(Runnable body, long delayNanos) {
      this.body = body;
      this.delayNanos = delayNanos;
    }

    @Override
    public boolean cancel() {
      cancelled++;
      return queue.remove(this);
    }
  }

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    Task t = new Task(task, delayNanos);
    queue.add(t);
    return t;
  }

  /** The delays of the tasks not yet run, in the order they were scheduled. */
  List<Long> pending() {
    List<Long> delays = new ArrayList<>();
    for (Task t : queue) {
      delays.add(t.delayNanos);
    }
    return delays;
  }

  void runNext() {
    assertThat(queue).as("a task to run").isNotEmpty();
    Task next = queue.get(0);
    for (Task t : queue) {
      if (t.delayNanos < next.delayNanos) {
        next = t;
      }
    }
    queue.remove(next);
    next.body.run();
  }
}
