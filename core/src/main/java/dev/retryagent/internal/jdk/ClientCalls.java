package dev.retryagent.internal.jdk;

import dev.retryagent.engine.RetryCall;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The calls of one {@code java.net.http} client that are in the retry engine's hands, and the
 * application's shutdown of that client (Java 21+: {@code shutdown}, {@code shutdownNow}, {@code
 * close}).
 *
 * <p>Why: the JDK's {@code shutdown()} lets every request already sent run to completion and
 * refuses new ones; {@code close()} also waits for them. A call waiting to retry has no request at
 * the JDK at that moment, so the JDK would terminate under it: {@code close()} returned early, and
 * the retry, refused, failed the call with {@code IOException: closed} where without the agent the
 * application had its response. So while any call of the client is in progress here, the
 * application's shutdown is deferred ({@link #deferShutdown}): the client refuses new calls as the
 * JDK refuses them after a shutdown ({@link #enter} answers false), the calls in progress go on,
 * retries included, and the last of them to end ({@link #exit} answers true) runs the real
 * shutdown. Until then the JDK's {@code isTerminated()} says false and its {@code awaitTermination}
 * waits, as they do for a request in progress.
 *
 * <p>{@code shutdownNow()} is not deferred: the JDK aborts what it is sending at once, and after it
 * no call of this client retries ({@link #shutDownNow}); a call waiting for its retry ends its wait
 * then ({@link #waitStarts}), and fails as the JDK fails the calls it aborts, instead of waiting
 * out its delay first.
 *
 * <p>Thread-safe and lock-free on a call's path: one compare-and-set as it starts, one as it ends.
 * A lock is taken only by {@link #awaitCalls} and by the exit that wakes it.
 */
public final class ClientCalls {
  /** The application asked for a shutdown ({@code shutdown}, {@code close} or the next). */
  private static final long SHUT = 1L << 62;

  /** The application asked for {@code shutdownNow}. */
  private static final long NOW = 1L << 61;

  /** The low bits: how many calls are in progress. */
  private static final long COUNT = NOW - 1;

  private final AtomicLong state = new AtomicLong();

  /** The waits of the calls in progress, for {@code shutdownNow()} to end. */
  private final Set<RetryCall.Wait> waits = ConcurrentHashMap.newKeySet();

  /**
   * A call starts: true, and it counts as in progress until {@link #exit}; false once the
   * application shut the client down, and the call must be refused as the JDK refuses it.
   */
  public boolean enter() {
    while (true) {
      long s = state.get();
      if ((s & SHUT) != 0) {
        return false;
      }
      if (state.compareAndSet(s, s + 1)) {
        return true;
      }
    }
  }

  /**
   * A call {@link #enter}ed has ended: true when it was the last and a shutdown is pending, and the
   * caller must now run the client's real {@code shutdown()}.
   */
  public boolean exit() {
    long s = state.decrementAndGet();
    if ((s & COUNT) != 0 || (s & SHUT) == 0) {
      return false;
    }
    synchronized (this) {
      notifyAll(); // a close() waiting in awaitCalls
    }
    return true;
  }

  /**
   * The application called {@code shutdown()} (or {@code close()}): from now on calls are refused.
   *
   * @return true when calls are in progress and the real shutdown is deferred until the last ends
   *     ({@link #exit}); false when none is, and the caller runs the real shutdown now
   */
  public boolean deferShutdown() {
    long s = state.getAndUpdate(v -> v | SHUT);
    return (s & COUNT) != 0;
  }

  /**
   * The application called {@code shutdownNow()}: calls are refused, those in progress retry no
   * more, and a {@code close()} waits for them no longer ({@link #awaitCalls}): the JDK's returns
   * once its requests were aborted. The caller runs the real {@code shutdownNow()} at once.
   */
  public void shutDownNowCalled() {
    state.getAndUpdate(v -> v | SHUT | NOW);
    synchronized (this) {
      notifyAll();
    }
    // After the flag: a wait kept after this loop looks at the flag itself (AsyncRetryLoop).
    for (RetryCall.Wait wait : waits) {
      try {
        wait.endNow();
      } catch (RuntimeException e) {
        // That call's wait runs its course; the application's shutdownNow() goes on.
      }
    }
  }

  /** A call in progress starts to wait: kept until {@link #waitEnds}, ended by shutdownNow. */
  public boolean waitStarts(RetryCall.Wait wait) {
    waits.add(wait);
    return true;
  }

  /** A wait {@link #waitStarts kept} is over. */
  public void waitEnds(RetryCall.Wait wait) {
    waits.remove(wait);
  }

  /** True once the application called {@code shutdownNow()}: no call of this client retries. */
  public boolean shutDownNow() {
    return (state.get() & NOW) != 0;
  }

  /** True once the application shut the client down: new calls are refused. */
  public boolean refuses() {
    return (state.get() & SHUT) != 0;
  }

  /** How many calls are in progress. */
  public long inProgress() {
    return state.get() & COUNT;
  }

  /**
   * For {@code close()}, after {@link #deferShutdown}: waits until no call is in progress, as the
   * JDK's {@code close()} waits for its requests, or until {@code shutdownNow()} was called. As
   * there, an interrupt runs {@code shutdownNow} (which ends the wait; a call waiting for its retry
   * then ends when its delay is over, its retry refused), and the interrupt flag is set again.
   */
  public void awaitCalls(Runnable shutdownNow) {
    boolean interrupted = false;
    while (true) {
      try {
        // A managed block: close() called on a ForkJoinPool thread (a CompletableFuture's async
        // stage) must not hold the pool's only worker, which the JDK completes attempts on (its
        // futures complete on the common pool), while the call it waits for needs one.
        ForkJoinPool.managedBlock(noCalls);
        break;
      } catch (InterruptedException e) {
        if (!interrupted) {
          interrupted = true;
          shutdownNow.run(); // outside the lock: it ends attempts, whose calls exit here
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** Blocks until no call is in progress. */
  private final ForkJoinPool.ManagedBlocker noCalls =
      new ForkJoinPool.ManagedBlocker() {
        @Override
        public boolean block() throws InterruptedException {
          synchronized (ClientCalls.this) {
            while (!isReleasable()) {
              ClientCalls.this.wait();
            }
          }
          return true;
        }

        @Override
        public boolean isReleasable() {
          long s = state.get();
          return (s & COUNT) == 0 || (s & NOW) != 0;
        }
      };
}
