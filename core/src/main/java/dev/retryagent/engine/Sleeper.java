package dev.retryagent.engine;

import dev.retryagent.internal.Waits;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

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

  /**
   * Waits {@code nanos}, or less: until {@code endsEarly} answers true. By default the whole wait,
   * {@link #sleep(long)}: a test's sleeper, which does not really sleep, has nothing to cut short.
   *
   * @throws InterruptedException as {@link #sleep(long)}
   */
  default void sleep(long nanos, BooleanSupplier endsEarly) throws InterruptedException {
    sleep(nanos);
  }

  /**
   * {@link TimeUnit#sleep}: interruptible. A wait that may end early looks at its signal at least
   * every 50 ms.
   */
  Sleeper SYSTEM = Waits.systemSleeper();
}
