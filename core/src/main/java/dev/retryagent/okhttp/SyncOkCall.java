package dev.retryagent.okhttp;

import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.Sleeper;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.internal.Waits;
import java.io.IOException;
import okhttp3.Call;
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
  private final RetryInterceptor interceptor;
  private final Chain chain;
  private final Sleeper base;
  private RetryCall call; // set once the engine made it

  SyncOkCall(RetryInterceptor interceptor, Chain chain, Call okCall, Sleeper base) {
    super(chain.request(), okCall);
    this.interceptor = interceptor;
    this.chain = chain;
    this.base = base;
  }

  /** The call that decides; returns this, the attempt. */
  SyncOkCall decidedBy(RetryCall call) {
    this.call = call;
    return this;
  }

  @Override
  public Response run(int attempt, long timeoutNanos) throws IOException {
    return interceptor.proceed(chain, forAttempt(original(), attempt), timeoutNanos, call, this);
  }

  /** Waits until {@code nanos} passed or the caller cancelled ({@link #callerGaveUp}). */
  @Override
  public void sleep(long nanos) throws InterruptedException {
    Waits.untilCancelled(base, this::callerGaveUp).sleep(nanos); // made only for a wait
  }
}
