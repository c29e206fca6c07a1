package dev.retryagent.engine;

import java.io.IOException;
import java.util.function.BooleanSupplier;

/**
 * SPI: drives a {@link RetryCall} on the caller's thread, waiting with the engine's {@link Sleeper}
 * (pass {@link RetryEngine#sleeper()}). Stateless; one call per invocation.
 */
public final class SyncRetryLoop {
  private SyncRetryLoop() {}

  /** One attempt, made on the calling thread. */
  @FunctionalInterface
  public interface Attempt<T> {
    /**
     * @param attempt 1-based attempt number (for the attempt header)
     * @param timeoutNanos the policy's bound on the attempt ({@link
     *     RetryCall#attemptTimeoutNanos()}), or -1 for none; each of the client's own per-attempt
     *     timeouts becomes {@link CallBounds#shorterTimeout}{@code (timeoutNanos, own)}
     */
    T run(int attempt, long timeoutNanos) throws IOException, InterruptedException;
  }

  /**
   * Runs attempts until one is final.
   *
   * <p>A thread already interrupted when a retry is decided (its client finished the attempt
   * anyway) makes no retry: the call ends with that attempt's response or failure, the flag still
   * set, as without the agent.
   *
   * @return the final response; every response before it was discarded
   * @throws InterruptedException when the thread is interrupted while waiting to retry: the call
   *     ends (as cancelled), with the interrupt flag as the sleeper leaves it (cleared, as {@code
   *     Thread.sleep} and {@code HttpClient.send} leave it). An adapter whose client reports an
   *     interrupt otherwise (OkHttp: an {@code InterruptedIOException}) converts it.
   */
  public static <T> T execute(
      RetryCall call, Sleeper sleeper, Attempt<T> attempt, ResponseAccess<T> access)
      throws IOException, InterruptedException {
    try {
      return loop(call, sleeper, attempt, access);
    } finally {
      // Here, not at the call's last event: java.net.http decides on the headers, before the
      // client (and its tracing) is done with the attempt.
      NoContext.end(call);
      call.loopEnded();
    }
  }

