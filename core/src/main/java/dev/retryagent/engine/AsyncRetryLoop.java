package dev.retryagent.engine;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Drives a {@link RetryCall} asynchronously: waits are scheduled on the engine's {@link Scheduler},
 * so no thread is held while a retry is pending. The returned future completes with the final
 * result; cancelling it cancels the attempt in flight and the pending retry.
 */
public final class AsyncRetryLoop<T> {
  /** One attempt, started without blocking. */
  @FunctionalInterface
  public interface Attempt<T> {
    /**
     * @param attempt 1-based attempt number
     * @param timeoutNanos the attempt's timeout, or -1 to keep the client's own
     */
    CompletableFuture<T> start(int attempt, long timeoutNanos);
  }

  private final RetryEngine engine;
  private final RetryCall call;
  private final Attempt<T> attempt;
  private final ResponseAccess<T> access;
  private final Result result = new Result();

  // Guarded by result: what cancel() must reach.
  private CompletableFuture<T> inFlight;
  private Scheduler.Cancellable pending;
  private boolean pendingIsRetry;

  // True while the first attempt starts on the caller's thread.
  private boolean onCallerThread;

  private AsyncRetryLoop(
      RetryEngine engine, RetryCall call, Attempt<T> attempt, ResponseAccess<T> access) {
    this.engine = engine;
    this.call = call;
    this.attempt = attempt;
    this.access = access;
  }

  /**
   * Starts the first attempt on the calling thread (as the client would) and returns the future of
   * the call.
   */
  public static <T> CompletableFuture<T> execute(
      RetryEngine engine, RetryCall call, Attempt<T> attempt, ResponseAccess<T> access) {
    AsyncRetryLoop<T> loop = new AsyncRetryLoop<>(engine, call, attempt, access);
    loop.onCallerThread = true;
    try {
      loop.next();
    } finally {
      loop.onCallerThread = false;
    }
    return loop.result;
  }

  /** Steps 1 and 2 (rate limit, breaker), then the attempt. */
  private void next() {
    long wait;
    try {
      wait = call.reservePermit();
    } catch (RateLimitedException e) {
      fail(e);
      return;
    }
    if (wait > 0) {
      schedule(this::startAttempt, wait, false);
    } else {
      startAttempt();
    }
  }

  private void startAttempt() {
    if (result.isDone()) {
      // The caller stopped waiting (orTimeout, completeExceptionally) without cancel().
      call.onAbandoned();
      return;
    }
    CompletableFuture<T> f;
    try {
      call.acquireBreaker();
      int n = call.startAttempt();
      f = attempt.start(n, call.attemptTimeoutNanos());
    } catch (Throwable e) {
      // The client refused the request outright (say, a bad URI): on the caller's thread, throw
      // as the client itself would have.
      if (onCallerThread && e instanceof RuntimeException && !call.isFinished()) {
        call.onAbandoned();
        throw (RuntimeException) e;
      }
      // A breaker rejection, or a failure to start a retry.
      if (!call.isFinished()) {
        Decision d = call.onFailure(e);
        if (d.retry()) {
          schedule(this::next, d.delayNanos(), true);
          return;
        }
      }
      fail(e);
      return;
    }
    synchronized (result) {
      inFlight = f;
    }
    f.whenComplete(this::attemptDone);
    if (result.isCancelled()) {
      f.cancel(true);
    }
  }

  private void attemptDone(T response, Throwable error) {
    synchronized (result) {
      inFlight = null;
    }
    if (result.isDone()) {
      if (response != null) {
        access.discard(response);
      }
      // Cancelled, or ended by the caller without cancel() (orTimeout): either way the attempt's
      // breaker permit must go back, or a half-open breaker waits for this trial forever.
      call.onAbandoned();
      return;
    }
    Decision d;
    if (error != null) {
      Throwable cause = unwrap(error);
      d = call.onFailure(cause);
      if (!d.retry()) {
        fail(d.error() != null ? d.error() : cause);
        return;
      }
    } else {
      try {
        d = call.onResponse(access.status(response), access.header(response, "Retry-After"));
      } catch (RuntimeException e) {
        call.onAbandoned();
        if (!result.complete(response)) {
          access.discard(response);
        }
        return;
      }
      if (!d.retry()) {
        if (d.error() != null) {
          access.discard(response);
          fail(d.error());
        } else if (!result.complete(response)) {
          // Cancelled since the check above: the response can no longer reach the caller.
          access.discard(response);
        }
        return;
      }
      access.discard(response);
    }
    schedule(this::next, d.delayNanos(), true);
  }

  private void schedule(Runnable task, long delayNanos, boolean isRetry) {
    synchronized (result) {
      if (result.isDone()) {
        return;
      }
      if (isRetry) {
        engine.asyncRetryScheduled();
      }
      pendingIsRetry = isRetry;
      pending =
          engine
              .scheduler()
              .schedule(
                  () -> {
                    synchronized (result) {
                      if (pending == null) {
                        return; // cancelled meanwhile
                      }
                      pending = null;
                      if (pendingIsRetry) {
                        engine.asyncRetryDone();
                      }
                    }
                    task.run();
                  },
                  delayNanos);
    }
  }

  /**
   * Completes with a failure. Dependent stages of the caller then run on this thread: a client
   * thread, or one of the scheduler's workers (never its timer thread, so a slow callback cannot
   * delay other calls' retries).
   */
  private void fail(Throwable error) {
    result.completeExceptionally(error);
  }

  private static Throwable unwrap(Throwable t) {
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /** The caller's future: cancelling it reaches the attempt in flight and the pending retry. */
  private final class Result extends CompletableFuture<T> {
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      if (!cancelled) {
        return false;
      }
      CompletableFuture<T> attemptToCancel;
      synchronized (this) {
        attemptToCancel = inFlight;
        inFlight = null;
        if (pending != null) {
          pending.cancel();
          pending = null;
          if (pendingIsRetry) {
            engine.asyncRetryDone();
          }
        }
      }
      if (attemptToCancel != null) {
        attemptToCancel.cancel(mayInterruptIfRunning);
      }
      call.onAbandoned();
      return true;
    }

    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
      return new CompletableFuture<>();
    }

    @Override
    public String toString() {
      return "retry-agent call "
          + call.request().method()
          + " "
          + call.request().target()
          + call.request().path()
          + " "
          + super.toString();
    }
  }
}
