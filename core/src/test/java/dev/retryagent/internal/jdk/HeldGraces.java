package dev.retryagent.internal.jdk;

import dev.retryagent.engine.Scheduler;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Holds the graces of java.net.http's retried bodies ({@link DiscardedBody}) started while it is
 * open, for tests in other packages to end by hand, on a thread they choose, with no real wait
 * ({@link DiscardedBody#schedulerForTests}). A grace held is never run unless ended here. One open
 * at a time (tests of a class run one at a time); close it after the call.
 */
public final class HeldGraces implements Scheduler, AutoCloseable {
  private final List<Runnable> held = new CopyOnWriteArrayList<>();

  private HeldGraces() {}

  /** Holds the graces started from now until {@link #close}. */
  public static HeldGraces hold() {
    HeldGraces graces = new HeldGraces();
    DiscardedBody.schedulerForTests = graces;
    return graces;
  }

  /** Graces started and held since {@link #hold}. */
  public int held() {
    return held.size();
  }

  /** Ends every grace held so far, on this thread, as the grace's own timer would. */
  public void endAll() {
    for (Runnable grace : held) {
      held.remove(grace);
      grace.run();
    }
  }

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    held.add(task);
    return () -> held.remove(task);
  }

  /** Graces are scheduled on the shared scheduler again. */
  @Override
  public void close() {
    DiscardedBody.schedulerForTests = null;
  }
}