  private static <T> T loop(
      RetryCall call, Sleeper sleeper, Attempt<T> attempt, ResponseAccess<T> access)
      throws IOException, InterruptedException {
    boolean permitted = false; // a retry's permit, taken before its attempt's response went
    while (true) {
      if (call.attempt() > 0 && call.cancelledByCaller()) {
        // The caller gave up during a wait after an attempt (the JDK client's shutdownNow, OkHttp's
        // Call.cancel, Apache's abort): the call ends there, abandoned at the attempt it reached
        // (its permits back), as AsyncRetryLoop ends it. Before, the retry was started and counted
        // (an attempt in the events, the metrics and the listeners' calls) that never went out.
        // The attempt is only handed to the client, uncounted, which fails it at once as it fails
        // a call its caller gave up, sending nothing: the caller gets the client's own failure.
        call.onAbandoned();
        return runInContext(call, attempt, call.attempt() + 1);
      }
      if (!permitted) {
        takePermit(call, sleeper);
      }
      permitted = false;
      boolean givenUp = call.cancelledByCaller();
      int n = givenUp ? call.startAttempt() : call.beginAttempt();
      T response;
      try {
        response = runInContext(call, attempt, n);
      } catch (IOException | InterruptedException | RuntimeException | Error e) {
        if (givenUp) {
          refused(call);
        }
        if (call.endedWithoutDecision()) {
          // The adapter ended the call in the attempt (onAbandoned: the failure is the
          // application's own, not the host's): it reaches the caller as it is, neither recorded
          // nor retried. A call that decided on the attempt's head first (java.net.http) ends with
          // that decision below, as AsyncRetryLoop ends it.
          throw e;
        }
        Decision d = call.onFailure(e);
        if (!d.retry()) {
          if (d.error() != null) {
            d.error().addSuppressed(e);
            throw d.error();
          }
          throw e;
        }
        if (e instanceof InterruptedException || Thread.currentThread().isInterrupted()) {
          // As for a response below: the failure the caller has without the agent, the flag set.
          // An attempt's own InterruptedException is the caller's interrupt too, its flag already
          // cleared by the client's wait (java.net.http's send(), interrupted while it reads the
          // body of a response the engine decided to retry on its head): no retry after it.
          call.retryForgone(e);
          throw e;
        }
        sleep(call, sleeper, d.delayNanos());
        if (call.retryTooLate()) {
          throw late(call); // the attempt's failure, as if not retried
        }
        try {
          takePermit(call, sleeper);
        } catch (RateLimitedException refused) {
          if (call.permitRefusedRetry()) {
            throw late(call); // the attempt's failure, as if not retried
          }
          throw refused;
        }
        permitted = true;
        continue;
      }
      // A call the adapter ended in the attempt (the host answered a request the application broke:
      // endedByApplication(status)) has its decision already: the response goes on as it came.
      Decision d;
      try {
        d = call.onResponse(access.status(response), access.header(response, "Retry-After"));
      } catch (RuntimeException | LinkageError | StackOverflowError bug) {
        // Never lose a response because of our own bug (the adapter's reading of its status or
        // Retry-After; deciding catches its own): an Error went to the caller instead.
        call.state.engine.internalError(
            "reading an attempt's response", bug, "the call ends with that response");
        call.onAbandoned();
        return response;
      }
      if (!d.retry()) {
        if (d.error() != null) {
          discardUnwanted(call.state.engine, access, response);
          throw d.error();
        }
        return response;
      }
      // Near the deadline, or before a short wait on a call the rate limit governs, the response
      // is kept through the wait: one that ends late, or a retry refused its permit, ends the call
      // with it. Otherwise released now, its connection serves other calls meanwhile; so is one
      // of the rate limit's whose adapter would rather copy it than hold a pool's lease.
      boolean whole;
      boolean keep;
      boolean copyLeavesWhole;
      try {
        whole = access.whole(response);
        keep =
            whole
                && call.keepThroughWait(d.delayNanos())
                && (!access.copyRatherThanKeep(response)
                    || call.waitEndsNearDeadline(d.delayNanos()));
        copyLeavesWhole = keep || !whole || access.copyLeavesWhole(response);
      } catch (RuntimeException | LinkageError | StackOverflowError bug) {
        // The adapter's reading of its response failed, as its status's may above: the call ends
        // with the response, the retry not made. Thrown on, it took the response's place and the
        // response was neither released nor returned (a connection, a pool's lease, leaked).
        call.state.engine.internalError(
            "reading a retried response", bug, "the call ends with that response");
        call.retryNotScheduled(null);
        return response;
      } catch (Error e) {
        // What the engine never catches (out of memory) reaches the caller, the response released,
        // as when the reservation at the decision throws one.
        discardUnwanted(call.state.engine, access, response);
        throw e;
      }
      if (Thread.currentThread().isInterrupted() && whole) {
        // The caller interrupted the thread during the attempt, and the client finished it anyway
        // (RetryCall.retryForgone): without the agent the caller has this response, the flag set.
        // The wait would throw at once, and the response would be lost for an interrupt.
        call.retryForgone(null);
        return response;
      }
      T copy = null;
      long left = d.delayNanos();
      if (!keep) {
        Clock clock = call.state.engine.clock();
        long decidedAt = clock.nanoTime();
        // Neither kept nor copied, a response was gone when the retry's permit was refused after
        // the wait, and the call ended with RateLimitedException where without the agent the
        // caller has the response: on a call the rate limit governs, the permit is reserved now,
        // while the response can still go to the caller. Once a copy made none, so that a copied
        // response asks after its wait as before (no token taken ahead of its backoff); before
        // the copy when a copy may read the body away and make none (copyLeavesWhole false).
        if (copyLeavesWhole) {
          // A copy of a small response, for a wait that ends late after all.
          copy = copyToGiveBack(call, access, response);
        }
        if (whole && copy == null) {
          left = reserveAtDecision(call, access, response, clock, decidedAt);
          if (left < 0) {
            return response; // as if the policy had not retried it
          }
        }
        if (!copyLeavesWhole) {
          copy = copyToGiveBack(call, access, response);
        }
        discardForRetry(call, access, response);
        // The wait counts from the decision, which kept the retry's start before the caller's
        // timeout, as an asynchronous call's wait does (scheduled before the release): the
        // release (a copy's peek, OkHttp's discard of the rest of a body, up to 100 ms each)
        // pushed the whole wait later, past that timeout, which then ran out during the wait.
        left = Math.max(0, left - (clock.nanoTime() - decidedAt));
      }
      try {
        sleep(call, sleeper, left);
      } catch (InterruptedException | RuntimeException | Error e) {
        if (keep) {
          // Guarded: a release that throws (an Error from a body's close()) must not take the
          // place of the caller's interrupt.
          discardUnwanted(call.state.engine, access, response);
        }
        throw e;
      }
      if (call.retryTooLate()) {
        if (keep) {
          return response; // as if the policy had not retried it
        }
        if (copy != null) {
          return copy; // the same response, its connection released before the wait
        }
        throw late(call);
      }
      boolean held = keep; // the kept response is still the call's
      try {
        // The retry's permit before the kept response goes: one refused ends the call with it.
        // Granted, it goes, before any wait for the permit, which holds no connection (bounded by
        // maxWait only): a 429 pause that begins during that wait refuses the retry after all,
        // and the call then ends with the copy taken now, as after a release at the decision.
        long wait = reserve(call);
        if (keep) {
          if (wait > 0) {
            copy = copyToGiveBack(call, access, response);
          }
          held = false;
          discardForRetry(call, access, response);
        }
        waitForPermit(call, sleeper, wait);
      } catch (InterruptedException | RuntimeException | Error e) {
        if (held) {
          discardUnwanted(call.state.engine, access, response);
        }
        throw e;
      } catch (RateLimitedException refused) {
        if (call.permitRefusedRetry()) {
          if (held) {
            return response; // as if the policy had not retried it
          }
          if (copy != null) {
            return copy;
          }
          throw late(call);
        }
        if (held) {
          discardUnwanted(call.state.engine, access, response);
        }
        throw refused;
      }
      permitted = true;
    }
  }

