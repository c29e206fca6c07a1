package dev.retryagent.internal;

import dev.retryagent.engine.Scheduler;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts the retried bodies' graces ({@link Discards.Grace}) started while it is open, for tests in
 * other packages: each is scheduled here, counted, and handed on to the shared scheduler, where it
 * runs in real time as without the count ({@link Discards.Grace#schedulerForTests}). One open at a
 * time (tests of a class run one at a time); close it after the call.
 */
public final class Graces implements Scheduler, AutoCloseable {
  private final AtomicLong started = new AtomicLong();

  private Graces() {}

  /** Counts the graces started from now until {@link #close}. */
  public static Graces count() {
    Graces graces = new Graces();
    Discards.Grace.schedulerForTests = graces;
    return graces;
  }

  /** Graces started since {@link #count}. */
  public long started() {
    return started.get();
  }

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    if (task instanceof Discards.Grace) {
      started.incrementAndGet();
    }
    return Scheduler.shared().schedule(task, delayNanos);
  }

  /** Graces are scheduled on the shared scheduler alone again. */
  @Override
  public void close() {
    Discards.Grace.schedulerForTests = null;
  }
}
