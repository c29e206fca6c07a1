package dev.retryagent.engine;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;

/**
 * SPI: drives a {@link RetryCall} asynchronously: waits are scheduled on the engine's {@link
 * Scheduler}, so no thread is held while a retry is pending. The returned future completes with the
 * final result; cancelling it cancels the attempt in flight and the pending retry.
 *
 * <p>The future fails as the final attempt's future failed, with the very throwable the client
 * delivered (a {@code java.net.http} future fails with a {@link CompletionException} around the
 * cause, as every dependent stage does); a failure the engine makes itself (the breaker open, no
 * rate-limit permit) comes the same way, in a {@link CompletionException}.
 */
public final class AsyncRetryLoop<T> {
  /** One attempt, started without blocking. */
  @FunctionalInterface
  public interface Attempt<T> {
    /**
     * @param attempt 1-based attempt number
     * @param timeoutNanos the policy's bound on the attempt ({@link
     *     RetryCall#attemptTimeoutNanos()}), or -1 for none; each of the client's own per-attempt
     *     timeouts becomes {@link CallBounds#shorterTimeout}{@code (timeoutNanos, own)}
     */
    CompletableFuture<T> start(int attempt, long timeoutNanos);
  }

  /**
   * What the caller's future does beyond completing, to match the client's own future. Immutable.
   */
  public static final class Style {
    /** A plain {@link CompletableFuture}. */
    public static final Style PLAIN = new Style(false, null);

    final boolean dependentsCancel;
    final Executor deliverOn;

    private Style(boolean dependentsCancel, Executor deliverOn) {
      this.dependentsCancel = dependentsCancel;
      this.deliverOn = deliverOn;
    }

    /**
     * @param dependentsCancel cancelling any stage that depends on the future ({@code
     *     thenApply(..).cancel(true)}) cancels the call, as {@code java.net.http} does since 16
     * @param deliverOn where the future completes when it would otherwise complete on one of the
     *     engine's scheduler threads (a failure the engine made after a wait, an attempt that
     *     completed before the loop looked at it): where the client delivers its results; null to
     *     complete there
     */
    public static Style of(boolean dependentsCancel, Executor deliverOn) {
      return new Style(dependentsCancel, deliverOn);
    }
  }

  private final RetryEngine engine;
  private final RetryCall call;
  private final Attempt<T> attempt;
  private final ResponseAccess<T> access;
  private final Style style;
  private final Result result = new Result();

  // Guarded by result: what cancel() must reach.
  private CompletableFuture<T> inFlight;
  private Scheduler.Cancellable pending;
  private boolean pendingIsRetry;

  // True while the first attempt starts on the caller's thread.
  private boolean onCallerThread;
  // The scheduler thread running one of this loop's tasks, while it does.
  private volatile Thread schedulerThread;

  private AsyncRetryLoop(
      RetryEngine engine,
      RetryCall call,
      Attempt<T> attempt,
      ResponseAccess<T> access,
      Style style) {
    this.engine = engine;
    this.call = call;
    this.attempt = attempt;
    this.access = access;
    this.style = style;
  }

  /**
   * {@link #execute(RetryEngine, RetryCall, Attempt, ResponseAccess, Style)}, {@link Style#PLAIN}.
   */
  public static <T> CompletableFuture<T> execute(
      RetryEngine engine, RetryCall call, Attempt<T> attempt, ResponseAccess<T> access) {
    return execute(engine, call, attempt, access, Style.PLAIN);
  }

  /**
   * Starts the first attempt on the calling thread (as the client would) and returns the future of
   * the call, shaped by {@code style}.
   */
  public static <T> CompletableFuture<T> execute(
      RetryEngine engine,
      RetryCall call,
      Attempt<T> attempt,
      ResponseAccess<T> access,
      Style style) {
    AsyncRetryLoop<T> loop = new AsyncRetryLoop<>(engine, call, attempt, access, style);
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
      fail(new CompletionException(e));
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
      fail(new CompletionException(e));
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
      d = call.onFailure(unwrap(error));
      if (!d.retry()) {
        // The client's failure as its future delivered it, or the engine's (the breaker's).
        fail(d.error() != null ? new CompletionException(d.error()) : error);
        return;
      }
    } else {
      try {
        d = call.onResponse(access.status(response), access.header(response, "Retry-After"));
      } catch (RuntimeException e) {
        call.onAbandoned();
        succeed(response);
        return;
      }
      if (!d.retry()) {
        if (d.error() != null) {
          access.discard(response);
          fail(new CompletionException(d.error()));
        } else {
          succeed(response);
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
                    schedulerThread = Thread.currentThread();
                    try {
                      task.run();
                    } finally {
                      schedulerThread = null;
                    }
                  },
                  delayNanos);
    }
  }

  /**
   * Completes with a failure. Dependent stages of the caller then run on this thread: a client
   * thread, or, unless the style delivers elsewhere, one of the scheduler's workers (never its
   * timer thread, so a slow callback cannot delay other calls' retries).
   */
  private void fail(Throwable error) {
    if (onSchedulerThread()) {
      style.deliverOn.execute(() -> result.completeExceptionally(error));
    } else {
      result.completeExceptionally(error);
    }
  }

  /** Completes with the final response, or discards it when the caller is gone. */
  private void succeed(T response) {
    if (onSchedulerThread()) {
      style.deliverOn.execute(
          () -> {
            if (!result.complete(response)) {
              access.discard(response);
            }
          });
    } else if (!result.complete(response)) {
      // Cancelled since the attempt completed: the response can no longer reach the caller.
      access.discard(response);
    }
  }

  private boolean onSchedulerThread() {
    return style.deliverOn != null && schedulerThread == Thread.currentThread();
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
      return style.dependentsCancel ? new Dependent<>() : new CompletableFuture<>();
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

  /**
   * A stage that depends on the caller's future, for a style whose dependents cancel the call:
   * {@code cancel(true)} cancels it, then the call, as {@code java.net.http}'s own futures do since
   * 16 (its {@code MultiExchange.cancel} does nothing for {@code cancel(false)}: nor does this),
   * and so do the stages that depend on it.
   */
  private final class Dependent<U> extends CompletableFuture<U> {
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      boolean wasDone = isDone();
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      if (!wasDone && mayInterruptIfRunning) {
        result.cancel(true);
      }
      return cancelled;
    }

    @Override
    public <V> CompletableFuture<V> newIncompleteFuture() {
      return new Dependent<>();
    }
  }
}