  /**
   * Step 1, the rate limit, before an attempt: waits for its permit. A call the caller cancelled (a
   * cancel ends a wait) goes to its attempt, which fails at once as the client fails a cancelled
   * call, sending nothing: neither the rate limit nor the breaker has a say, or the caller got
   * their exception (the breaker opened during the wait) instead of the client's own for its
   * cancel.
   *
   * @throws RateLimitedException no permit: for a retry, the call ended with the attempt before it
   *     ({@link RetryCall#permitRefusedRetry})
   */
  private static void takePermit(RetryCall call, Sleeper sleeper)
      throws RateLimitedException, InterruptedException {
    waitForPermit(call, sleeper, reserve(call));
  }

  /** {@link #takePermit}'s reservation: the wait for the permit it holds, or 0. */
  private static long reserve(RetryCall call) throws RateLimitedException {
    return call.cancelledByCaller() ? 0 : call.reservePermit();
  }

  /** {@link #takePermit}'s wait for the permit {@link #reserve} holds, {@code wait} from now. */
  private static void waitForPermit(RetryCall call, Sleeper sleeper, long wait)
      throws RateLimitedException, InterruptedException {
    while (wait > 0) {
      sleep(call, sleeper, wait);
      // A 429 pause that began during the wait holds this attempt too.
      wait = call.cancelledByCaller() ? 0 : call.reservePermitAfterWait();
    }
  }

  /**
   * {@link RetryCall#reserveRetryPermit}, asked before {@code response}'s release: the retry's
   * delay counted from the decision at {@code decidedAt} (the longer of its backoff from there and
   * its permit's wait from now, a copy's time after it), or -1 when the rate limit refused the
   * retry: the call is over, and ends with the response. Without a rate limit (or in observe mode)
   * nothing is reserved: the backoff. What the listeners let through (a broken JVM) goes to the
   * caller, the response released, as a kept one is when its permit's reservation throws: it was
   * neither released nor returned, its connection (an Apache pool's lease) leaked.
   */
  private static <T> long reserveAtDecision(
      RetryCall call, ResponseAccess<T> access, T response, Clock clock, long decidedAt) {
    long asked = clock.nanoTime();
    long delay;
    try {
      delay = call.reserveRetryPermit(asked - decidedAt);
    } catch (RuntimeException | Error e) {
      discardUnwanted(call.state.engine, access, response);
      throw e;
    }
    if (delay < 0) {
      return -1;
    }
    // Asked after a copy that made none: the delay counts from the ask, the backoff's rest or the
    // permit's longer wait.
    return delay + (asked - decidedAt);
  }

  /**
   * {@link ResponseAccess#copyToGiveBack}, or null when the adapter cannot make one, or fails to
   * (an I/O failure reading the body, our bug): the response is discarded as before either way.
   */
  static <T> T copyToGiveBack(RetryCall call, ResponseAccess<T> access, T response) {
    try {
      return access.copyToGiveBack(response);
    } catch (IOException | RuntimeException e) {
      return null; // the body failed as it was read: discard() ends it as before
    } catch (LinkageError | StackOverflowError bug) {
      call.state.engine.internalError(
          "copying a response before its retry's wait", bug, "the call goes on without a copy");
      return null;
    }
  }

