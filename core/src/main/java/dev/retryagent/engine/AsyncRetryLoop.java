package dev.retryagent.engine;

import dev.retryagent.internal.observe.Sanitizer;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
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
 *
 * <p>A loop is itself the task its waits schedule ({@link #run}): 10,000 calls may wait at once
 * (issue 13), and a task object per wait would be one more object per waiting call. No loop leaves
 * this class (callers get its future), so nobody else can run it; its adapter is given it as the
 * {@link RetryCall.Wait} of each wait ({@link #endNow}).
 */
public final class AsyncRetryLoop<T> implements Runnable, RetryCall.Wait {
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
    public static final Style PLAIN = new Style(false, null, false, false);

    final boolean dependentsCancel;
    final Executor deliverOn;
    final boolean cancelEndsAsAttempt;
    final boolean refusesObtrude;

    private Style(
        boolean dependentsCancel,
        Executor deliverOn,
        boolean cancelEndsAsAttempt,
        boolean refusesObtrude) {
      this.dependentsCancel = dependentsCancel;
      this.deliverOn = deliverOn;
      this.cancelEndsAsAttempt = cancelEndsAsAttempt;
      this.refusesObtrude = refusesObtrude;
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
      return new Style(dependentsCancel, deliverOn, false, false);
    }

    /**
     * {@link #of(boolean, Executor)}, and {@code cancelEndsAsAttempt}: {@code cancel(true)} with an
     * attempt in flight cancels that attempt first, and the future ends as the attempt's future
     * then ended if that came before the future's own cancellation, as {@code java.net.http}'s
     * future does since 16 ({@code MinimalFuture.cancel} cancels the exchange, whose failure may
     * complete the future, {@code CompletionException(CancellationException("Request cancelled"))},
     * before it is cancelled).
     */
    public static Style of(
        boolean dependentsCancel, Executor deliverOn, boolean cancelEndsAsAttempt) {
      return new Style(dependentsCancel, deliverOn, cancelEndsAsAttempt, false);
    }

    /**
     * This style, and {@code obtrudeValue} and {@code obtrudeException} throw {@link
     * UnsupportedOperationException} on the future and on every stage that depends on it, as on
     * {@code java.net.http}'s ({@code MinimalFuture}). Not only to match it: an obtruded value
     * would bypass the call's end (no {@code complete}), and a pending retry would go on.
     */
    public Style refusingObtrude() {
      return new Style(dependentsCancel, deliverOn, cancelEndsAsAttempt, true);
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
  // The final attempt's future once it succeeded, for a style whose dependents cancel the call
  // (Dependent.cancel): its exchange is what a dependent's cancel(true) still reaches then.
  // Plain: written before the caller's future completes, read by Dependent.cancel only once it
  // saw that future done (its completing CAS publishes the write): no volatile write per call.
  private CompletableFuture<T> succeeded;
  private boolean pendingIsRetry;
  private boolean contextEnded;
  // Set by a cancel(true) of a style whose cancel ends as the attempt (Style.cancelEndsAsAttempt):
  // the attempt then in flight gives its outcome, unjudged, to the caller.
  private boolean cancelling;
  // What the caller's cancel asked, for a give-back it cancelled before the loop held it.
  private volatile boolean cancelInterrupts;
  // The attempt in flight started after its caller gave up (startAttempt): its failure is the
  // client's refusal (SyncRetryLoop.refused). Written before the attempt starts, read as it ends.
  private volatile boolean startedGivenUp;

  // The caller's thread while the first attempt starts on it. A thread, not a flag: a wait's task
  // may run on a scheduler thread before the caller has left execute(), and must not be taken for
  // the caller (it threw the client's refusal out of the task; the future never completed).
  private volatile Thread callerThread;
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
    loop.callerThread = Thread.currentThread();
    try {
      loop.next(false);
    } catch (RuntimeException | Error e) {
      // The client refused the request: the caller gets its exception. (An Error too: a call
      // never ended would hold its client's shutdown for good, ClientCalls.)
      loop.endContext();
      throw e;
    } finally {
      loop.callerThread = null;
    }
    return loop.result;
  }

  /**
   * Steps 1 and 2 (rate limit, breaker), then the attempt. {@code permitWaited}: after the rate
   * limit's wait, which a 429 pause that began during it extends ({@link
   * RetryCall#reservePermitAfterWait}).
   */
  private void next(boolean permitWaited) {
    next(permitWaited, null);
  }

  /**
   * As {@link #next(boolean)}; {@code copy}: the response kept for the retry's wait ({@link
   * RetryCall#keepToGiveBack}), kept on through a rate-limit wait before the retry, which the
   * adapter may end the call at ({@link RetryCall#endsAfterPermitWait}).
   */
  private void next(boolean permitWaited, Object copy) {
    if (call.cancelledByCaller()) {
      if (call.attempt() > 0) {
        // The caller gave up during a wait after an attempt (Apache's Future.cancel, the JDK
        // client's shutdownNow): the call ends there, abandoned at the attempt it reached. Before,
        // the retry was started and counted (an attempt in the events, the metrics and the
        // listeners' calls) that never went out. The copy kept for the wait is no one's now.
        call.takeGiveBack();
        call.onAbandoned();
        startAttempt(true);
        return;
      }
      // As in SyncRetryLoop: the attempt fails at once as the client fails the call it gave up,
      // sending nothing; neither the rate limit nor the breaker has a say.
      startAttempt(false);
      return;
    }
    long wait;
    try {
      wait = permitWaited ? call.reservePermitAfterWait() : call.reservePermit();
    } catch (RateLimitedException e) {
      if (call.permitRefusedRetry()) {
        // No permit for the retry: the call ends with the attempt before it, as if not retried,
        // as after a wait that ended past the deadline (run).
        endAsNotRetried(copy);
      } else {
        fail(new CompletionException(e));
      }
      return;
    }
    if (wait > 0) {
      if (copy != null) {
        call.keepToGiveBack(copy); // before the wait's task can run
      }
      schedule(wait, false);
    } else {
      startAttempt(false);
    }
  }

  /**
   * Starts the next attempt; {@code abandoned}: the call ended already, its caller having given up
   * during the wait ({@link #next}): the attempt is neither counted nor judged, only handed to the
   * client, which fails it at once as it fails a call its caller gave up (sending nothing), so that
   * the caller gets what the client gives then, where the client gives it.
   */
  private void startAttempt(boolean abandoned) {
    if (result.isDone()) {
      // The caller stopped waiting (orTimeout, completeExceptionally) without cancel().
      call.onAbandoned();
      endContext();
      return;
    }
    CompletableFuture<T> f;
    try {
      boolean givenUp = !abandoned && call.cancelledByCaller();
      startedGivenUp = givenUp;
      int n = abandoned ? call.attempt() + 1 : givenUp ? call.startAttempt() : call.beginAttempt();
      // The attempt starts in the call's context (its tracing), on whichever thread this is.
      CallContext.Scope scope = NoContext.enter(call, false);
      try {
        f = attempt.start(n, call.attemptTimeoutNanos());
      } finally {
        NoContext.close(call, scope);
      }
    } catch (Throwable e) {
      if (startedGivenUp) {
        SyncRetryLoop.refused(call);
      }
      // The client refused the request outright (say, a bad URI): on the caller's thread, throw
      // as the client itself would have.
      if (callerThread == Thread.currentThread()
          && e instanceof RuntimeException
          && !call.isFinished()) {
        call.onAbandoned();
        throw (RuntimeException) e;
      }
      // A breaker rejection, or a failure to start a retry.
      if (!call.isFinished()) {
        Decision d = call.onFailure(e);
        if (d.retry() && retryLater(d.delayNanos(), e)) {
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
    } else if (result.isDone() && call.attempt() > 1) {
      // The caller completed its future itself between the look before this attempt and
      // inFlight's write, so endedByCaller found no retry in flight: nobody will read this one.
      f.cancel(true);
    }
  }

  /**
   * The attempt's future completed: judge it and go on. Never throws: a throw here lands in the
   * stage {@code whenComplete} returned, which nobody reads, and the caller's future never
   * completed (the application waiting on it for good). A failure of our own (the adapter's reading
   * of the response, a bug of the engine's) ends the call with the attempt's outcome, as without
   * the agent, said once per cause.
   */
  private void attemptDone(T response, Throwable error) {
    boolean discarded = false; // the response is the call's no more
    try {
      if (error != null && startedGivenUp) {
        SyncRetryLoop.refused(call);
      }
      boolean cancelled;
      CompletableFuture<T> done;
      synchronized (result) {
        done = inFlight;
        inFlight = null;
        cancelled = cancelling;
        cancelling = false;
      }
      if (cancelled) {
        discarded = true;
        endAsCancelledAttempt(response, error);
        return;
      }
      if (result.isDone()) {
        if (response != null && !givenToCaller(response)) {
          discarded = true;
          // Said as what it is (thrown here, it was said as a failure judging the attempt).
          SyncRetryLoop.discardUnwanted(engine, access, response);
        }
        // Cancelled, or ended by the caller without cancel() (orTimeout): either way the attempt's
        // breaker permit must go back, or a half-open breaker waits for this trial forever.
        call.onAbandoned();
        endContext();
        return;
      }
      Decision d;
      if (error != null) {
        Throwable failure = unwrap(error);
        d = call.onFailure(failure);
        if (!retrying(d) || !retryLater(d.delayNanos(), failure)) {
          if (d.error() == null) {
            fail(error); // the client's failure as its future delivered it
          } else {
            // The engine's (the breaker's), carrying this failure as the synchronous loop's does.
            d.error().addSuppressed(failure);
            fail(new CompletionException(d.error()));
          }
        }
      } else {
        d = call.onResponse(access.status(response), access.header(response, "Retry-After"));
        if (!retrying(d)) {
          if (d.error() != null) {
            discarded = true;
            SyncRetryLoop.discardUnwanted(engine, access, response);
            fail(new CompletionException(d.error()));
          } else {
            succeededBy(done);
            succeed(response);
          }
        } else {
          // A copy for a wait that ends late after all: kept before the wait's task can run.
          call.keepToGiveBack(SyncRetryLoop.copyToGiveBack(call, access, response));
          if (retryLater(d.delayNanos(), null)) {
            // Once the wait is scheduled: refused, the response is the call's outcome.
            discarded = true;
            SyncRetryLoop.discardForRetry(call, access, response);
          } else {
            call.takeGiveBack();
            succeededBy(done);
            succeed(response);
          }
        }
      }
    } catch (RuntimeException | Error bug) {
      endWithOwnFailure(
          "judging an asynchronous attempt",
          bug,
          "the call ends with that attempt's outcome",
          discarded ? null : response,
          error);
    }
  }

  /**
   * Whether the call goes on to the retry {@code d} decides. Not when the call ended meanwhile
   * ({@link RetryCall#onAbandoned}: the caller gave up after an adapter's decision on the head,
   * {@code apache5.AsyncCall}'s, or during the wait, {@link #next}): the call answers each attempt
   * with its decision, made before the call ended, and the loop went on to a retry of a call over.
   * The attempt's outcome then goes to the caller as it is.
   */
  private boolean retrying(Decision d) {
    return d.retry() && !call.isFinished();
  }

  /**
   * The attempt a {@code cancel(true)} cancelled first ({@link Style#cancelEndsAsAttempt}) ended,
   * and nobody took its outcome yet: the caller's future ends with it, judged by nobody (no retry
   * after a cancel), unless cancelled meanwhile. From {@link #attemptDone} or from the cancel,
   * whichever sees the outcome first; never throws.
   */
  private void takeCancelledOutcome(T response, Throwable error) {
    synchronized (result) {
      if (!cancelling) {
        return; // taken
      }
      cancelling = false;
    }
    endAsCancelledAttempt(response, error);
  }

  /** True when the caller's future holds {@code response}: the cancel gave it there first. */
  private boolean givenToCaller(T response) {
    return !result.isCompletedExceptionally() && result.getNow(null) == response;
  }

  private void endAsCancelledAttempt(T response, Throwable error) {
    try {
      call.onAbandoned();
      endContext();
    } finally {
      giveOutcome(response, error);
    }
  }

  /**
   * The caller's future ends with the attempt's outcome, unjudged: {@code response} (discarded if
   * the caller's future was cancelled meanwhile) or {@code error}. Twice is harmless: the first
   * wins, and a response given already is never discarded ({@link #complete}).
   */
  private void giveOutcome(T response, Throwable error) {
    if (error != null) {
      completeExceptionally(error);
    } else {
      complete(response);
    }
  }

  /**
   * Our own {@code bug} stopped the loop: the caller's future completes anyway, on this thread,
   * with the attempt's outcome ({@code response}, or {@code error}, as the client gave it) when
   * there is one to give, or else with the bug (a response already discarded cannot be given), said
   * once per cause. Nothing here throws, so the caller is never left waiting.
   */
  private void endWithOwnFailure(
      String where, Throwable bug, String consequence, T response, Throwable error) {
    engine.internalError(where, bug, consequence);
    try {
      call.onAbandoned();
      call.takeGiveBack(); // a copy kept for a wait: nothing kept once the call has ended
    } catch (RuntimeException | Error ignored) {
      // the call's own state is what failed: the caller must hear all the same
    }
    try {
      endContext(); // at most once: a context whose end threw is not ended again
    } catch (RuntimeException | Error ignored) {
      // as above
    }
    // No outcome is left to give (the response before a retry's wait was discarded for it): the
    // caller gets an I/O failure, the kind an asynchronous client gives it (java.net.http's
    // sendAsync), never our bug's own type (a NoClassDefFoundError its handler does not expect).
    Throwable failure =
        error != null || response != null
            ? error
            : new CompletionException(new IOException("retry-agent: internal error", bug));
    if (onSchedulerThread()) {
      try {
        // Where the client delivers, as fail() and succeed() do: not on the engine's thread.
        style.deliverOn.execute(() -> completeAfterOwnFailure(response, failure));
        return;
      } catch (RuntimeException | Error refused) {
        // completed here instead
      }
    }
    completeAfterOwnFailure(response, failure);
  }

  /** Completes with {@code response}, or else with {@code failure}; never throws. */
  private void completeAfterOwnFailure(T response, Throwable failure) {
    if (failure != null) {
      result.failByLoop(failure);
    } else if (!result.completeByLoop(response)) {
      // The caller gave up meanwhile. What the release throws (a body's close() may throw an
      // Error) is said once; dropped here, it was said nowhere.
      SyncRetryLoop.discardUnwanted(engine, access, response);
    }
  }

  /**
   * Waits {@code delayNanos} for the retry decided after the attempt that failed with {@code
   * failure} (null: a response). False when the scheduler refused the wait: a retry at once would
   * skip its backoff, and each retry after it too, reaching a failing host as fast as it fails; the
   * call ends with that attempt's outcome instead ({@link RetryCall#retryNotScheduled}), which the
   * caller then gets as without the agent, and the engine says so once per cause.
   */
  private boolean retryLater(long delayNanos, Throwable failure) {
    Throwable refused = schedule(delayNanos, true);
    if (refused == null) {
      return true;
    }
    engine.internalError(
        "scheduling a retry's wait", refused, "the call ends with that attempt's outcome");
    call.retryNotScheduled(failure);
    return false;
  }

  /**
   * Waits {@code delayNanos} on the engine's scheduler, then {@link #run} goes on: after a retry's
   * wait ({@code isRetry}) with the rate limit and the attempt ({@link #next}), after the rate
   * limit's wait with a look at the host's 429 pause and the attempt ({@link #next} too). Returns
   * what the scheduler threw when it refused a retry's wait (the caller ends the call), else null.
   */
  private Throwable schedule(long delayNanos, boolean isRetry) {
    if (isRetry) {
      call.waitsToRetry(); // the delay is in hand
    }
    // Told before the task is scheduled, so that the task's run always tells the wait's end after.
    boolean kept = call.waitStarts(this);
    boolean scheduled = false;
    Throwable refused = null;
    synchronized (result) {
      if (!result.isDone()) {
        try {
          // Under the lock, so the task cannot run before pending and the count say it waits.
          pending = engine.scheduler().schedule(this, delayNanos);
          pendingIsRetry = isRetry;
          if (isRetry) {
            engine.asyncRetryScheduled();
          }
          scheduled = true;
        } catch (RuntimeException | Error e) {
          refused = e;
        }
      }
    }
    if (scheduled) {
      if (kept && call.cancelledByCaller()) {
        endNow(); // the caller gave up before the adapter kept the wait, so it could not end it
      }
      return null;
    }
    call.waitEnds(this);
    if (refused != null && isRetry) {
      return refused;
    }
    if (refused != null) {
      permitWaitNotScheduled(refused);
      return null;
    }
    // The caller stopped waiting (orTimeout, completeExceptionally) since the attempt completed.
    call.onAbandoned();
    endContext();
    return null;
  }

  /**
   * Ends the pending wait now ({@link RetryCall.Wait}): its task runs at once on the scheduler,
   * where it would have run at the wait's end, so the step after it runs on the same thread as
   * ever.
   */
  @Override
  public void endNow() {
    synchronized (result) {
      if (pending != null) {
        Scheduler.Cancellable now;
        try {
          now = engine.scheduler().schedule(this, 0);
        } catch (RuntimeException | Error e) {
          return; // the scheduler takes no task: the wait ends at its time, as scheduled
        }
        pending.cancel();
        pending = now;
      }
    }
  }

  /**
   * The scheduler refused a rate-limit wait's task ({@code refused}: a pool that cannot start a
   * thread, the JVM out of them, or a scheduler shut down). Started at once, the attempt would go
   * over the host's limit, and so would every call while the scheduler refuses; the call ends as
   * one the limit gives no permit instead ({@link RetryCall#permitWaitNotScheduled}), its future
   * completed with that {@link RateLimitedException}, and the engine says so once per cause; a
   * retry's, with the attempt before it, as a retry the limit refuses ({@link #next}). (A retry's
   * wait refused ends the call with the attempt's outcome: {@link #retryLater}.)
   */
  private void permitWaitNotScheduled(Throwable refused) {
    engine.internalError(
        "scheduling a rate-limit wait",
        refused,
        "the call ends as one the rate limit gives no permit, not over the limit");
    RateLimitedException e = call.permitWaitNotScheduled();
    Object copy = call.takeGiveBack(); // kept for the wait (next): nothing kept once ended
    if (call.permitRefusedRetry()) {
      endAsNotRetried(copy);
    } else {
      fail(new CompletionException(e));
    }
  }

  /** A wait {@link #schedule}d is over, on the scheduler's thread. Not for anyone else. */
  @Override
  public void run() {
    boolean retry;
    synchronized (result) {
      if (pending == null) {
        return; // cancelled meanwhile
      }
      pending = null;
      retry = pendingIsRetry;
      if (retry) {
        engine.asyncRetryDone();
      }
    }
    schedulerThread = Thread.currentThread();
    try {
      call.waitEnds(this);
      // A rate-limit wait before a retry has the retry's copy too (next).
      Object copy = call.takeGiveBack();
      if (result.isDone()) {
        // The caller stopped waiting without cancel() (orTimeout, completeExceptionally), which
        // ended the wait early (Result.endedByCaller): the call ends here, charged no permit.
        call.onAbandoned();
        endContext();
        return;
      }
      if (retry ? call.retryTooLate() : call.endsAfterPermitWait()) {
        // The wait ended past the deadline (or the adapter ends the call after a rate-limit wait):
        // the call ends with the attempt's outcome, as if not retried: its response released
        // before the wait, from the copy kept of it, or else the engine's exception, which says so.
        endAsNotRetried(copy);
      } else {
        next(!retry, copy);
      }
    } catch (RuntimeException | Error bug) {
      // As in attemptDone: the pool keeps a task's throw in the task's own future, and the
      // caller's would never complete. The attempt before the wait was discarded or failed.
      endWithOwnFailure(
          "going on after a wait", bug, "the call ends with that failure", null, null);
    } finally {
      schedulerThread = null;
    }
  }

  /**
   * The retry decided is not made: the call ends with the attempt before it, its response released
   * before the wait, from {@code copy} kept of it, or else the engine's exception, which says so.
   */
  private void endAsNotRetried(Object copy) {
    if (copy != null) {
      giveBack(copy);
    } else {
      fail(new CompletionException(call.lateRetryFailure()));
    }
  }

  /**
   * Completes with a failure. Dependent stages of the caller then run on this thread: a client
   * thread, or, unless the style delivers elsewhere, one of the scheduler's workers (never its
   * timer thread, so a slow callback cannot delay other calls' retries).
   */
  private void fail(Throwable error) {
    endContext();
    if (onSchedulerThread()) {
      style.deliverOn.execute(() -> completeExceptionally(error));
    } else {
      completeExceptionally(error);
    }
  }

  /**
   * Completes with the response {@code copy} stands for ({@link ResponseAccess#giveBack}), where
   * the client delivers (java.net.http: the adapter applies the caller's handler there); a cancel
   * of the caller's future meanwhile cancels that work, held as the attempt in flight is.
   */
  private void giveBack(Object copy) {
    endContext();
    if (onSchedulerThread()) {
      style.deliverOn.execute(() -> deliverGivenBack(copy));
    } else {
      deliverGivenBack(copy);
    }
  }

  @SuppressWarnings("unchecked")
  private void deliverGivenBack(Object copy) {
    CompletionStage<T> stage;
    CompletableFuture<T> given;
    try {
      stage = access.giveBack((T) copy);
      given = stage.toCompletableFuture();
    } catch (RuntimeException | Error bug) {
      // The adapter's own failure (its client's are in the stage): as endWithOwnFailure ends a
      // call with nothing left to give, an I/O failure, never our bug's own type.
      engine.internalError(
          "giving back a response after a late wait", bug, "the call ends with that failure");
      completeExceptionally(
          new CompletionException(new IOException("retry-agent: internal error", bug)));
      return;
    }
    synchronized (result) {
      inFlight = given;
    }
    if (result.isCancelled()) {
      // Cancelled before the give-back was held: as the caller asked (cancel(false) leaves a
      // java.net.http exchange, and so the replay, alone).
      given.cancel(cancelInterrupts);
    }
    given.whenComplete(
        (response, error) -> {
          synchronized (result) {
            inFlight = null;
          }
          if (error != null) {
            completeExceptionally(error);
          } else {
            complete(response);
          }
        });
    try {
      access.startGiveBack(stage); // held as the attempt in flight: a cancel from now reaches it
    } catch (RuntimeException | Error bug) {
      engine.internalError(
          "giving back a response after a late wait", bug, "the call ends with that failure");
      given.completeExceptionally(
          new CompletionException(new IOException("retry-agent: internal error", bug)));
    }
  }

  /**
   * Keeps the final attempt's future before the caller's completes (its dependents may run and be
   * cancelled inside that completion), for {@link Dependent#cancel}; only for a style whose
   * dependents cancel the call.
   */
  private void succeededBy(CompletableFuture<T> attemptFuture) {
    if (style.dependentsCancel) {
      succeeded = attemptFuture;
    }
  }

  /** Completes with the final response, or discards it when the caller is gone. */
  private void succeed(T response) {
    endContext();
    if (onSchedulerThread()) {
      style.deliverOn.execute(() -> complete(response));
    } else {
      complete(response);
    }
  }

  /** The caller's dependent stages run in the caller's context, as without the agent. */
  private void completeExceptionally(Throwable error) {
    CallContext.Scope scope = NoContext.enter(call, true);
    try {
      result.failByLoop(error);
    } finally {
      NoContext.close(call, scope);
    }
  }

  private void complete(T response) {
    boolean completed;
    CallContext.Scope scope = NoContext.enter(call, true);
    try {
      completed = result.completeByLoop(response);
    } finally {
      NoContext.close(call, scope);
    }
    if (!completed && !givenToCaller(response)) {
      // Cancelled since the attempt completed: the response can no longer reach the caller. Here
      // on the client's executor, perhaps: what the release throws must not leave its task. (Not
      // when the caller holds it already: a cancel gave the attempt's outcome too, giveOutcome.)
      SyncRetryLoop.discardUnwanted(engine, access, response);
    }
  }

  /**
   * Ends the call's context, then the call for its adapter ({@link RetryCall#loopEnded}), once:
   * before the caller hears of the outcome, or when it left.
   */
  private void endContext() {
    synchronized (result) {
      if (contextEnded) {
        return;
      }
      contextEnded = true;
    }
    NoContext.end(call);
    call.loopEnded();
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
      CompletableFuture<T> cancelledFirst = null;
      if (style.cancelEndsAsAttempt && mayInterruptIfRunning) {
        synchronized (this) {
          if (!isDone() && inFlight != null) {
            cancelling = true;
            cancelledFirst = inFlight;
          }
        }
      }
      boolean attemptCancelled = false;
      if (cancelledFirst != null) {
        attemptCancelled = cancelledFirst.cancel(true);
        if (cancelledFirst.isDone() && !cancelledFirst.isCancelled()) {
          // The attempt ended before its own cancellation could (the client's cancel made it
          // fail first): this future ends so too, as the client's own would have; at once (the
          // attempt is done, so this runs here), not when its thread gets to attemptDone.
          cancelledFirst.whenComplete(AsyncRetryLoop.this::takeCancelledOutcome);
          // The client's thread may have taken that outcome first (attemptDone) and not yet
          // given it: given here too (the same outcome; the first to give it wins), never
          // cancelled by the super.cancel below, which won that race.
          cancelledFirst.whenComplete(AsyncRetryLoop.this::giveOutcome);
          return attemptCancelled;
        }
      }
      cancelInterrupts = mayInterruptIfRunning; // before the cancel can be seen
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      if (!cancelled) {
        return attemptCancelled;
      }
      CompletableFuture<T> attemptToCancel;
      boolean waited = false;
      synchronized (this) {
        attemptToCancel = inFlight == cancelledFirst ? null : inFlight;
        inFlight = null;
        if (pending != null) {
          pending.cancel();
          pending = null;
          waited = true;
          if (pendingIsRetry) {
            engine.asyncRetryDone();
          }
        }
      }
      if (waited) {
        call.waitEnds(AsyncRetryLoop.this);
        call.takeGiveBack(); // nothing kept once the call has ended
      }
      if (attemptToCancel != null) {
        attemptToCancel.cancel(mayInterruptIfRunning);
      }
      call.onAbandoned();
      endContext();
      return true;
    }

    /**
     * The loop's own completion: not the caller's giving up ({@link #endedByCaller}), and no lock
     * taken on the success path (r33).
     */
    boolean completeByLoop(T value) {
      return super.complete(value);
    }

    /** The loop's own completion with a failure: see {@link #completeByLoop}. */
    boolean failByLoop(Throwable ex) {
      return super.completeExceptionally(ex);
    }

    /** Completed by the application (completeOnTimeout): see {@link #endedByCaller}. */
    @Override
    public boolean complete(T value) {
      boolean completed = super.complete(value);
      if (completed) {
        endedByCaller();
      }
      return completed;
    }

    /** Completed by the application (orTimeout, completeExceptionally). */
    @Override
    public boolean completeExceptionally(Throwable ex) {
      boolean completed = super.completeExceptionally(ex);
      if (completed) {
        endedByCaller();
      }
      return completed;
    }

    /**
     * The caller stopped waiting without cancel(): a retry's wait pending ends now rather than at
     * its time (until then the call held its client's close(), counted in pendingAsyncRetries and
     * kept its memory); a retry in flight, whose outcome nobody will read, is cancelled. The first
     * attempt is left alone: without the agent the application's completing its future does not
     * stop the exchange either. The loop completes the future by {@link #completeByLoop} and {@link
     * #failByLoop}, never through here.
     */
    private void endedByCaller() {
      boolean waiting;
      CompletableFuture<T> retryInFlight = null;
      synchronized (this) {
        waiting = pending != null;
        if (inFlight != null && call.attempt() > 1) {
          retryInFlight = inFlight;
        }
      }
      if (waiting) {
        endNow();
      }
      if (retryInFlight != null) {
        retryInFlight.cancel(true);
      }
    }

    /** Refused for a style that refuses it ({@link Style#refusingObtrude}). */
    @Override
    public void obtrudeValue(T value) {
      if (style.refusesObtrude) {
        throw new UnsupportedOperationException();
      }
      super.obtrudeValue(value);
    }

    @Override
    public void obtrudeException(Throwable ex) {
      if (style.refusesObtrude) {
        throw new UnsupportedOperationException();
      }
      super.obtrudeException(ex);
    }

    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
      return style.dependentsCancel || style.refusesObtrude
          ? new Dependent<>()
          : new CompletableFuture<>();
    }

    /** The request as {@link RetryEvent#toString()} writes it: an application may log a future. */
    @Override
    public String toString() {
      RequestInfo r = call.request();
      return "retry-agent call "
          + Sanitizer.oneLine(r.method())
          + " "
          + Sanitizer.oneLine(r.target())
          + Sanitizer.path(r.path(), call.state.engine.pathMask(), r.atPastPath())
          + " "
          + super.toString();
    }
  }

  /**
   * A stage that depends on the caller's future, for a style whose dependents cancel the call:
   * {@code cancel(true)} cancels it, then the call, as {@code java.net.http}'s own futures do since
   * 16 (its {@code MultiExchange.cancel} does nothing for {@code cancel(false)}: nor does this),
   * and so do the stages that depend on it. For a style that refuses obtrude, it refuses it too.
   */
  private final class Dependent<U> extends CompletableFuture<U> {
    @Override
    public void obtrudeValue(U value) {
      if (style.refusesObtrude) {
        throw new UnsupportedOperationException();
      }
      super.obtrudeValue(value);
    }

    @Override
    public void obtrudeException(Throwable ex) {
      if (style.refusesObtrude) {
        throw new UnsupportedOperationException();
      }
      super.obtrudeException(ex);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      boolean wasDone = isDone();
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      if (!wasDone && mayInterruptIfRunning && style.dependentsCancel) {
        // Read only once the caller's future is done: its completion published the plain write.
        CompletableFuture<T> exchange = result.isDone() ? succeeded : null;
        if (exchange != null) {
          // The response arrived, its body may still stream: without the agent the dependent
          // shares the exchange's cancel hook, which stops the body (its subscriber fails, the
          // connection closes). The attempt's future is done, so its cancel does nothing; a new
          // incomplete one of its kind (the JDK's MinimalFuture) has the same hook.
          exchange.newIncompleteFuture().cancel(true);
        } else {
          result.cancel(true);
        }
      }
      return cancelled;
    }

    @Override
    public <V> CompletableFuture<V> newIncompleteFuture() {
      return new Dependent<>();
    }
  }
}
