package dev.retryagent.okhttp;

import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.CircuitBreakerOpenException;
import dev.retryagent.engine.Decision;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RateLimitedException;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.internal.Waits;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;
import okhttp3.Interceptor;
import okhttp3.Response;

/**
 * One {@code enqueue}d call whose retries an {@link AsyncRetrier} runs, from the first attempt (the
 * call itself) to the callback. Each attempt is enqueued with OkHttp, and its callback decides: a
 * final outcome goes to the application's callback right there, inside OkHttp's own run of the
 * attempt, so the application hears of it exactly as OkHttp would tell it: on a dispatcher thread,
 * with OkHttp's exceptions (its call timeout as {@code InterruptedIOException: timeout}, a cancel
 * as the I/O error or {@code IOException: Canceled}), and what its callback throws handled (and
 * logged) by OkHttp. A retry waits on the engine's scheduler, holding no dispatcher thread or slot,
 * then a {@link Call#clone() clone} of the call is enqueued; it ends when the original call's own
 * timeout would have ended it. The first attempt's wait for a rate-limit permit is the one wait on
 * a dispatcher thread: the call itself is enqueued at once, as OkHttp would (it is executed when
 * {@code enqueue} returns), and waits where OkHttp runs it. Whatever the agent must report without
 * an attempt (a cancel during the wait, the breaker open) also goes through OkHttp: an attempt call
 * whose interceptor throws it without sending anything (told at once from a thread of the
 * dispatcher's when OkHttp queues that call behind the host's taken slots).
 *
 * <p>Thread-safe: OkHttp's threads, the scheduler's, and any thread that cancels.
 *
 * <p>It is itself the engine's cancel signal ({@link #getAsBoolean}) and the task its waits
 * schedule ({@link #run}): 10,000 calls may wait at once (issue 13), and each lambda would be one
 * more object per waiting call. Neither method is for anyone else.
 */
final class EnqueuedCall implements BooleanSupplier, Runnable {
  private final AsyncRetrier retrier;
  private final RetryEngine engine;
  final Call original;
  private final Callback callback;
  final Dispatcher dispatcher;
  private final RetryCall retryCall;
  private final OkRequest info;
  private final long enqueuedAt = System.nanoTime();

  // Read without the lock by the engine's cancel check (never call the engine holding the lock).
  private volatile boolean cancelled;
  private volatile Call lastAttempt;
  // Set as the application's callback is called: what is thrown after is its own, or OkHttp's.
  private volatile boolean told;

  // Guarded by this.
  private int attemptCalls;
  private Call inFlight;
  private Scheduler.Cancellable pending;
  private boolean pendingIsRetry;
  // A retry's wait is scheduled while its attempt's response is still released (retryLater): a
  // wait that ends first goes on once that is done (released), as before it was scheduled after.
  private boolean releasing;
  private boolean endedWhileReleasing;
  private boolean done;
  private boolean started;
  private boolean cloneBegun; // the interceptor began the clone in flight (see endIfQueued)
  // A retry's wait ended past the deadline, and the call's end is decided where the callback
  // hears of it (settleLateEnd), not on the scheduler's thread.
  private boolean lateEndPending;
  // settleLateEnd decided that end as a cancel (the callback hears "Canceled").
  private boolean lateEndAsCancel;
  private long callDeadline = RetryInterceptor.NO_DEADLINE;

  EnqueuedCall(
      AsyncRetrier retrier,
      RetryEngine engine,
      Call original,
      Callback callback,
      Dispatcher dispatcher,
      RetryCall retryCall,
      OkRequest info) {
    this.retrier = retrier;
    this.engine = engine;
    this.original = original;
    this.callback = callback;
    this.dispatcher = dispatcher;
    this.retryCall = retryCall;
    this.info = info;
    retryCall.cancelledWhen(this);
  }

  /** The application gave up: it cancelled the call, or its timeout cancelled an attempt. */
  @Override
  public boolean getAsBoolean() {
    Call attempt = lastAttempt;
    return cancelled || original.isCanceled() || (attempt != null && attempt.isCanceled());
  }

  /** Starts the first attempt, on the thread that called {@code enqueue}, as OkHttp would. */
  void start() {
    next();
  }

  /** The rate limit, then the attempt. */
  private void next() {
    next(false);
  }

  /**
   * The rate limit, then the attempt. {@code permitWaited}: after the rate limit's wait, which a
   * 429 pause that began during it extends ({@link RetryCall#reservePermitAfterWait}).
   */
  private void next(boolean permitWaited) {
    next(permitWaited, null);
  }

  /**
   * As {@link #next(boolean)}; {@code kept}: the copy of the response released for the retry
   * ({@link #keepCopy}), kept on through the retry's wait for its permit, or the response itself
   * kept unreleased through the retry's short wait ({@link Kept}): the rate limit's refusal of the
   * retry's permit ends the call with it, as if not retried.
   */
  private void next(boolean permitWaited, Object kept) {
    Kept held = kept instanceof Kept ? (Kept) kept : null;
    try {
      next(permitWaited, kept, held);
    } catch (RuntimeException | Error bug) {
      releaseKept(held); // unless given or released already
      throw bug;
    }
  }

  private void next(boolean permitWaited, Object kept, Kept held) {
    Response copy = kept instanceof Response ? (Response) kept : null;
    if (cancelled || original.isCanceled()) {
      // Cancelled during the wait for a retry, or before enqueue() (Retrofit cancels its OkHttp
      // call so): it is heard as "Canceled" (nextAttempt), never as the rate limit's refusal of a
      // permit the attempt no longer needs.
      releaseKept(held);
      nextAttempt();
      return;
    }
    if (permitWaited && pastCallTimeout()) {
      endAtCallTimeout(); // a retry's wait for its permit ended late, past the call's timeout
      return;
    }
    long wait;
    RateLimitedException refused = null;
    // A refusal is told as the callback hears it (endHeard). Only an enforced rate limit refuses:
    // without one, no hold, whose lock each way every call not retried paid (issue 13).
    boolean holding = retryCall.permitMayEndCall();
    if (holding) {
      retryCall.holdEnd(true);
    }
    try {
      wait = permitWaited ? retryCall.reservePermitAfterWait() : retryCall.reservePermit();
    } catch (RateLimitedException e) {
      wait = 0;
      refused = e;
    } finally {
      if (holding) {
        retryCall.holdEnd(false); // let go once, here: holds nest, a second would undo an outer one
      }
    }
    if (refused != null) {
      if (retryCall.permitRefusedRetry()) {
        endAsNotRetried(kept); // the response itself, when it was kept through the wait
        return;
      }
      releaseKept(held);
      Call call = attemptCallOrTell(refused);
      if (call != null) {
        failThrough(call, refused);
      }
      return;
    }
    if (held != null) {
      // Granted: the kept response goes now, before any wait for the permit, which holds no
      // connection (bounded by maxWait only); a 429 pause that begins during that wait refuses
      // the retry after all, and the call then ends with the copy taken now, as after a release
      // at the decision (SyncRetryLoop does the same). Without a wait too: the retry's clone may
      // yet be refused (enqueue), and the call then ends with the copy.
      copy = letGo(held);
    }
    // The outcome of the attempt before the retry, kept until the retry's clone begins: a copy of
    // its response, or its failure.
    Object before = copy != null ? copy : kept instanceof IOException ? kept : null;
    if (wait > 0 && before != null) {
      synchronized (this) {
        if (!done) {
          retrier.keepGiveBack(this, before); // before the wait's task can run
        }
      }
    }
    if (wait > 0 && isFirst()) {
      // The call itself waits for its permit on the dispatcher thread that runs it: enqueued now,
      // it is executed when enqueue() returns, as without the agent. Enqueued only after a wait on
      // the scheduler, it let a second enqueue() or execute() through meanwhile, then OkHttp threw
      // "Already Executed" on the scheduler's thread and the callback never heard of the call.
      enqueue(
          attemptCall(), new ManagedAttempts.PermitWait(this, engine.clock().nanoTime() + wait));
    } else if (wait > 0) {
      schedule(wait, false);
    } else {
      nextAttempt(before);
    }
  }

