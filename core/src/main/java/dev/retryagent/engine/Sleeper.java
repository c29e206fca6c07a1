package dev.retryagent.engine;

import java.util.concurrent.TimeUnit;

/**
 * Blocks the calling thread during a synchronous wait; injected so tests never really sleep.
 * Implementations are thread-safe and interruptible; the default is {@link #SYSTEM}.
 */
public interface Sleeper {
  /**
   * Waits {@code nanos}.
   *
   * @throws InterruptedException when the thread is interrupted; the caller stops retrying
   */
  void sleep(long nanos) throws InterruptedException;

  /** {@link TimeUnit#sleep}: interruptible. */
  Sleeper SYSTEM = nanos -> TimeUnit.NANOSECONDS.sleep(nanos);
}