  /**
   * Releases {@code response} for the retry already decided (the retry counted, its budget spent).
   * {@link ResponseAccess#discard} must not throw; one that does anyway (our adapter's bug) is said
   * once per cause and the retry goes on: the response cannot go to the caller in whatever state
   * the failed release left it, and a call stopped here was neither ended nor counted, its retry
   * told and its budget spent for a retry never made. Nothing allocated unless it throws.
   */
  static <T> void discardForRetry(RetryCall call, ResponseAccess<T> access, T response) {
    try {
      access.discard(response);
    } catch (RuntimeException | Error bug) {
      call.state.engine.internalError(
          "releasing a response for its retry", bug, "the retry goes on");
    }
  }

  /**
   * Releases {@code response}, which the caller will not get (the engine's exception ends the
   * call): a release that throws anyway ({@link ResponseAccess#discard} must not; a body's {@code
   * close()} may throw an {@code Error}, which java.net.http's release lets through) is said once
   * per cause and the call goes on with its outcome, as a release for a retry does ({@link
   * #discardForRetry}). Before, the caller got the release's exception in place of the breaker's.
   */
  static <T> void discardUnwanted(RetryEngine engine, ResponseAccess<T> access, T response) {
    try {
      access.discard(response);
    } catch (RuntimeException | Error bug) {
      engine.internalError("releasing a response the caller does not get", bug, "the call goes on");
    }
  }

  /**
   * {@link #discardUnwanted(RetryEngine, ResponseAccess, Object)} for an adapter that releases,
   * outside the loops, a response of {@code call}'s that the caller will not get (java.net.http: a
   * response whose future the caller cancelled as the JDK completed it).
   */
  public static <T> void discardUnwanted(RetryCall call, ResponseAccess<T> access, T response) {
    discardUnwanted(call.state.engine, access, response);
  }

  /**
   * The attempt {@code call} started after its caller gave up (a cancel, an abort, a shutdown that
   * ended the wait for its first permit, or came before it) failed: the client refused it, as it
   * refuses a call its caller gave up, sending nothing. Told as OkHttp's adapter tells such a
   * refusal ({@link RetryCall#attemptRefused}): the attempt's permit and any retry go back, and a
   * first attempt is not counted (the call ends at 0 attempts), whichever client it was. Before,
   * only OkHttp's {@code execute()} said so; the others counted an attempt 1 never sent.
   */
  static void refused(RetryCall call) {
    call.attemptRefused();
  }

  /** Each attempt in the call's context (its tracing), the waits outside it. */
  private static <T> T runInContext(RetryCall call, Attempt<T> attempt, int n)
      throws IOException, InterruptedException {
    CallContext.Scope scope = NoContext.enter(call, false);
    try {
      return attempt.run(n, call.attemptTimeoutNanos());
    } finally {
      NoContext.close(call, scope);
    }
  }

  /**
   * The call ended after a wait that ended past the deadline ({@link RetryCall#retryTooLate}): its
   * attempt's failure, or the engine's exception for a response released before the wait.
   */
  private static IOException late(RetryCall call) throws InterruptedException {
    Throwable t = call.lateRetryFailure();
    if (t instanceof IOException) {
      return (IOException) t;
    }
    if (t instanceof InterruptedException) {
      throw (InterruptedException) t;
    }
    if (t instanceof RuntimeException) {
      throw (RuntimeException) t;
    }
    throw (Error) t;
  }

  /**
   * Waits {@code nanos}, or less when the call's adapter ends the wait early ({@link
   * RetryCall#waitStarts}; the sleeper looks at that, {@link Sleeper#sleep(long,
   * BooleanSupplier)}).
   */
  private static void sleep(RetryCall call, Sleeper sleeper, long nanos)
      throws InterruptedException {
    SyncWait wait = new SyncWait(call);
    boolean kept = call.waitStarts(wait);
    try {
      if (kept) {
        sleeper.sleep(nanos, wait);
      } else {
        sleeper.sleep(nanos);
      }
    } catch (InterruptedException e) {
      call.onAbandoned();
      throw e;
    } finally {
      if (kept) {
        call.waitEnds(wait);
      }
    }
  }

  /**
   * A wait on the caller's thread, which a sleeper cannot be woken from: it looks at this. Ended by
   * the adapter, or by the caller's give-up itself: one that came after the retry was decided and
   * before the adapter kept the wait could not end it.
   */
  private static final class SyncWait implements RetryCall.Wait, BooleanSupplier {
    private final RetryCall call;
    private volatile boolean ended;

    SyncWait(RetryCall call) {
      this.call = call;
    }

    @Override
    public void endNow() {
      ended = true;
    }

    @Override
    public boolean getAsBoolean() {
      return ended || call.cancelledByCaller();
    }
  }
}