  /**
   * The application shut the dispatcher's executor down (OkHttp's way to shut a client down): it
   * lets the attempt running end, and would refuse a retry ("executor rejected"). The attempt's
   * outcome is then the call's, as without the agent.
   */
  private boolean executorShutDown() {
    if (dispatcher == null) {
      return false;
    }
    try {
      return dispatcher.executorService().isShutdown();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  private synchronized boolean isDone() {
    return done;
  }

  private synchronized boolean isFirst() {
    return attemptCalls == 0;
  }

  /** The call of the next attempt: the original first, then clones (made outside the lock). */
  private Call attemptCall() {
    int n;
    synchronized (this) {
      n = attemptCalls++;
    }
    return n == 0 ? original : original.clone();
  }

  /**
   * {@link #attemptCall}, or null when the clone could not be made (OkHttp asks the application's
   * {@code EventListener.Factory} in {@code clone()}, and what it throws would leave the agent on
   * the scheduler's thread, the callback never told): the call ends with {@code failure}, told
   * here, where we are, as for a clone OkHttp refused ({@link #enqueue}).
   */
  private Call attemptCallOrTell(IOException failure) {
    try {
      return attemptCall();
    } catch (RuntimeException | Error e) {
      // No attempt began for it: what the call holds (its decided retry, the permit reserved for
      // it, the breaker's) goes back as the call ends. A late wait's end is heard as it would be
      // through the clone (heardAtEnd): past the call's timeout "timeout", after a cancel
      // "Canceled"; before, the failure of before the wait, whatever came.
      IOException heard = failure != null ? heardAtEnd(original, failure) : couldNotEnqueue(e);
      retryCall.onAbandoned();
      deliverFailure(heard);
      return null;
    }
  }

  private static IOException couldNotEnqueue(Throwable e) {
    return new IOException("retry-agent: could not enqueue a retry", e);
  }

  private void nextAttempt() {
    nextAttempt(null);
  }

  /**
   * {@link #nextAttempt()}; {@code before}: the outcome of the attempt before this retry (a copy of
   * its response, or its failure), or null, kept until the retry's clone begins ({@link #enqueue}).
   */
  private void nextAttempt(Object before) {
    synchronized (this) {
      if (done) {
        return;
      }
    }
    // OkHttp's own locks are never taken while this one is held.
    boolean cancel = cancelled || original.isCanceled();
    Call call = attemptCallOrTell(cancel ? new IOException("Canceled") : null);
    if (call == null) {
      return;
    }
    // Cancelled during the wait, or before enqueue(): the callback hears "Canceled" from a
    // dispatcher thread, as it would from OkHttp for a call cancelled before it ran.
    enqueue(call, begin(cancel), true, before);
  }

  /**
   * What the next attempt is, once nothing is left to wait for: {@code Canceled} when the caller
   * cancelled (nothing is sent, and the breaker has no say: open, it would answer with its own
   * exception instead), the breaker's exception when it is open, else an attempt begun now.
   */
  private ManagedAttempts.Attempt begin(boolean cancel) {
    if (cancel) {
      cancelled = true;
      retryCall.onAbandoned();
      return new ManagedAttempts.Attempt(this, 0, -1, new IOException("Canceled"));
    }
    try {
      // The breaker's refusal is told as the callback hears it (endHeard), held under the lock
      // the breaker's step takes anyway: a hold of its own cost two locks on every attempt.
      retryCall.acquireBreakerHoldingEnd();
    } catch (CircuitBreakerOpenException e) {
      return new ManagedAttempts.Attempt(this, 0, -1, e);
    }
    int n = retryCall.startAttempt();
    return new ManagedAttempts.Attempt(this, n, retryCall.attemptTimeoutNanos(), null);
  }

  /** Delivers {@code failure} through OkHttp: {@code call} runs, and its interceptor throws it. */
  private void failThrough(Call call, IOException failure) {
    enqueue(call, new ManagedAttempts.Attempt(this, 0, -1, failure));
  }

  private void enqueue(Call call, ManagedAttempts.Attempt attempt) {
    enqueue(call, attempt, true, null);
  }

  private void enqueue(Call call, ManagedAttempts.Attempt attempt, boolean dropAsRefused) {
    enqueue(call, attempt, dropAsRefused, null);
  }

  /**
   * Hands {@code call} to OkHttp to run {@code attempt}. {@code dropAsRefused}: should the
   * dispatcher's executor drop a clone unrun, the callback hears what OkHttp tells of one it
   * refuses ({@link #tellDropped}); else (the end of a call not retried, {@link #endAsNotRetried})
   * the clone's own failure, as told when the executor is shut down before. {@code before}: for a
   * retry, the outcome of the attempt before it (a copy of its response, or its failure), or null:
   * kept until the clone begins ({@link #beginClone}), so that a clone the executor refuses or
   * drops unrun ends the call with it, as without the agent ({@link #endWithOutcomeBefore}).
   */
  private void enqueue(
      Call call, ManagedAttempts.Attempt attempt, boolean dropAsRefused, Object before) {
    boolean real = attempt.failure == null;
    if (real && call != original) {
      applyDeadline(call);
    }
    boolean cancelNow;
    synchronized (this) {
      inFlight = call;
      cloneBegun = false;
      if (real) {
        lastAttempt = call;
        if (before != null && call != original && !done) {
          retrier.keepGiveBack(this, before); // before OkHttp may refuse it, on this thread
        }
      }
      // A cancel since the attempt was chosen must reach it: OkHttp then fails it as cancelled.
      cancelNow = cancelled && call != original && real;
    }
    retrier.attempts().put(call, attempt);
    if (cancelNow) {
      call.cancel();
    }
    // Enqueued in the call's context: a tracer that carries the context into OkHttp's run of the
    // call (the OpenTelemetry agent does) then sees the call's, not this thread's.
    try {
      CallContext.Scope scope = retryCall.enterContext(false);
      try {
        retrier.enqueuer().enqueue(call, new AttemptCallback());
        if (real && call != original) {
          watchQueue(call);
        } else if (call == original) {
          startedUnlessQueued();
        } else {
          // A clone that only tells the callback (a cancel during the wait, a refusal): queued
          // behind the host's taken slots, it would tell it only when one frees, if ever.
          endIfQueued(call, attempt.failure, false);
        }
        // OkHttp hands the clone to the dispatcher's executor, which may drop it unrun (its
        // shutdownNow()): told then as OkHttp tells a clone that executor refuses (tellDropped).
        // The executor is looked at first: a retry on OkHttp's own makes no watch's lambdas.
        ExecutorService executor =
            call != original && dispatcher != null ? watchedExecutor() : null;
        if (executor != null) {
          watchHandOver(
              executor,
              () -> stillHandedOver(call),
              () -> tellDropped(call, attempt, dropAsRefused));
        }
      } finally {
        retryCall.leaveContext(scope);
      }
    } catch (RuntimeException | Error e) {
      retrier.attempts().remove(call);
      if (call == original) {
        // On the application's thread inside enqueue(): it gets what OkHttp threw. Nothing was
        // sent: the rate-limit permit the attempt took goes back, as the call ends.
        finish();
        retryCall.attemptNotSent();
        retryCall.onAbandoned();
        retryCall.endContext();
        throw e;
      }
      if (isDone()) {
        // OkHttp told the attempt's callback already, on this thread (its executor, shut down,
        // refused the clone: "executor rejected"), and this is what the application's callback
        // threw, out of enqueue() as OkHttp lets it out: it heard of the call, never again.
        throw e;
      }
      // A clone OkHttp refused before it enqueued it (the application's event listener threw
      // from its callStart): told where we are, there is no other thread. It sent nothing: its
      // retry goes back to the budget and its rate-limit permit to the bucket as the call ends
      // (attemptNotSent), the breaker's permit too (onAbandoned). A late wait's end is decided
      // first, as attemptCallOrTell does (heardAtEnd): decided after onAbandoned ended the call as
      // cancelled, it was taken for a cancel, and the callback heard "Canceled", never cancelled.
      IOException heard = couldNotEnqueue(e);
      if (isLateEndPending()) {
        heard = heardAtEnd(original, heard);
      }
      retryCall.attemptNotSent();
      retryCall.onAbandoned();
      deliverFailure(heard);
    }
  }

  /**
   * A clone ends when the original call's own timeout would have ended it: the whole call, waits
   * included, within the application's {@code callTimeout} (and a deadline set on the call).
   */
  private void applyDeadline(Call clone) {
    long deadline = markStarted(enqueuedAt);
    try {
      // A clone starts with the client's callTimeout, not the call's own (the application may
      // have lengthened or lifted it on the call's timeout()): the deadline, counted from the
      // first attempt, is the call's whole bound, so the clone keeps no timeout of its own.
      clone.timeout().timeout(0, TimeUnit.NANOSECONDS);
      if (deadline != RetryInterceptor.NO_DEADLINE) {
        clone.timeout().deadlineNanoTime(deadline);
      }
    } catch (LinkageError olderOkHttp) {
      // Call.timeout() exists since 3.12.
    }
  }

  /**
   * OkHttp started running the first attempt (its call timeout started) at {@code nanoTime}, unless
   * an earlier mark said so. Returns when the call's own timeout ends it ({@link
   * RetryInterceptor#callDeadline}).
   */
  private long markStarted(long nanoTime) {
    return mark(nanoTime, false);
  }

  /**
   * {@link #markStarted} by the thread that runs the first attempt, now: OkHttp's own timeout,
   * which it entered there, says when it started ({@link RetryInterceptor#runningCallDeadline}),
   * also when the dispatcher's queue held the call first.
   */
  private long markRunning() {
    return mark(System.nanoTime(), true);
  }

  private long mark(long nanoTime, boolean running) {
    long deadline;
    synchronized (this) {
      if (started) {
        return callDeadline;
      }
      started = true;
      deadline =
          running
              ? RetryInterceptor.runningCallDeadline(original, nanoTime)
              : RetryInterceptor.callDeadline(original, nanoTime);
      callDeadline = deadline;
    }
    RetryInterceptor.limitToCallTimeout(retryCall, deadline, engine);
    return deadline;
  }

  /**
   * OkHttp runs the call itself as it is enqueued, unless its dispatcher queues it (the host's
   * slots, or all, taken), and its call timeout starts then, ahead of the application's
   * interceptors. Counted from when the first attempt reached the agent's interceptor, after them,
   * a clone's deadline was late by as long as they took (a token fetched): a retried call ran past
   * its callTimeout by that much. So the call started when {@code enqueue} was called, unless the
   * dispatcher's queue holds calls; then (it may be one of them, and when OkHttp runs it is not
   * known here) when OkHttp's own timeout says, read as its first attempt reaches the interceptor
   * ({@link #markRunning}; if it cannot be read, from there, as before). So too when that attempt
   * got there before this looked (the enqueuing thread held up): the first mark counts.
   */
  private void startedUnlessQueued() {
    if (dispatcher == null) {
      return;
    }
    try {
      if (dispatcher.queuedCallsCount() == 0) {
        markStarted(enqueuedAt);
      }
    } catch (RuntimeException | LinkageError e) {
      // Its first attempt marks the start.
    }
  }

  /**
   * A retry's clone that OkHttp queued (the host's slots, {@code Dispatcher.maxRequestsPerHost}, or
   * all its {@code maxRequests}, taken) has no timeout running: OkHttp starts a call's timeout when
   * it runs it. Without the agent the call would have ended at its deadline, so {@link
   * #endIfQueued} looks then. Only for a retry, and only when OkHttp's queue holds calls: a call
   * that succeeds, or whose retry runs at once, costs nothing. The task holds this call until the
   * deadline (no more than a waiting retry would).
   */
  private void watchQueue(Call clone) {
    long deadline;
    synchronized (this) {
      deadline = callDeadline;
    }
    if (deadline == RetryInterceptor.NO_DEADLINE || dispatcher == null) {
      return;
    }
    try {
      if (dispatcher.queuedCallsCount() > 0) {
        engine
            .scheduler()
            .schedule(
                () -> endIfQueuedAtDeadline(clone), Math.max(0, deadline - System.nanoTime()));
      }
    } catch (RuntimeException | LinkageError e) {
      // The clone is enqueued: it ends by OkHttp's own timeout once it runs, as before.
    }
  }

  /**
   * {@link #endIfQueued(Call, boolean)} at the call's deadline, the task {@link #watchQueue}
   * schedules: what fails in it (the application's {@code EventListener} as the clone is cancelled,
   * our own bug) ends the call with OkHttp's timeout, told once, as the deadline would have ended
   * it without the agent; before, the task ended and the callback was never called.
   */
  private void endIfQueuedAtDeadline(Call clone) {
    try {
      endIfQueued(clone, true);
    } catch (RuntimeException | Error bug) {
      endQuietlyWithOwnFailure(
          "ending a retry queued in OkHttp's dispatcher at the call's deadline",
          bug,
          timeout(),
          true);
    }
  }

  /** OkHttp's call timeout, as it reports it: the cancel's failure its cause. */
  private static InterruptedIOException timeout() {
    InterruptedIOException timeout = new InterruptedIOException("timeout");
    timeout.initCause(new IOException("Canceled"));
    return timeout;
  }

  /**
   * At the call's deadline ({@code timedOut}, on the scheduler's thread), or when the application
   * cancelled it: a clone still in OkHttp's queue ends as the call would have ended without the
   * agent, at once, not when a slot frees: with OkHttp's call timeout, {@code
   * InterruptedIOException: timeout}, or {@code IOException: Canceled}, told once, on a dispatcher
   * thread, the call cancelled. A first attempt that waits in the queue is OkHttp's own behaviour,
   * with or without the agent, and is left alone; a clone that runs already is ended by OkHttp (its
   * timeout has the call's deadline; a cancel reaches it).
   */
  private void endIfQueued(Call clone, boolean timedOut) {
    endIfQueued(clone, timedOut ? timeout() : new IOException("Canceled"), true);
  }

  /**
   * Ends {@code clone} if it waits in OkHttp's queue: {@code failure} is told the callback now, not
   * when a slot frees, and the clone's own run, once one does, sends nothing and is not heard.
   * {@code cancel}: the clone is cancelled too, the call's deadline or cancel having ended it; not
   * for a clone that only tells the callback what the engine decided (a cancel during the wait, the
   * breaker's or the rate limit's refusal), whose cancel would make the call cancelled.
   */
  private void endIfQueued(Call clone, IOException failure, boolean cancel) {
    // OkHttp's locks are never taken while this one is held: queued() first.
    if (dispatcher == null || executorShutDown() || !queued(clone)) {
      return;
    }
    synchronized (this) {
      if (done || inFlight != clone || cloneBegun) {
        return; // it ended, or it left the queue meanwhile and its attempt began
      }
      inFlight = null; // the interceptor no longer begins it (beginClone)
      retrier.attempts().put(clone, new ManagedAttempts.Expired(this));
    }
    Throwable listenerThrew = null;
    if (cancel) {
      // When a slot frees it runs, cancelled: nothing is sent, and its callback is not heard.
      // What the application's EventListener.canceled throws leaves once the telling is handed
      // over (cancelAtCallTimeout); before, the callback was told by our failure's path instead,
      // the listener's exception said as the agent's internal error.
      try {
        clone.cancel();
      } catch (RuntimeException | Error thrown) {
        listenerThrew = thrown;
      }
    }
    try {
      // The clone holds no dispatcher thread: one of the dispatcher's own tells the callback
      // (never the thread that cancels: it may hold the dispatcher's lock, in cancelAll()). Shut
      // down meanwhile, or saturated (a bounded pool's refusal): a thread of ours, or this one
      // when the scheduler refuses too, as OkHttp tells a call its executor refused on the thread
      // that handed it over. Thrown from here, the refusal went to the callers' catch, which told
      // the agent's own error instead ("could not enqueue a retry").
      handOver(() -> tellEndedInQueue(clone, failure), true);
    } finally {
      leaveAsUncaught(listenerThrew);
    }
  }

  /**
   * The callback hears {@code failure} for a clone {@link #endIfQueued} ended, on a thread of the
   * dispatcher's (or the scheduler's). Nothing reached the server: no outcome for the breaker (its
   * permit goes back), the retry goes back to the host's budget, and the give-up is logged as
   * call-timeout, or cancelled (a call the engine ended already: nothing left to give back). What
   * fails here (the engine's bug, the call's context) still tells the callback, once, {@code
   * failure}; before, the task ended and the callback was never called.
   */
  private void tellEndedInQueue(Call clone, IOException failure) {
    try {
      // What the clone's run would have told (attempt): a late wait's end past the call's timeout
      // is "timeout", after a cancel "Canceled". Before, queued behind the host's taken slots, the
      // callback heard the failure of before the wait after its own cancel or past its timeout,
      // and the listeners a give-up that said otherwise.
      IOException heard = heardAtEnd(clone, failure);
      retryCall.attemptNotSent();
      retryCall.onAbandoned();
      deliverFailure(heard);
    } catch (RuntimeException | Error bug) {
      endQuietlyWithOwnFailure("ending a retry queued in OkHttp's dispatcher", bug, failure, false);
    }
  }

  /** True while {@code clone} waits in its dispatcher's queue, OkHttp's (not a retry's) wait. */
  private boolean queued(Call clone) {
    try {
      return dispatcher.queuedCalls().contains(clone);
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  /** The interceptor begins {@code clone}'s attempt, unless {@link #endIfQueued} ended it. */
  private synchronized boolean beginClone(Call clone) {
    if (inFlight != clone) {
      return false;
    }
    cloneBegun = true;
    retrier.takeGiveBack(this); // the outcome before this retry: the retry is made, not needed
    return true;
  }

  /**
   * What {@link #enqueue} kept of the attempt before the retry {@code clone} (a copy of its
   * response, or its failure), taken now that the clone ended without beginning (refused, dropped,
   * or answered ahead of the agent's interceptor); null when none, or the call ended.
   */
  private Object outcomeBefore(Call clone) {
    synchronized (this) {
      return clone == original || done ? null : retrier.takeGiveBack(this);
    }
  }

  /**
   * The retry's clone was refused or dropped by the dispatcher's executor before anything of it
   * went out ({@link #tellDropped}, {@link AttemptCallback}'s refusal): without the agent the
   * callback had the attempt before it, {@code before} ({@link #outcomeBefore}), and hears it now:
   * that response (a copy, its body whole) on a dispatcher thread, or here when the executor
   * refuses (shut down), as {@link #endWithEarlierOutcome} tells it after a shutdown during the
   * wait; or that failure, with the earlier attempts'. The retry is not counted as made (its
   * budget, rate-limit permit and breaker permit back, no host failure: {@link
   * RetryCall#retryRefused}), given up as cancelled. Before, the callback heard OkHttp's refusal,
   * "executor rejected", a failure the call never had without the agent.
   */
  private void endWithOutcomeBefore(Object before) {
    if (before instanceof Response) {
      Response copy = (Response) before;
      retryCall.retryRefused(copy.code(), null);
      giveBack(original, copy);
      return;
    }
    IOException failure = (IOException) before;
    Throwable heard = retryCall.retryRefused(0, failure);
    deliverFailure(heard instanceof IOException ? (IOException) heard : failure);
  }

  /** Inside OkHttp's run of {@code attempt}: the agent's interceptor makes the attempt. */
  Response attempt(Interceptor.Chain chain, ManagedAttempts.Attempt attempt) throws IOException {
    if (attempt instanceof ManagedAttempts.GiveBack) {
      return ((ManagedAttempts.GiveBack) attempt).response;
    }
    if (attempt instanceof ManagedAttempts.Expired) {
      // Ended in the queue (endIfQueued): its run, once a slot frees, is never heard, and the
      // call's end is told (and decided) by the task endIfQueued handed it to. Before, a run that
      // came first decided a late wait's end as cancelled (its "Canceled"), or at the call's
      // timeout, cancelling the call, and the callback heard "Canceled" for it.
      throw attempt.failure;
    }
    if (attempt.failure != null) {
      throw heardAtEnd(chain.call(), attempt.failure);
    }
    if (chain.call() == original) {
      markRunning();
    } else if (!beginClone(chain.call())) {
      throw new IOException("Canceled"); // ended in the queue (endIfQueued): never heard
    }
    if (attempt instanceof ManagedAttempts.PermitWait) {
      attempt = permitThenBegin(chain.call(), (ManagedAttempts.PermitWait) attempt);
      if (attempt.failure != null) {
        throw attempt.failure;
      }
    }
    // In the call's context (its tracing): the interceptors after this one and the network see it.
    CallContext.Scope scope = retryCall.enterContext(false);
    try {
      return retrier
          .interceptor()
          .proceed(
              chain,
              info.forAttempt(chain.request(), attempt.number),
              attempt.timeoutNanos,
              retryCall);
    } finally {
      retryCall.leaveContext(scope);
    }
  }

  /**
   * What the callback hears for {@code failure}, the call's end the engine decided, told through
   * {@code call} (a clone's run, a clone ended in OkHttp's queue, or here when no clone could be
   * made), the same on each way: for a late wait's end ({@link #retryAfterWait}) past the call's
   * timeout, OkHttp's "timeout", the call cancelled as its timeout cancels it (as {@link
   * #tellGivenBack} tells a response then; OkHttp tells a call its timeout cancelled so, whoever
   * cancelled after); else "Canceled" after a cancel ({@link #heardAfterCancel}), also one that
   * comes as the end is decided; else {@code failure}. The end is decided as it is heard ({@link
   * #settleLateEnd}).
   */
  private IOException heardAtEnd(Call call, IOException failure) {
    if (isLateEndPending() && pastCallTimeout()) {
      leaveAsUncaught(cancelAtCallTimeout());
      InterruptedIOException timeout = timeout();
      settleLateEndTelling(timeout);
      return timeout;
    }
    IOException heard = heardAfterCancel(call, failure);
    if (!settleLateEndTelling(heard)) {
      heard = new IOException("Canceled"); // a cancel came as the end was decided
    }
    return heard;
  }

  /**
   * {@link #settleLateEnd} where the callback is told next and nothing above would catch what it
   * throws (the application's listeners may throw an {@code Error}): OkHttp 3.12's run of a call
   * catches only an {@code IOException}, a task on a dispatcher thread nothing, and the callback
   * was never told. Said as our own failure, the call abandoned; the callback hears what it would
   * have ("Canceled" after a cancel: false).
   */
  private boolean settleLateEndTelling(IOException heard) {
    try {
      return settleLateEnd(heard);
    } catch (RuntimeException | Error bug) {
      engine.internalError(
          "ending a call after a late retry wait", bug, "the call ends as its callback hears it");
      boolean asCancel;
      synchronized (this) {
        asCancel = lateEndAsCancel;
      }
      try {
        if (!asCancel) {
          // Not ended yet (our own failure before the engine decided): no reason it did not have.
          retryCall.retryNotScheduled(heard);
        }
        retryCall.onAbandoned();
      } catch (RuntimeException | Error ignored) {
        // the callback is told all the same
      }
      // What the end was decided as, not whether a cancel came since: the callback hears what the
      // listeners heard (or were about to). Before, a cancel that came after the deadline's end was
      // decided (and a listener threw) made the callback hear "Canceled", the listeners the
      // deadline.
      return !asCancel || isCancel(heard);
    }
  }

  private synchronized boolean isLateEndPending() {
    return lateEndPending;
  }

  /**
   * Decides the call's end after a retry's wait that ended past the deadline ({@link
   * #retryAfterWait}), where the callback hears of it, {@code heard}, so that the listeners hear
   * what it hears: "Canceled", and the retry is forgone as cancelled; OkHttp's timeout, and the
   * call is abandoned (at its call timeout); anything else (null: a response), the outcome of
   * before the wait, and the retry is not made, given up at the deadline. False when a cancel came
   * meanwhile and the retry was forgone as cancelled: the caller tells "Canceled" instead. True
   * otherwise, or when no such end waits to be decided (then nothing happens).
   */
  private boolean settleLateEnd(IOException heard) {
    synchronized (this) {
      if (!lateEndPending) {
        return true;
      }
      lateEndPending = false;
    }
    if (!isCancel(heard)) {
      if (!getAsBoolean() && retryCall.retryTooLate()) {
        return true;
      }
      synchronized (this) {
        lateEndAsCancel = true; // first: what a listener throws below leaves it so decided
      }
      retryCall.retryForgone(new IOException("Canceled"));
      return false;
    }
    if ("Canceled".equals(heard.getMessage())) {
      // Not onAbandoned: it reads the caller's timeout on the engine's clock, and would say
      // call-timeout for a cancel the callback hears as "Canceled" once that clock is past it.
      retryCall.retryForgone(heard);
    } else {
      retryCall.onAbandoned();
    }
    return true;
  }

  /**
   * Whether the callback hearing {@code e} hears that the call was cancelled, or that its call
   * timeout ran out: OkHttp's own exception for it, exactly (a read timeout's {@code
   * SocketTimeoutException: timeout} is an attempt's failure).
   */
  private static boolean isCancel(IOException e) {
    return e != null
        && ("Canceled".equals(e.getMessage())
            || (e.getClass() == InterruptedIOException.class && "timeout".equals(e.getMessage())));
  }

  /**
   * What the callback hears for {@code failure}, the call's end the engine decided (a retry's wait
   * that ended late, the rate limit's or the breaker's refusal), told through {@code call}: {@code
   * Canceled} when the application cancelled the call (or that telling's clone, when it held the
   * call's cancel) before OkHttp ran the telling, as OkHttp tells a call cancelled before it ran;
   * before, the callback heard the attempt's failure of before the wait (a reset) though its cancel
   * came first. The call's own timeout, which cancels it too, stays what it is: it came first.
   */
  private IOException heardAfterCancel(Call call, IOException failure) {
    if (!(call.isCanceled() || getAsBoolean())
        || (failure.getClass() == InterruptedIOException.class
            && "timeout".equals(failure.getMessage()))
        || "Canceled".equals(failure.getMessage())) {
      return failure;
    }
    return new IOException("Canceled");
  }

  /**
   * The first attempt's wait for its permit, on the dispatcher thread that runs it, then what
   * {@link #nextAttempt} does after a wait: a cancel (or the call's timeout, which cancels it) ends
   * the wait and the call, the breaker has its say, the attempt begins. Returns what the attempt is
   * now, also for its callback.
   */
  private ManagedAttempts.Attempt permitThenBegin(Call call, ManagedAttempts.PermitWait waiting) {
    ManagedAttempts.Attempt next;
    // A refusal (or a cancel) here is told the listeners as the callback hears it, which OkHttp
    // may turn into its "timeout" (endHeard).
    retryCall.holdEnd(true);
    try {
      long left = waiting.permitAtNanos - engine.clock().nanoTime();
      while (left > 0) {
        Waits.untilCancelled(engine.sleeper(), engine.clock(), this).sleep(left);
        // A 429 pause that began during the wait holds this attempt too.
        left = getAsBoolean() ? 0 : retryCall.reservePermitAfterWait();
      }
      // A cancel: OkHttp reports it as it reports a call cancelled before it sent anything (a
      // timeout becomes its "timeout").
      next = begin(getAsBoolean());
    } catch (RateLimitedException e) {
      next = new ManagedAttempts.Attempt(this, 0, -1, e); // the call is over, as in next()
    } catch (InterruptedException e) {
      // The dispatcher's thread was interrupted (its executor shut down now): as OkHttp's own
      // I/O reports it, with the flag set.
      Thread.currentThread().interrupt();
      retryCall.onAbandoned();
      InterruptedIOException ie =
          new InterruptedIOException("retry-agent: interrupted while waiting for a permit");
      ie.initCause(e);
      next = new ManagedAttempts.Attempt(this, 0, -1, ie);
    } finally {
      retryCall.holdEnd(false);
    }
    retrier.attempts().put(call, next);
    return next;
  }

  /**
   * Waits {@code delayNanos} on the engine's scheduler, then {@link #run} goes on: after a retry's
   * wait ({@code isRetry}) with the rate limit and the attempt ({@link #next}), after the rate
   * limit's wait with a look at the host's 429 pause and the attempt ({@link #next} too). Returns
   * false when the scheduler refused a retry's wait: the caller ends the call ({@link
   * #retryLater}); a rate-limit wait refused ends the call here ({@link
   * RetryCall#permitWaitNotScheduled}).
   */
  private boolean schedule(long delayNanos, boolean isRetry) {
    synchronized (this) {
      if (done) {
        return true;
      }
      try {
        // Under the lock, so the task cannot run before pending and the count say it waits.
        pending = engine.scheduler().schedule(this, delayNanos);
      } catch (RuntimeException | Error refused) {
        pending = null;
        if (isRetry) {
          // A retry at once would skip its backoff, and each one after it too, reaching a failing
          // host as fast as it fails: the call ends with the attempt's outcome (retryLater).
          engine.internalError(
              "scheduling a retry's wait", refused, "the call ends with that attempt's outcome");
          return false;
        }
        // A retry's wait for its rate-limit permit (a first attempt waits on its dispatcher
        // thread). Made at once, the attempt would go over the host's limit, and so would every
        // call while the scheduler refuses: the call ends as one the limit gives no permit, below.
        engine.internalError(
            "scheduling a rate-limit wait",
            refused,
            "the call ends as one the rate limit gives no permit, not over the limit");
      }
      if (pending != null) {
        pendingIsRetry = isRetry;
        if (isRetry) {
          engine.asyncRetryScheduled();
        }
        return true;
      }
    }
    // As next() tells a permit refused: the engine's lock, then OkHttp's, never under this one.
    RateLimitedException e;
    retryCall.holdEnd(true); // told as the callback hears it (endHeard)
    try {
      e = retryCall.permitWaitNotScheduled();
    } finally {
      retryCall.holdEnd(false);
    }
    Object kept = retrier.takeGiveBack(this); // kept for the wait (next)
    if (retryCall.permitRefusedRetry()) {
      endAsNotRetried(kept instanceof Response ? kept : null); // as next() ends one
      return true;
    }
    Call call = attemptCallOrTell(e);
    if (call != null) {
      failThrough(call, e);
    }
    return true;
  }

  /**
   * The response of the attempt before a retry's wait is released ({@link #retryLater}): a wait
   * that ended meanwhile goes on now, on the scheduler as at a wait's end (or here, if it refuses:
   * the wait is over).
   */
  private void released() {
    synchronized (this) {
      releasing = false;
      if (!endedWhileReleasing) {
        return;
      }
      endedWhileReleasing = false;
      try {
        pending = engine.scheduler().schedule(this, 0); // pendingIsRetry as it was
        return;
      } catch (RuntimeException | Error refused) {
        // goes on here, below
      }
      engine.asyncRetryDone();
    }
    retryAfterWait();
  }

  /** A wait {@link #schedule}d is over, on the scheduler's thread. */
  @Override
  public void run() {
    try {
      afterWait();
    } catch (RuntimeException | Error bug) {
      // The attempt before a retry's wait was released: what is left to tell is the failure.
      try {
        endWithOwnFailure(
            "going on after a wait", bug, "the call ends with that failure", null, null, true);
      } catch (IOException never) {
        // only onResponse throws one, and there is no response to give
      }
    }
  }

  private void afterWait() {
    boolean retry;
    synchronized (this) {
      if (pending == null) {
        return; // cancelled meanwhile
      }
      pending = null;
      if (releasing) {
        endedWhileReleasing = true; // released() goes on (a cancel meanwhile is heard there)
        return;
      }
      retry = pendingIsRetry;
      if (retry) {
        engine.asyncRetryDone();
      }
    }
    if (retry) {
      retryAfterWait();
    } else {
      Object kept = retrier.takeGiveBack(this);
      next(true, kept instanceof Response || kept instanceof IOException ? kept : null);
    }
  }

  /**
   * A retry's wait is over: the retry goes on, unless the wait ended past the call's deadline (the
   * JVM or the scheduler held up, RetryCall.retryTooLate), where it would start with no time left
   * and no chance. The call then ends with the attempt's failure as the client gave it, or the copy
   * of the response released for the retry ({@link #keepCopy}), or the engine's exception when none
   * was kept, told on a dispatcher thread as the rate limit's refusal is, and nothing is sent.
   */
  private void retryAfterWait() {
    Object kept = retrier.takeGiveBack(this);
    // A copy, or the response itself (Kept); not a failure kept for the wait (retryLater).
    Object response = kept instanceof Response || kept instanceof Kept ? kept : null;
    try {
      if (!getAsBoolean() && pastCallTimeout()) {
        releaseKept(response);
        endAtCallTimeout(); // before the deadline's give-back: OkHttp would have ended it first
        return;
      }
      if (dispatcher != null
          && !getAsBoolean()
          && retryCall.retryPastDeadline()
          && !executorShutDown()) {
        // Too late to retry: the call ends with the attempt before the wait, told on a dispatcher
        // thread (the copy) or through a clone OkHttp runs (the failure), where a cancel that
        // comes meanwhile is heard as "Canceled". The end is decided there, so that what the
        // listeners hear (the give-up's reason, the dead letter, the counters) is what the
        // callback hears; decided here, they said the deadline where it heard "Canceled".
        synchronized (this) {
          lateEndPending = true;
        }
        endAsNotRetried(response);
        return;
      }
      boolean tooLate;
      retryCall.holdEnd(true); // a retry not made is told as the callback hears it (endHeard)
      try {
        tooLate = retryCall.retryTooLate();
      } finally {
        retryCall.holdEnd(false);
      }
      if (!tooLate) {
        if (kept != null && !getAsBoolean() && executorShutDown()) {
          endWithEarlierOutcome(response);
          return;
        }
        // The failure kept for the wait goes on too: the retry's clone, refused, ends with it.
        next(false, kept instanceof IOException ? kept : response);
        return;
      }
      endAsNotRetried(response);
    } catch (RuntimeException | Error bug) {
      releaseKept(response); // unless given or released already
      throw bug;
    }
  }

  /**
   * The retry decided is not made (its wait ended past the deadline, or the rate limit gave it no
   * permit): the call ends with the attempt's failure as the client gave it, or {@code kept}, the
   * response kept through the wait ({@link Kept}) or the copy of the one released for the retry, or
   * the engine's exception when none was kept, told on a dispatcher thread as the rate limit's
   * refusal is, and nothing is sent.
   */
  private void endAsNotRetried(Object kept) {
    Call from = kept instanceof Kept ? ((Kept) kept).attempt : original;
    Throwable late = retryCall.lateRetryFailure();
    // OkHttp fails an attempt with an IOException only: anything else is not an attempt's outcome.
    IOException e = late instanceof IOException ? (IOException) late : new IOException(late);
    Response copy = takeResponse(kept);
    if (copy != null && dispatcher != null) {
      giveBack(from, copy);
      return;
    }
    if (copy == null && executorShutDown()) {
      // The application shut the dispatcher's executor down: OkHttp would refuse the clone that
      // tells the failure, and the callback heard its "executor rejected", a failure the call
      // never had. Told here, the agent's thread, as endWithEarlierOutcome tells it: the
      // dispatcher has none left (a copy tries it first, in giveBack).
      deliverFailure(e);
      return;
    }
    Call call = attemptCallOrTell(e);
    if (call != null && copy != null) {
      // No dispatcher known (AsyncRetrier.enqueue by hand without it): OkHttp's run of a clone
      // tells the copy, on a dispatcher thread, through the interceptors ahead of ours again.
      enqueue(call, new ManagedAttempts.GiveBack(this, e, copy));
    } else if (call != null) {
      // Dropped unrun by the executor, it is told with e all the same, as when shut down before.
      enqueue(call, new ManagedAttempts.Attempt(this, 0, -1, e), false);
    } else if (copy != null) {
      // No clone to tell it through: the callback heard the failure (attemptCallOrTell).
      release(copy);
    }
  }

  /**
   * True once the call's own timeout ({@code callTimeout}, a deadline set on its {@code timeout()})
   * has run out: without the agent OkHttp would have ended the call by now. The engine decides no
   * wait that ends past it, so only a late one gets here (a scheduler held up, a paused JVM).
   */
  private boolean pastCallTimeout() {
    long deadline;
    synchronized (this) {
      deadline = callDeadline;
    }
    return deadline != RetryInterceptor.NO_DEADLINE && System.nanoTime() - deadline >= 0;
  }

  /**
   * A retry's wait ended past the call's own timeout ({@link #pastCallTimeout}): the call ends as
   * OkHttp ends a call its timeout ran out on, cancelled, its callback told {@code
   * InterruptedIOException: timeout} on a dispatcher thread, and the retry is not made (nothing is
   * sent, given up as call-timeout). Before, the retry's clone was enqueued with its deadline past:
   * the application's interceptors saw it, it raced OkHttp's timeout to the wire, and the callback
   * could hear its answer, past the call's timeout; a response given back after a late wait was
   * told past it too.
   */
  private void endAtCallTimeout() {
    if (isDone()) {
      return;
    }
    retryCall.onAbandoned();
    Throwable listenerThrew = cancelAtCallTimeout();
    InterruptedIOException timeout = timeout();
    if (dispatcher == null) {
      Call call = attemptCallOrTell(timeout);
      if (call != null) {
        failThrough(call, timeout);
      }
    } else {
      // Shut down meanwhile, the executor refuses it: told here, no dispatcher thread is left.
      handOver(() -> tellTimedOut(timeout), false);
    }
    leaveAsUncaught(listenerThrew);
  }

  /**
   * The call's own timeout ran out, on okio's watchdog ({@link WaitTimeout}): if the call waits for
   * a retry (or its permit), the wait ends now and the call as OkHttp ends one its timeout ran out
   * on ({@link #endAtCallTimeout}), told at the timeout, not when a late wait ends (the agent's
   * scheduler held up). An attempt in flight is OkHttp's to end (the clone has the deadline); a
   * wait whose task runs already looks at the timeout itself ({@link #retryAfterWait}).
   */
  void callTimedOut() {
    // Read before the lock: OkHttp's own locks are never taken while this one is held.
    boolean cancelledFirst = getAsBoolean();
    synchronized (this) {
      if (cancelledFirst && lateEndPending && !done) {
        // The application cancelled the call within its timeout, while a late wait's end was on
        // its way to the callback (held by the dispatcher's executor): plain OkHttp ends a call at
        // its cancel, which exits its timeout, so the callback hears "Canceled" (heardAtEnd,
        // tellGivenBack). Before, told past the timeout, it heard "timeout", the listeners the
        // call timeout.
        callDeadline = RetryInterceptor.NO_DEADLINE;
        return;
      }
      if (done || cancelled || pending == null || !pending.cancel()) {
        return;
      }
      pending = null;
      if (pendingIsRetry) {
        engine.asyncRetryDone();
      }
    }
    synchronized (this) {
      Object kept = retrier.takeGiveBack(this);
      if (kept instanceof Kept) {
        // Released as the call ends (finish), off the watchdog: a release may read its body.
        retrier.keepGiveBack(this, kept);
      }
    }
    // Off the watchdog, which serves every OkHttp timeout of the JVM: the call's end runs the
    // listeners, the application's EventListener as the call is cancelled, and its callback. On a
    // dispatcher thread; on the agent's scheduler when the dispatcher's executor refuses (shut
    // down meanwhile) or runs the task on the thread that hands it over (a direct executor).
    // Before, both ran the call's end, the callback included, on the watchdog.
    Thread watchdog = Thread.currentThread();
    Runnable end =
        () -> {
          if (Thread.currentThread() == watchdog) {
            endAtCallTimeoutOnScheduler();
          } else {
            endAtCallTimeoutFromWatchdog();
          }
        };
    HandOver once = new HandOver(end); // a drop of it is told too (watchHandOver)
    try {
      dispatcher.executorService().execute(once);
    } catch (RuntimeException | Error refused) {
      if (once.get()) {
        throw refused; // it ran here (a CallerRunsPolicy): what it threw, not a refusal
      }
      once.run(); // on the agent's scheduler (endAtCallTimeoutOnScheduler), once
      return;
    }
    watchHandOver(once, once);
  }

  private void endAtCallTimeoutOnScheduler() {
    try {
      engine.scheduler().schedule(this::endAtCallTimeoutFromWatchdog, 0);
    } catch (RuntimeException | Error refused) {
      endAtCallTimeoutFromWatchdog(); // no thread of ours either: the call ends here, told once
    }
  }

  private void endAtCallTimeoutFromWatchdog() {
    try {
      endAtCallTimeout();
    } catch (RuntimeException | Error bug) {
      endQuietlyWithOwnFailure("ending a call at its call timeout", bug, timeout(), true);
    }
  }

  /**
   * OkHttp's call timeout kept through a call's waits for a retry, on okio's watchdog, the thread
   * OkHttp's own timeouts run on: OkHttp's timeout of the attempt before the wait ended with it,
   * and the wait runs on the agent's scheduler, which a held-up thread makes late. Made at a call's
   * first retry's wait when it has a timeout and its dispatcher is known, entered until the call
   * ends ({@link AsyncRetrier#watchCallTimeout}); never on a call not retried.
   */
  static final class WaitTimeout extends okio.AsyncTimeout {
    private final EnqueuedCall call;

    WaitTimeout(EnqueuedCall call) {
      this.call = call;
    }

    @Override
    protected void timedOut() {
      try {
        call.callTimedOut();
      } catch (RuntimeException | Error thrown) {
        // Never onto okio's watchdog: it would end its thread, and okio starts no other while its
        // queue holds timeouts, so no OkHttp call of the JVM would time out any more. What gets
        // here is what the application's callback threw (told on this thread only when no other
        // was left) or our own failure after it heard.
        leaveAsUncaught(thrown);
      }
    }
  }

  /**
   * {@code thrown} (null: nothing) goes where it goes as it leaves a thread, the current thread's
   * uncaught-exception handler, and the thread goes on: the application's own exception, thrown on
   * a thread of ours or okio's watchdog, or once the callback must still hear of the call.
   */
  static void leaveAsUncaught(Throwable thrown) {
    if (thrown == null) {
      return;
    }
    Thread t = Thread.currentThread();
    try {
      t.getUncaughtExceptionHandler().uncaughtException(t, thrown);
    } catch (RuntimeException | Error ignored) {
      // the handler's own failure: the thread must go on all the same
    }
  }

  /**
   * Cancels the call as OkHttp's timeout does (its {@code isCanceled()} says so), not as a cancel.
   * Returns what the application's {@code EventListener.canceled}, which OkHttp calls from {@code
   * cancel()} once the call is cancelled, threw (null: nothing): the caller tells the callback the
   * timeout first, then lets it go ({@link #leaveAsUncaught}), as without the agent it leaves
   * OkHttp's timeout, on another thread than the callback's. Before, it took the place of the
   * call's end: said as the agent's internal error, the application's exception never seen.
   */
  private Throwable cancelAtCallTimeout() {
    synchronized (this) {
      cancelled = true; // the agent's hook on cancel() finds it so: never told as "Canceled"
    }
    try {
      original.cancel();
      return null;
    } catch (RuntimeException | Error listenerThrew) {
      return listenerThrew;
    }
  }

  /** The callback hears the call's timeout, once, whatever fails here of ours. */
  private void tellTimedOut(IOException timeout) {
    try {
      deliverFailure(timeout);
    } catch (RuntimeException | Error bug) {
      endQuietlyWithOwnFailure("ending a call at its call timeout", bug, timeout, false);
    }
  }

  /**
   * The application shut the dispatcher's executor down during the retry's wait (OkHttp's way to
   * shut a client down): OkHttp would refuse the retry's clone ("executor rejected"), where without
   * the agent the call had the attempt's outcome. So the retry is not made (given up as cancelled,
   * as a retry decided after the shutdown is, back to the host's budget) and the call ends with
   * that outcome: {@code copy}, the response released for the retry, or else the attempt's failure
   * (with the earlier attempts', as the engine ends a call). Told on this thread, the agent's: the
   * dispatcher has none left (the copy tries it first, as {@link #giveBack} does). With neither (a
   * response that could not be copied), OkHttp's refusal as before.
   */
  private void endWithEarlierOutcome(Object kept) {
    Call from = kept instanceof Kept ? ((Kept) kept).attempt : original;
    Response copy = takeResponse(kept);
    if (copy != null) {
      retryCall.retryForgone(null);
      giveBack(from, copy);
      return;
    }
    Throwable earlier = retryCall.lateRetryFailure(); // the decision's failure: no copy, none kept
    IOException e =
        earlier instanceof IOException ? (IOException) earlier : new IOException(earlier);
    retryCall.retryForgone(e);
    deliverFailure(e);
  }

  /**
   * The call ends with {@code copy}, the response released for the retry, as if not retried: told
   * to the callback on one of the dispatcher's threads, as OkHttp tells a response (here, on the
   * scheduler's, when the dispatcher refuses: shut down meanwhile). Not through OkHttp's run of a
   * clone, as a failure is told ({@link #failThrough}): the copy came through the application's
   * interceptors ahead of ours already, and a clone's run would take it through them again.
   */
  private void giveBack(Call from, Response copy) {
    handOver(() -> tellGivenBack(from, copy), false);
  }

  /**
   * Runs {@code tell} on one of the dispatcher's threads ({@link #onDispatcherThread}), watched
   * ({@link #watchHandOver}): an executor that accepts it and then drops it unrun (its {@code
   * shutdownNow()}) has it run on the agent's thread once that executor has terminated. An executor
   * that refuses it (shut down, or saturated: its {@code RuntimeException}) has it run here, or on
   * the agent's scheduler when {@code refusedOnScheduler} (here when that refuses too). Run once,
   * never twice, by whichever (an application may run what {@code shutdownNow()} gave it back).
   * What {@code tell} throws when the executor runs it on this thread (a saturated pool's {@code
   * CallerRunsPolicy}) is its own, no refusal: it leaves, as it leaves the dispatcher's thread;
   * before, taken for a refusal, the telling ran again, unguarded (a copy released twice, the call
   * ended again). An {@code Error} of the executor's (out of threads) leaves too, to the caller's
   * own handling of it.
   */
  private void handOver(Runnable tell, boolean refusedOnScheduler) {
    HandOver once = new HandOver(tell);
    try {
      onDispatcherThread(once);
    } catch (RuntimeException | Error thrown) {
      if (once.get() || thrown instanceof Error) {
        throw thrown; // it ran: what it threw, not a refusal; or the executor's Error
      }
      if (refusedOnScheduler) {
        try {
          engine.scheduler().schedule(once, 0);
          return;
        } catch (RuntimeException noThread) {
          // told here
        }
      }
      once.run();
      return;
    }
    watchHandOver(once, once);
  }

  /**
   * A task of ours handed to the dispatcher's executor ({@link #handOver}): it runs once, by the
   * executor or by the watch of a drop; pending until then. Made only where a call's end is handed
   * over, never on a call that succeeds or whose retry runs.
   */
  private static final class HandOver extends AtomicBoolean implements Runnable, BooleanSupplier {
    private static final long serialVersionUID = 1L;
    private final transient Runnable tell;

    HandOver(Runnable tell) {
      this.tell = tell;
    }

    @Override
    public void run() {
      if (compareAndSet(false, true)) {
        tell.run();
      }
    }

    /** Not run yet. */
    @Override
    public boolean getAsBoolean() {
      return !get();
    }
  }

  /** How often {@link #watchHandOver} looks at the executor a call's end was handed to. */
  private static final long HAND_OVER_CHECK_NANOS = TimeUnit.SECONDS.toNanos(1);

  /**
   * How many times {@link #watchHandOver} looks before it stops (about a minute): an executor that
   * silently discards what it accepted (a {@code DiscardPolicy} on a full queue, a handler that
   * drops) never runs it and may never terminate, and a watch without end rescheduled itself every
   * second for ever, one task per call on the agent's scheduler (a storm of refused retries makes
   * many), holding the call and the response copy it would tell. The end was handed over past the
   * call's deadline already: an executor that has neither run it nor terminated a minute later has
   * discarded it or holds it on, and neither is told apart from outside while it goes on running
   * (telling it ourselves then could tell on the wrong thread what the executor still runs). The
   * watch lets go: the callback hears nothing, as plain OkHttp's does of a call its executor
   * discards, and the call stays counted running, as OkHttp's dispatcher counts that call.
   */
  private static final int HAND_OVER_LOOKS = 60;

  /**
   * Watches a hand-over of ours to the dispatcher's executor, the one way each is looked after: a
   * clone OkHttp hands it ({@link #enqueue}: a retry, or one that tells a cancel, a refusal, a late
   * wait's end) and a task of ours ({@link #handOver}: a response given back, a call's end at its
   * timeout, a clone ended in OkHttp's queue, our own failure's telling). An application's executor
   * that queues tasks drops the ones it never ran at its {@code shutdownNow()}: the callback was
   * never told, the call never ended (counted running for ever, its breaker trial and rate-limit
   * permit held). Looked at on the agent's scheduler while {@code pending} (not run, the call not
   * ended); once the executor has terminated with it so, nothing of the executor's will run it:
   * {@code tellHere} tells it, once, on the agent's thread, as a hand-over the executor refuses is.
   * OkHttp's own executor (no queue: it runs or refuses each task) drops nothing and is not
   * watched, nor is a task run as it was handed over. Only these paths pay for it, and for {@link
   * #HAND_OVER_LOOKS} looks at most.
   */
  private void watchHandOver(BooleanSupplier pending, Runnable tellHere) {
    ExecutorService executor = watchedExecutor();
    if (executor != null) {
      watchHandOver(executor, pending, tellHere);
    }
  }

  /**
   * The dispatcher's executor when a hand-over to it is watched ({@link #watchHandOver}), else
   * null: OkHttp's own (exactly a {@code ThreadPoolExecutor} on a {@code SynchronousQueue}) runs or
   * refuses each task, and drops none.
   */
  private ExecutorService watchedExecutor() {
    try {
      ExecutorService executor = dispatcher.executorService();
      if (executor.getClass() == ThreadPoolExecutor.class
          && ((ThreadPoolExecutor) executor).getQueue() instanceof SynchronousQueue) {
        return null;
      }
      return executor;
    } catch (RuntimeException | LinkageError e) {
      return null;
    }
  }

  /** {@link #watchHandOver} of a hand-over to {@code executor}, one {@link #watchedExecutor}. */
  private void watchHandOver(ExecutorService executor, BooleanSupplier pending, Runnable tellHere) {
    if (!pending.getAsBoolean()) {
      return; // run already (an executor that runs a task on the thread that hands it over)
    }
    Runnable watch =
        new Runnable() {
          private int looks; // this watch's own, not the call's: no field per call

          @Override
          public void run() {
            // Not isDone(): a task of ours may tell a call ended already (endWithOwnFailure's
            // finish() comes first), and that watch stopped at its first look, never telling.
            // A clone's pending says the call's end itself (stillHandedOver).
            if (told || !pending.getAsBoolean()) {
              return; // run by the executor, or the call told otherwise
            }
            if (executor.isTerminated()) {
              try {
                tellHere.run();
              } catch (RuntimeException | Error thrown) {
                leaveAsUncaught(thrown); // the application's callback's: the scheduler goes on
              }
              return;
            }
            if (++looks >= HAND_OVER_LOOKS) {
              return; // discarded, or held on: looked at no longer (HAND_OVER_LOOKS)
            }
            try {
              engine.scheduler().schedule(this, HAND_OVER_CHECK_NANOS);
            } catch (RuntimeException | Error refused) {
              // no thread of ours left to look with
            }
          }
        };
    try {
      engine.scheduler().schedule(watch, HAND_OVER_CHECK_NANOS);
    } catch (RuntimeException | Error refused) {
      // as above
    }
  }

  /** True while {@code clone}, handed to OkHttp, has neither begun nor ended: its run to come. */
  private synchronized boolean stillHandedOver(Call clone) {
    return !done && inFlight == clone && !cloneBegun;
  }

  /**
   * The dispatcher's executor dropped {@code clone}'s run unrun ({@link #watchHandOver}: it
   * terminated with it untold, its {@code shutdownNow()}): the clone is ended as one ended in
   * OkHttp's queue ({@link #endIfQueued}), its run (should the application run what its executor
   * gave back) never heard, and the callback told, once, what OkHttp tells a call that executor
   * refuses at its hand-over ({@link AttemptCallback}'s refusal): {@code InterruptedIOException:
   * executor rejected}, nothing sent; a retry's attempt not counted as made and the call given up
   * as cancelled (the application shut its client down), as a retry refused so is. Not {@code
   * asRefused} (the end of a call not retried, a late wait's or a refused permit's), its own
   * failure, the attempt's outcome of before the wait, as when the executor is shut down before
   * (9e9d98bc, {@link #endAsNotRetried}). Before, the callback never heard, and the call stayed
   * counted running, its breaker trial and rate-limit permit held, for good. A retry's clone whose
   * earlier outcome was kept ({@link #enqueue}), not cancelled since, ends with that outcome
   * instead, as without the agent ({@link #endWithOutcomeBefore}).
   */
  private void tellDropped(Call clone, ManagedAttempts.Attempt attempt, boolean asRefused) {
    Object before;
    synchronized (this) {
      if (done || inFlight != clone || cloneBegun) {
        return; // it ran after all
      }
      inFlight = null; // the interceptor no longer begins it (beginClone)
      retrier.attempts().put(clone, new ManagedAttempts.Expired(this));
      before = attempt.failure == null ? retrier.takeGiveBack(this) : null;
    }
    if (!asRefused && attempt.failure != null) {
      tellEndedInQueue(clone, attempt.failure);
      return;
    }
    IOException rejected = executorRejected();
    try {
      if (before != null && !getAsBoolean()) {
        endWithOutcomeBefore(before); // a retry's clone: the call ends as if not retried
        return;
      }
      if (attempt.failure == null) {
        // A retry's clone: its attempt never went out (as AttemptCallback's refusal). A clone that
        // tells an end the engine made (a cancel, a refusal) has it told as it was made.
        retryCall.attemptRefused();
        retryCall.onAbandoned();
      }
      deliverFailure(rejected);
    } catch (RuntimeException | Error bug) {
      endQuietlyWithOwnFailure("ending a retry its executor dropped", bug, rejected, false);
    }
  }

  /**
   * What OkHttp (3.12 to 5.x, {@code AsyncCall.executeOn}) tells a call its dispatcher's executor
   * refuses: {@code InterruptedIOException: executor rejected}, caused by the refusal.
   */
  private static InterruptedIOException executorRejected() {
    InterruptedIOException e = new InterruptedIOException("executor rejected");
    e.initCause(new RejectedExecutionException("dropped unrun by the dispatcher's executor"));
    return e;
  }

  /**
   * Runs {@code tell} on one of the dispatcher's threads, named as OkHttp names the thread that
   * runs a call ({@link OkHttpThreadName}): what the callback sees there is what it sees without
   * the agent. Throws what the executor throws when it refuses (shut down).
   */
  private void onDispatcherThread(Runnable tell) {
    dispatcher.executorService().execute(() -> OkHttpThreadName.run(original, tell));
  }

  /**
   * Tells {@code copy} as OkHttp's run of a call tells a response ({@code RealCall.AsyncCall}, 3.12
   * to 5.x): what the application's {@code onResponse} throws never reaches its {@code onFailure};
   * an {@code IOException} is logged as OkHttp logs it ({@link CallbackFailureLog}), anything else
   * cancels the call ({@link #callOnResponse}) and leaves the task, onto the thread that runs it,
   * but an {@code InterruptedException} on OkHttp 5.2 on ({@link OkHttpCallbacks#KEEP_INTERRUPTS}).
   * Before, the {@code IOException} was said nowhere, and an {@code InterruptedException} left on
   * every version, the call not cancelled. A failure of ours before the callback heard of the call
   * ends it with {@code copy} all the same ({@link #endWithOwnFailure}), the callback told once.
   */
  private void tellGivenBack(Call from, Response copy) {
    if (pastCallTimeout()) {
      // The call's timeout ran out while the copy was on its way here: OkHttp fails a response
      // that comes after its timeout cancelled the call ("timeout"), so the callback hears that.
      release(copy);
      Throwable listenerThrew = cancelAtCallTimeout();
      tellTimedOut(timeout());
      leaveAsUncaught(listenerThrew);
      return;
    }
    if (getAsBoolean() || !settleLateEndTelling(null)) {
      // The application cancelled the call while the copy was on its way here (its timeout is
      // ruled out above): OkHttp fails a response that comes after a cancel, before its callback
      // hears it, so the callback hears "Canceled". Before, it heard the response of before the
      // wait though its cancel came first. The call's end is decided here (settleLateEnd, also
      // when the cancel comes as it is decided): given up as cancelled, as the callback hears.
      release(copy);
      deliverFailure(new IOException("Canceled"));
      return;
    }
    try {
      try {
        Runnable fault = givingBack;
        if (fault != null) {
          fault.run();
        }
        deliverResponse(from, copy);
      } catch (RuntimeException | Error bug) {
        if (told) {
          throw bug; // the application's onResponse threw it: the call is cancelled, it leaves
        }
        // Our own, before the callback heard of the call: it hears all the same, once. Before,
        // the failure left the task onto the dispatcher's thread and the callback never heard.
        endWithOwnFailure(
            "giving back a response after a late wait",
            bug,
            "the call ends with that response",
            from,
            copy,
            false);
      }
    } catch (IOException fromCallback) {
      CallbackFailureLog.log(original, fromCallback);
    } catch (RuntimeException | Error fromCallback) {
      throw fromCallback;
    } catch (Exception sneaky) {
      // A checked exception onResponse threw sneakily (the call is cancelled). OkHttp 5.2 on
      // keeps an InterruptedException from its thread, the interrupt flag set for it; before,
      // and anything else, it leaves as any other.
      if (sneaky instanceof InterruptedException && OkHttpCallbacks.KEEP_INTERRUPTS) {
        Thread.currentThread().interrupt();
        return;
      }
      throw OkHttpCallbacks.<RuntimeException>unchecked(sneaky);
    }
  }

  /**
   * Test only: run as a response is given back after a late wait, before the callback hears it (a
   * failure of ours there). Null outside the tests; read only on that path.
   */
  static volatile Runnable givingBack;

  /**
   * Keeps a copy of {@code response}, about to be released for the retry whose wait is scheduled,
   * for a wait that ends past the deadline ({@link #retryAfterWait}). None when the response cannot
   * be copied cheaply, or its body fails as it is read (released as before either way), or the call
   * ended meanwhile.
   */
  private void keepCopy(Response response) {
    Response copy = copyOf(response);
    if (copy == null) {
      return;
    }
    synchronized (this) {
      if (!done) {
        retrier.keepGiveBack(this, copy); // a call that ends from now on drops it (finished)
      }
    }
  }

  /** {@link #keepCopy}'s copy of {@code response}, or null. */
  private Response copyOf(Response response) {
    try {
      return RetryInterceptor.ACCESS.copyToGiveBack(response);
    } catch (IOException | RuntimeException e) {
      return null; // the body failed as it was read: the release ends it as before
    } catch (LinkageError | StackOverflowError bug) {
      engine.internalError(
          "copying a response before its retry's wait", bug, "the call goes on without a copy");
      return null;
    }
  }

  /**
   * A response kept unreleased through a retry's short wait on a route the rate limit governs, or
   * near the deadline ({@link RetryCall#keepThroughWait}), as the synchronous loop keeps it: the
   * retry's permit is asked for before it goes, and a refusal (or a wait that ends late) ends the
   * call with it, whatever its body's size, where a body over 8 KiB, released with no copy, ended
   * it with the rate limit's exception. Taken once ({@link #take}): by whoever gives it to the
   * callback or releases it, so that it is never both, nor released twice.
   */
  static final class Kept {
    final Call attempt;
    private Response response;

    Kept(Call attempt, Response response) {
      this.attempt = attempt;
      this.response = response;
    }

    /** The response, once; null after. */
    synchronized Response take() {
      Response r = response;
      response = null;
      return r;
    }
  }

  /**
   * Keeps {@code response}, of the attempt {@code call}, unreleased for the retry whose wait is
   * scheduled ({@link Kept}); false when the call ended meanwhile (the caller releases it).
   */
  private boolean keepThroughWait(Call call, Response response) {
    synchronized (this) {
      if (done) {
        return false;
      }
      retrier.keepGiveBack(this, new Kept(call, response)); // released by finish() if not taken
      return true;
    }
  }

  /** Releases what {@code kept} holds when it is a response kept unreleased ({@link Kept}). */
  private void releaseKept(Object kept) {
    if (kept instanceof Kept) {
      Response r = ((Kept) kept).take();
      if (r != null) {
        release(r);
      }
    }
  }

  /** The response {@code kept} (a copy, or a {@link Kept} one, taken now) stands for, or null. */
  private static Response takeResponse(Object kept) {
    if (kept instanceof Kept) {
      return ((Kept) kept).take();
    }
    return kept instanceof Response ? (Response) kept : null;
  }

  /**
   * The retry's permit is granted: {@code held} is released for it, as at the decision otherwise, a
   * copy taken first (as {@link #keepCopy} takes one at the decision), for a wait for the permit
   * that ends in a refusal, or a retry's clone the dispatcher's executor refuses. Returns the copy,
   * or null.
   */
  private Response letGo(Kept held) {
    Response r = held.take();
    if (r == null) {
      return null;
    }
    Response c = copyOf(r);
    releaseForRetry(r);
    AttemptLeftovers.drop(held.attempt); // its run is over: the call object waits, not its state
    return c;
  }

  /**
   * The application cancelled the call ({@code Call.cancel()}, or {@code Dispatcher.cancelAll()}).
   * The attempt in flight is cancelled, and its failure reaches the callback from OkHttp; a wait is
   * ended, and "Canceled" reaches the callback from a dispatcher thread, never inside {@code
   * cancel()}. The original's own {@code cancel()} runs after this.
   */
  void cancel() {
    Call attempt;
    boolean wasWaiting = false;
    synchronized (this) {
      if (cancelled || done) {
        return;
      }
      cancelled = true;
      attempt = inFlight;
      if (pending != null && pending.cancel()) {
        pending = null;
        wasWaiting = true;
        if (pendingIsRetry) {
          engine.asyncRetryDone();
        }
      }
    }
    if (attempt != null && attempt != original) {
      Throwable listenerThrew = null;
      try {
        attempt.cancel();
      } catch (RuntimeException | Error e) {
        // The application's EventListener.canceled, for the clone: out of here before the clone
        // was ended, the callback heard of the cancel only when a slot came free.
        listenerThrew = e;
      }
      try {
        // A clone OkHttp holds in its queue would hear of the cancel only when a slot frees.
        endIfQueued(attempt, false);
      } catch (RuntimeException | Error bug) {
        // The dispatcher's executor out of threads (an Error), and the scheduler refusing too.
        endInCancel("ending a retry queued in OkHttp's dispatcher after a cancel", bug, true);
      }
      // Not back into the application's cancel(): the original's own cancel runs after this, and
      // its listener tells the application what it tells it without the agent.
      leaveAsUncaught(listenerThrew);
    }
    if (wasWaiting) {
      Throwable refused;
      // Not on this thread: cancel() may run inside the dispatcher's lock (cancelAll), where
      // OkHttp must not be asked to enqueue.
      try {
        engine.scheduler().schedule(this::nextAttemptAfterCancel, 0);
        return;
      } catch (RuntimeException | Error e) {
        refused = e;
      }
      // No thread of ours to tell the callback from: one of the dispatcher's, as for a clone.
      if (dispatcher != null) {
        try {
          dispatcher.executorService().execute(this::nextAttemptAfterCancel);
          return;
        } catch (RuntimeException | Error e) {
          refused = e; // shut down (RejectedExecutionException), or out of threads
        }
      }
      // No thread at all: the callback hears Canceled here, as OkHttp tells a call its shut-down
      // executor refused on the thread that enqueued it; before, the refusal left cancel().
      endInCancel("going on after a cancel", refused, false);
    }
  }

  /**
   * Ends the call from inside {@link #cancel} with {@code Canceled}, {@code bug} said once:
   * OkHttp's {@code cancel()} never throws, so nothing leaves here, not even what the callback
   * throws if it is told on this thread (no other would take the telling), which is dropped.
   */
  private void endInCancel(String where, Throwable bug, boolean onDispatcher) {
    try {
      endQuietlyWithOwnFailure(where, bug, new IOException("Canceled"), onDispatcher);
    } catch (RuntimeException | Error dropped) {
      // told already, or the application's callback threw: cancel() returns all the same
    }
  }

  /**
   * {@link #nextAttempt} after a cancel ended the wait, the task {@link #cancel} schedules: what
   * fails in it (the engine's bug as the call is abandoned, the call's context) ends the call with
   * {@code Canceled}, told once, as OkHttp tells a call cancelled before it ran; before, the task
   * ended and the callback was never called.
   */
  private void nextAttemptAfterCancel() {
    try {
      nextAttempt();
    } catch (RuntimeException | Error bug) {
      endQuietlyWithOwnFailure("going on after a cancel", bug, new IOException("Canceled"), true);
    }
  }

  /**
   * {@link #endWithOwnFailure} for a task of ours, with {@code failure} (what the call ends with
   * without the agent) for the callback: nothing is left to throw to but the task's thread, and
   * what the application's callback throws is its own, as OkHttp's dispatcher leaves it.
   */
  private void endQuietlyWithOwnFailure(
      String where, Throwable bug, IOException failure, boolean onScheduler) {
    try {
      endWithOwnFailure(
          where,
          bug,
          "the call ends as it would have without the agent",
          null,
          failure,
          onScheduler);
    } catch (IOException never) {
      // only a response's callback throws one, and there is no response to give
    }
  }

  /**
   * OkHttp cancelled {@code attempt}, a clone (its call timeout, or {@code cancelAll()} found it
   * running): the original is cancelled too, as OkHttp would have cancelled it.
   */
  void attemptCancelled(Call attempt) {
    synchronized (this) {
      if (cancelled || done || attempt == original) {
        return;
      }
      cancelled = true;
    }
    try {
      original.cancel();
    } catch (RuntimeException | Error listenerThrew) {
      // The application's EventListener.canceled: out of here, it reached the agent's hook on the
      // attempt's cancel(), said as the agent's internal error. It goes to this thread's
      // uncaught-exception handler instead, as without the agent it leaves OkHttp's timeout.
      leaveAsUncaught(listenerThrew);
    }
  }

  /**
   * Waits {@code delayNanos} for the retry decided after the attempt that failed with {@code
   * failure} (null: a response). False when the scheduler refused the wait: the call ended with
   * that attempt's outcome ({@link RetryCall#retryNotScheduled}), which the caller delivers to the
   * callback, as without the agent.
   */
  private boolean retryLater(long delayNanos, IOException failure) {
    retryCall.waitsToRetry(); // the delay is in hand
    boolean refused = false;
    synchronized (this) {
      if (!cancelled && !done) {
        releasing = failure == null; // the caller releases the response once this returns
        if (schedule(delayNanos, true)) {
          if (failure != null) {
            retrier.keepGiveBack(this, failure); // the wait's end takes it, under this lock
          }
          if (callDeadline != RetryInterceptor.NO_DEADLINE && dispatcher != null) {
            retrier.watchCallTimeout(this, callDeadline); // until the call ends (finish)
          }
          return true;
        }
        releasing = false;
        refused = true;
      }
    }
    if (refused) {
      retryCall.retryNotScheduled(failure); // the engine's lock, never under this one
      return false;
    }
    // Cancelled since the attempt was decided: as if it had come during the wait.
    retryCall.onAbandoned();
    deliverFailure(new IOException("Canceled"));
    return true;
  }

  private boolean finish() {
    boolean first;
    Object kept;
    synchronized (this) {
      first = !done;
      done = true;
      inFlight = null;
      kept = retrier.finished(this);
    }
    releaseKept(kept); // a response kept through a wait the call ended during (a cancel)
    if (first) {
      endHeard(null); // an end held for a callback told otherwise (OkHttp's enqueue threw)
    }
    return first;
  }

  /**
   * The callback hears {@code heard} (null: a response) of the call's end: an end the engine made
   * while it was held ({@link RetryCall#holdEnd}: the rate limit's, the breaker's refusal, a retry
   * not made after its wait, told through a clone OkHttp runs) is told the listeners now, as a
   * cancel ({@code Canceled}) or OkHttp's call timeout when that is what the callback hears. Told
   * as it was made, the give-up, its dead letter and the completion said the refusal where the
   * callback, cancelled before the clone ran, heard "Canceled". What the listeners let through is
   * said as our own failure: the callback hears all the same.
   */
  private void endHeard(IOException heard) {
    GiveUpReason as = null;
    if (heard != null && "Canceled".equals(heard.getMessage())) {
      as = GiveUpReason.CANCELLED;
    } else if (isCancel(heard)) {
      as = GiveUpReason.CALL_TIMEOUT;
    }
    try {
      retryCall.endHeard(as);
    } catch (RuntimeException | Error bug) {
      engine.internalError(
          "telling a call's end as its callback hears it",
          bug,
          "the callback hears it all the same");
    }
  }

  /** Ends the call: its context (when this is the first end), before the callback hears of it. */
  private void end() {
    if (finish()) {
      retryCall.endContext();
    }
  }

  private void deliverResponse(Call attempt, Response response) throws IOException {
    if (!settleLateEndTelling(null)) {
      // A late wait's end decided here, as the application's cancel came (an interceptor ahead of
      // ours answered the clone that tells it): OkHttp fails a response that comes after a
      // cancel, so the callback hears "Canceled", as the listeners do. Before, it heard the
      // response, the listeners a cancel.
      release(response);
      deliverFailure(new IOException("Canceled"));
      return;
    }
    endHeard(null);
    // First, so that no cancel() of the call falls between: it must reach the response's exchange.
    retrier.delivered(original, attempt);
    end();
    // The callback runs in the application's context, as without the agent.
    CallContext.Scope scope = retryCall.enterContext(true);
    try {
      if (!claimTell()) {
        release(response); // our own failure told the callback already
        return;
      }
      callOnResponse(response);
    } finally {
      retryCall.leaveContext(scope);
    }
  }

  /**
   * The application's {@code onResponse}, the call left as OkHttp leaves it when that throws:
   * anything but an {@code IOException} (a checked exception thrown sneakily, an {@code
   * InterruptedException}, included) cancels the call, then leaves (RealCall.AsyncCall, 3.12 to
   * 5.x). OkHttp cancels the call it ran, which for a retry is a clone; without the agent it is the
   * application's own call: cancelled here.
   */
  private void callOnResponse(Response response) throws IOException {
    try {
      callback.onResponse(original, response);
    } catch (Throwable thrown) {
      if (!(thrown instanceof IOException)) {
        original.cancel();
      }
      throw thrown;
    }
  }

  private void deliverFailure(IOException e) {
    // A late wait's end not decided yet (the clone that tells it failed before our interceptor, or
    // OkHttp refused it) is decided here, guarded as where the callback is told next: what a
    // listener throws no longer takes the telling elsewhere. A cancel found as it is decided is
    // what the callback hears, as the listeners do; before, it heard e, the listeners a cancel.
    if (!settleLateEndTelling(e)) {
      e = new IOException("Canceled");
    }
    endHeard(e);
    end();
    Call attempt = lastAttempt;
    Throwable listenerThrew = null;
    if (attempt != null && attempt != original && attempt.isCanceled() && !original.isCanceled()) {
      // The attempt's call timeout (OkHttp 3 cancels without cancel()), or whoever cancelled it,
      // would have cancelled the call itself without the agent: the callback may ask. What the
      // application's EventListener.canceled throws leaves after the callback heard, as it leaves
      // OkHttp's timeout without the agent, on another thread than the callback's; before, it
      // was said as the agent's internal error.
      try {
        original.cancel();
      } catch (RuntimeException | Error thrown) {
        listenerThrew = thrown;
      }
    }
    CallContext.Scope scope = retryCall.enterContext(true);
    try {
      if (!claimTell()) {
        return; // our own failure told the callback already
      }
      callback.onFailure(original, e);
    } finally {
      retryCall.leaveContext(scope);
      leaveAsUncaught(listenerThrew);
    }
  }

  /**
   * True for the one caller that tells the application's callback: never twice, even when our own
   * failure on one thread races the call's end on another (a wait that ends while a failing
   * response is released).
   */
  private synchronized boolean claimTell() {
    if (told) {
      return false;
    }
    told = true;
    return true;
  }

  /**
   * Our own {@code bug} stopped the call ({@code where}): the callback hears of it anyway, once,
   * with {@code outcome} (the attempt's response not yet discarded, or the client's exception) when
   * there is one, or else an {@code IOException} caused by the bug, said once per cause. What the
   * application's callback throws, or anything after it heard of the call, goes on as before, as
   * OkHttp would have it. On OkHttp's thread (an attempt's callback) it is told there; on the
   * scheduler's, from one of the dispatcher's, as OkHttp tells a call (or here, if it refuses).
   */
  private void endWithOwnFailure(
      String where,
      Throwable bug,
      String consequence,
      Call attempt,
      Object outcome,
      boolean onScheduler)
      throws IOException {
    if (told) {
      throwUnchecked(bug);
    }
    engine.internalError(where, bug, consequence);
    try {
      settleLateEnd(outcome instanceof IOException ? (IOException) outcome : null);
    } catch (RuntimeException | Error ignored) {
      // the call is abandoned below all the same
    }
    endHeard(outcome instanceof IOException ? (IOException) outcome : null);
    boolean first = false;
    try {
      first = finish(); // first: a wait that ended meanwhile begins no attempt (nextAttempt)
    } catch (RuntimeException | Error ignored) {
      // the call's own state is what failed: the callback must hear all the same
    }
    try {
      stopWaiting();
      retryCall.onAbandoned();
    } catch (RuntimeException | Error ignored) {
      // as above
    }
    try {
      if (outcome instanceof Response) {
        retrier.delivered(original, attempt); // a cancel() must reach the response's exchange
      }
      if (first) {
        retryCall.context().end(); // at most once: a context whose end threw is not ended again
      }
    } catch (RuntimeException | Error ignored) {
      // as above
    }
    if (outcome instanceof Response) {
      tellAfterOwnFailure((Response) outcome, null);
      return;
    }
    IOException failure =
        outcome instanceof IOException
            ? (IOException) outcome
            : new IOException("retry-agent: internal error", bug);
    if (onScheduler && dispatcher != null) {
      Runnable tell =
          () -> {
            try {
              tellAfterOwnFailure(null, failure);
            } catch (IOException never) {
              // onFailure throws none
            }
          };
      try {
        handOver(tell, false); // told here when it refuses
        return;
      } catch (Error thrown) {
        if (told) {
          throw thrown; // the callback's, run on this thread (a CallerRunsPolicy): it heard
        }
        // the executor's (out of threads): told here instead
      }
    }
    tellAfterOwnFailure(null, failure);
  }

  /** The scheduled wait, if any, will not go on: the call ended. */
  private void stopWaiting() {
    synchronized (this) {
      if (pending != null && pending.cancel()) {
        pending = null;
        if (pendingIsRetry) {
          engine.asyncRetryDone();
        }
      }
    }
  }

  /** The callback hears {@code response}, or else {@code failure}, in the caller's context. */
  private void tellAfterOwnFailure(Response response, IOException failure) throws IOException {
    if (!claimTell()) {
      if (response != null) {
        release(response); // the callback heard of the call first
      }
      return;
    }
    CallContext.Scope scope = null;
    try {
      scope = retryCall.context().enterCaller();
    } catch (RuntimeException | Error ignored) {
      // told outside it
    }
    try {
      if (response != null) {
        callOnResponse(response);
      } else {
        callback.onFailure(original, failure);
      }
    } finally {
      if (scope != null) {
        try {
          scope.close();
        } catch (RuntimeException | Error ignored) {
          // the callback heard
        }
      }
    }
  }

  /**
   * Releases {@code response} for the retry already decided (told, its budget spent), as the
   * engine's loops do (SyncRetryLoop.discardForRetry): the release closes the application's own
   * body (an interceptor's), whose {@code close()} may throw an {@code Error} past the release's
   * guard; that is said once per cause and the retry goes on, so the retry told is the retry made.
   * Before, the call ended with an {@code IOException('retry-agent: internal error')}, the retry
   * told but never made.
   */
  private void releaseForRetry(Response response) {
    try {
      RetryInterceptor.ACCESS.discard(response);
    } catch (RuntimeException | Error bug) {
      engine.internalError("releasing a response for its retry", bug, "the retry goes on");
    }
  }

  /**
   * Releases {@code response}, which the callback will not get (it heard of the call already, or
   * hears the engine's exception), as {@link #releaseForRetry}: what the body's {@code close()}
   * throws is said once per cause and the call goes on. Before, it left OkHttp's callback of the
   * attempt after the application's callback was told, or in place of the engine's exception.
   */
  private void release(Response response) {
    try {
      RetryInterceptor.ACCESS.discard(response);
    } catch (RuntimeException | Error bug) {
      engine.internalError("releasing a response the caller does not get", bug, "the call goes on");
    }
  }

  private static void throwUnchecked(Throwable t) {
    if (t instanceof RuntimeException) {
      throw (RuntimeException) t;
    }
    throw (Error) t;
  }

  /**
   * OkHttp's callback of one attempt. What it throws, OkHttp handles: an {@code IOException} from
   * the application's {@code onResponse} is logged as OkHttp logs it; anything else the
   * application's callback throws leaves onto OkHttp's thread (the call cancelled after {@code
   * onResponse}), and {@code onFailure} is never called again, as without the agent.
   */
  final class AttemptCallback implements Callback {
    // The response given to the engine's decision, until discarded for a retry or an error.
    private Response held;

    @Override
    public void onResponse(Call call, Response response) throws IOException {
      held = response;
      try {
        judge(call, response);
      } catch (RuntimeException | Error bug) {
        endWithOwnFailure(
            "judging an OkHttp attempt",
            bug,
            "the call ends with that attempt's outcome",
            call,
            held,
            false);
      }
    }

    private void judge(Call call, Response response) throws IOException {
      ManagedAttempts.Attempt attempt = ended(call);
      if (attempt instanceof ManagedAttempts.Expired) {
        release(response); // answered ahead of the interceptor, too late
        return;
      }
      if (attempt == null || attempt.failure != null) {
        deliverResponse(call, response);
        return;
      }
      if (attempt instanceof ManagedAttempts.PermitWait) {
        // Answered before it reached the interceptor (an interceptor ahead of it): no attempt.
        retryCall.onAbandoned();
        deliverResponse(call, response);
        return;
      }
      // Answered ahead of the agent's interceptor, a retry's clone holds still the outcome before
      // it: let go, so that a later wait's end never takes it for this attempt's.
      outcomeBefore(call);
      markStarted(enqueuedAt);
      Decision d =
          retryCall.onResponse(response.code(), RetryInterceptor.lines(response, "Retry-After"));
      if (d.retry() && executorShutDown()) {
        retryCall.onAbandoned(); // the decided retry's budget goes back
        deliverResponse(call, response);
      } else if (d.retry()) {
        // Before a short wait on a route the rate limit governs, or near the deadline, the
        // response is kept through the wait, as SyncRetryLoop keeps it: a retry refused its
        // permit, or a wait that ends late, ends the call with it (next, retryAfterWait).
        boolean keep = retryCall.keepThroughWait(d.delayNanos());
        if (!retryLater(d.delayNanos(), null)) {
          deliverResponse(call, response); // the scheduler refused the wait: the call's outcome
          return;
        }
        // Once the wait is scheduled, or the call ended: the response is no longer needed, or
        // kept for the wait's end.
        held = null;
        try {
          if (!keep || !keepThroughWait(call, response)) {
            keepCopy(response);
            releaseForRetry(response);
            AttemptLeftovers.drop(call); // its run is over: the call object waits, not its state
          }
        } finally {
          released();
        }
      } else if (d.error() != null) {
        held = null;
        release(response);
        deliverFailure(d.error());
      } else {
        deliverResponse(call, response);
      }
    }

    @Override
    public void onFailure(Call call, IOException e) {
      try {
        judge(call, e);
      } catch (RuntimeException | Error bug) {
        try {
          endWithOwnFailure(
              "judging an OkHttp attempt",
              bug,
              "the call ends with that attempt's outcome",
              call,
              e,
              false);
        } catch (IOException never) {
          // onFailure throws none
        }
      }
    }

    private void judge(Call call, IOException e) {
      ManagedAttempts.Attempt attempt = ended(call);
      if (attempt instanceof ManagedAttempts.Expired) {
        return; // the callback heard of the call already (endIfQueued)
      }
      if (attempt == null || attempt.failure != null) {
        deliverFailure(e);
        return;
      }
      if (attempt instanceof ManagedAttempts.PermitWait) {
        // Failed before it reached the interceptor (OkHttp's executor refused it, an interceptor
        // ahead of it threw): no attempt was made.
        retryCall.onAbandoned();
        deliverFailure(e);
        return;
      }
      Object before = outcomeBefore(call); // a retry's clone that never began: as above
      if (refusedByExecutor(e)) {
        // OkHttp's executor (shut down before enqueue(), or during a retry's wait) refused the
        // call or the retry's clone, on this thread inside its enqueue: nothing was sent, so the
        // attempt's rate-limit permit goes back, a retry to the host's budget, a first attempt is
        // not counted (attemptRefused), and the call ends with the refusal, as OkHttp tells an
        // enqueue on a shut-down client. A retry's clone ends with the outcome before it, as the
        // call would have without the agent, when it is kept (not a response released uncopied).
        if (before != null && !getAsBoolean()) {
          endWithOutcomeBefore(before);
          return;
        }
        retryCall.attemptRefused();
        retryCall.onAbandoned();
        deliverFailure(e);
        return;
      }
      markStarted(enqueuedAt);
      Decision d = retryCall.onFailure(e);
      if (d.retry() && executorShutDown()) {
        retryCall.onAbandoned();
        deliverFailure(e);
      } else if (d.retry()) {
        AttemptLeftovers.drop(call);
        if (!retryLater(d.delayNanos(), e)) {
          deliverFailure(e); // the scheduler refused the wait: the call's outcome
        }
      } else if (d.error() != null) {
        d.error().addSuppressed(e);
        deliverFailure(d.error());
      } else {
        deliverFailure(e);
      }
    }

    /**
     * OkHttp's executor refused the attempt: its {@code InterruptedIOException: executor rejected},
     * caused by the executor's refusal (OkHttp 3 and 4), or without a cause when OkHttp 5 saw the
     * executor shut down and did not ask it.
     */
    private boolean refusedByExecutor(IOException e) {
      if (e.getCause() instanceof RejectedExecutionException) {
        return true;
      }
      return e instanceof InterruptedIOException
          && e.getCause() == null
          && "executor rejected".equals(e.getMessage())
          && executorShutDown();
    }

    /** The attempt {@code call} ran, or null when OkHttp reports on it again. */
    private ManagedAttempts.Attempt ended(Call call) {
      synchronized (EnqueuedCall.this) {
        if (inFlight == call) {
          inFlight = null;
        }
      }
      return retrier.attempts().remove(call);
    }
  }
}
