package dev.retryagent.okhttp;

import dev.retryagent.engine.AsyncRetryLoop;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import java.io.IOException;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Response;

/**
 * Runs {@code enqueue}d OkHttp calls with retries without holding a dispatcher thread or a per-host
 * slot while a retry waits: the first attempt is the call itself; after a retryable outcome, its
 * response is closed and, once the delay has passed on the engine's scheduler, a {@link
 * Call#clone() clone} of the call is enqueued. The caller's callback is told once, with the
 * original call, about the final response or failure. Cancelling the original call (see {@link
 * #cancel}) cancels whichever attempt or wait is current.
 *
 * <p>The agent routes {@code Call.enqueue} and {@code Call.cancel} here; code that wires retries by
 * hand can call {@link #enqueue} instead of {@code call.enqueue}. The {@link #interceptor()} must
 * be on the client, so that each attempt of a managed call is made exactly once.
 */
public final class AsyncRetrier {
  /** How an attempt is enqueued; the agent passes one that is not intercepted again. */
  @FunctionalInterface
  public interface Enqueuer {
    void enqueue(Call call, Callback callback);
  }

  private final RetryEngine engine;
  private final Enqueuer enqueuer;
  private final ManagedAttempts attempts = new ManagedAttempts();
  private final RetryInterceptor interceptor;
  private final ConcurrentHashMap<Call, CompletableFuture<Response>> running =
      new ConcurrentHashMap<>();

  public AsyncRetrier(RetryEngine engine, Enqueuer enqueuer) {
    this.engine = Objects.requireNonNull(engine, "engine");
    this.enqueuer = Objects.requireNonNull(enqueuer, "enqueuer");
    this.interceptor = new RetryInterceptor(engine, attempts);
  }

  /** Enqueues with {@link Call#enqueue}. */
  public AsyncRetrier(RetryEngine engine) {
    this(engine, Call::enqueue);
  }

  /** The interceptor that must be on every client whose calls come here. */
  public RetryInterceptor interceptor() {
    return interceptor;
  }

  /** True for callbacks this class gave OkHttp (so they are not wrapped again). */
  public static boolean isAttemptCallback(Object callback) {
    return callback instanceof AttemptCallback;
  }

  /**
   * Runs {@code call} asynchronously with retries; {@code callback} hears about the final outcome
   * once, on an OkHttp dispatcher thread (or a scheduler thread when the call fails without an
   * attempt, say because the breaker is open).
   *
   * @throws IllegalStateException when the call was already executed, as {@code Call.enqueue} does
   */
  public void enqueue(Call call, Callback callback) {
    Objects.requireNonNull(callback, "callback");
    OkRequest info = new OkRequest(call.request());
    RetryCall retryCall = engine.newCall(info);
    if (retryCall.passThrough()) {
      enqueuer.enqueue(call, callback);
      return;
    }
    info.prepare(retryCall.policy().retry().attemptHeader());
    retryCall.cancelledWhen(call::isCanceled);
    RetryInterceptor.limitToCallTimeout(retryCall, call, engine);
    CompletableFuture<Response> result =
        AsyncRetryLoop.execute(
            engine,
            retryCall,
            (n, timeoutNanos) -> startAttempt(call, retryCall, info, n, timeoutNanos),
            RetryInterceptor.ACCESS);
    running.put(call, result);
    result.whenComplete((response, error) -> deliver(call, callback, response, error));
  }

  /**
   * Cancels the retries of {@code call} if it is running here: the attempt in flight and any
   * pending wait. The caller's callback then gets {@code onFailure} with "Canceled".
   *
   * @return true when the call was running here
   */
  public boolean cancel(Call call) {
    CompletableFuture<Response> result = running.get(call);
    return result != null && result.cancel(true);
  }

  /** Calls whose retries run here right now. */
  public int running() {
    return running.size();
  }

  private CompletableFuture<Response> startAttempt(
      Call original, RetryCall retryCall, OkRequest info, int n, long timeoutNanos) {
    Call attempt = n == 1 ? original : original.clone();
    AttemptFuture future = new AttemptFuture(attempt);
    attempts.put(attempt, new ManagedAttempts.Attempt(retryCall, info, n, timeoutNanos));
    try {
      enqueuer.enqueue(attempt, new AttemptCallback(future));
    } catch (RuntimeException e) {
      attempts.remove(attempt);
      throw e;
    }
    return future;
  }

  private void deliver(Call original, Callback callback, Response response, Throwable error) {
    running.remove(original);
    try {
      if (error == null) {
        callback.onResponse(original, response);
        return;
      }
      Throwable cause = error instanceof CompletionException ? error.getCause() : error;
      IOException io;
      if (cause instanceof IOException) {
        io = (IOException) cause;
      } else if (cause instanceof CancellationException) {
        io = new IOException("Canceled");
      } else {
        io = new IOException(cause);
      }
      callback.onFailure(original, io);
    } catch (IOException | RuntimeException e) {
      // What OkHttp does when a callback throws: the thread's uncaught-exception handler hears.
      Thread t = Thread.currentThread();
      t.getUncaughtExceptionHandler().uncaughtException(t, e);
    }
  }

  /** The future of one attempt; cancelling it cancels the attempt's call. */
  private static final class AttemptFuture extends CompletableFuture<Response> {
    private final Call call;

    AttemptFuture(Call call) {
      this.call = call;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      call.cancel();
      return super.cancel(mayInterruptIfRunning);
    }
  }

  /** Completes an attempt's future from OkHttp's callback. */
  private final class AttemptCallback implements Callback {
    private final AttemptFuture future;

    AttemptCallback(AttemptFuture future) {
      this.future = future;
    }

    @Override
    public void onFailure(Call call, IOException e) {
      attempts.remove(call);
      future.completeExceptionally(e);
    }

    @Override
    public void onResponse(Call call, Response response) {
      attempts.remove(call);
      if (!future.complete(response)) {
        response.close();
      }
    }
  }
}
