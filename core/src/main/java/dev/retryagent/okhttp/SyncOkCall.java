package dev.retryagent.okhttp;

import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.SelfViewCall;
import dev.retryagent.engine.Sleeper;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.internal.Waits;
import dev.retryagent.policy.RetryPolicy;
import java.io.IOException;
import okhttp3.Interceptor.Chain;
import okhttp3.Request;
import okhttp3.Response;

/**
 * A call {@link RetryInterceptor} runs on the caller's thread, as one object: the engine's call,
 * its request view, its attempt (the rest of the chain, once per attempt) and its sleeper (waits in
 * slices, so that {@code Call.cancel()} ends one promptly), instead of a call, a view, an attempt
 * lambda, a sleeper and a cancel signal (issue 13: 72 B per call, OkHttp's own 56 B for an
 * application interceptor aside). Used by one call's thread; {@link RetryCall} guards its own part.
 *
 * <p>The view needs fewer fields than an enqueued call's ({@link OkRequest}): every attempt starts
 * from the same request, {@code chain.request()}, as the interceptors before this one left it (the
 * ones after it run inside each attempt). So the first attempt's idempotency key is the key every
 * attempt carries, and the headers the engine reads are that request's: only the attempt header,
 * which the engine does not read, differs on the wire.
 */
final class SyncOkCall extends SelfViewCall
    implements OkRequestView, SyncRetryLoop.Attempt<Response>, Sleeper {
  // Beside the engine's fields: the engine's sleeper and OkHttp's Call and request are read from
  // the interceptor and the chain.
  private final RetryInterceptor interceptor;
  private final Chain chain;
  private final boolean oneShot;
  private volatile boolean bodyWritten;

  /** Not begun: hand it to {@code RetryEngine.begin} first. */
  SyncOkCall(RetryInterceptor interceptor, Chain chain) {
    this.interceptor = interceptor;
    this.chain = chain;
    // The call's own body counts too, as for an enqueued call (OkRequest): an application
    // interceptor that wraps it in a body that only forwards writeTo (OkHttp's gzip recipe) hides
    // that writing the wrapper again writes the one-shot body again.
    this.oneShot =
        OkRequestView.isOneShot(chain.request().body())
            || OkRequestView.isOneShot(chain.call().request().body());
  }

  @Override
  public Request viewed() {
    return chain.request();
  }

  @Override
  public String header(String name) {
    return chain.request().header(name);
  }

  /** The caller cancelled the OkHttp call ({@code Call.cancel()}). */
  @Override
  public boolean callerGaveUp() {
    return chain.call().isCanceled();
  }

  @Override
  public void markBodyWritten() {
    bodyWritten = true;
  }

  @Override
  public boolean bodyReplayable() {
    return !oneShot || !bodyWritten;
  }

  @Override
  public Response run(int attempt, long timeoutNanos) throws IOException {
    RetryPolicy retry = policy().retry();
    Request request =
        OkRequestView.attemptOf(
            chain.request(), attempt, retry.attemptHeader(), null, null, oneShot, this);
    return interceptor.proceed(chain, request, timeoutNanos, this);
  }

  /** Waits until {@code nanos} passed or the caller cancelled ({@link #callerGaveUp}). */
  @Override
  public void sleep(long nanos) throws InterruptedException {
    // Made only for a wait.
    Waits.untilCancelled(interceptor.sleeper(), interceptor.clock(), this::callerGaveUp)
        .sleep(nanos);
  }
}
