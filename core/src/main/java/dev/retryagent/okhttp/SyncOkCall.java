package dev.retryagent.okhttp;

import dev.retryagent.engine.Sleeper;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.internal.Waits;
import java.io.IOException;
import okhttp3.Interceptor.Chain;
import okhttp3.Response;

/**
 * The request view of a call {@link RetryInterceptor} runs on the caller's thread, which is also
 * the call's attempt (the rest of the chain, once per attempt) and its sleeper (waits in slices, so
 * that {@code Call.cancel()} ends one promptly): one object per call besides the engine's, instead
 * of a view, an attempt lambda, a sleeper and a cancel signal (issue 13). Used by one call's
 * thread.
 */
final class SyncOkCall extends OkRequest implements SyncRetryLoop.Attempt<Response>, Sleeper {
  // Two fields beside the view's: the call, the engine's sleeper and OkHttp's Call are read from
  // the view, the interceptor and the chain (issue 13: 40 B per call).
  private final RetryInterceptor interceptor;
  private final Chain chain;

  SyncOkCall(RetryInterceptor interceptor, Chain chain) {
    super(chain.request());
    this.interceptor = interceptor;
    this.chain = chain;
  }

  /** The caller cancelled the OkHttp call ({@code Call.cancel()}). */
  @Override
  public boolean callerGaveUp() {
    return chain.call().isCanceled();
  }

  @Override
  public Response run(int attempt, long timeoutNanos) throws IOException {
    return interceptor.proceed(chain, forAttempt(original(), attempt), timeoutNanos, this);
  }

  /** Waits until {@code nanos} passed or the caller cancelled ({@link #callerGaveUp}). */
  @Override
  public void sleep(long nanos) throws InterruptedException {
    // Made only for a wait.
    Waits.untilCancelled(interceptor.sleeper(), this::callerGaveUp).sleep(nanos);
  }
}
