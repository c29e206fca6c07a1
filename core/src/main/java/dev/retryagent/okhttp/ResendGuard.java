package dev.retryagent.okhttp;

import dev.retryagent.engine.IdempotencyGate;
import dev.retryagent.engine.Outcome;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.policy.RetryPolicy;
import java.io.IOException;
import okhttp3.MediaType;
import okhttp3.Request;
import okhttp3.RequestBody;
import okio.BufferedSink;

/**
 * Keeps OkHttp from sending a request again by itself where the engine would not: its {@code
 * RetryAndFollowUpInterceptor} ({@code retryOnConnectionFailure}, on by default) resends a request
 * whose connection failed after it was written (a kept-alive connection the server had closed),
 * POST included, unless the request's body is one-shot. So the body of such an attempt is wrapped
 * ({@link Body}), and once a request of the attempt fails on its connection ({@link Resends}) it
 * says it is one-shot: OkHttp gives the failure back instead of resending, and the engine decides.
 * Before a failure it is an ordinary body, so redirects (307, 308) are followed as without the
 * agent.
 *
 * <p>The rule is the JDK's ({@code urlconnection.JdkResendRule}): never for a request the engine
 * would not repeat after a reset (a POST without key: OkHttp and the agent together never send it
 * twice); in observe mode, never guarded; otherwise only on the last attempt, so that {@code
 * maxAttempts} bounds what the server sees (earlier, OkHttp's resend counts as an attempt). A
 * request without a body (GET, HEAD, DELETE) cannot be guarded this way: OkHttp may resend one on
 * the last attempt, one request past {@code maxAttempts}.
 */
final class ResendGuard {
  private ResendGuard() {}

  /** {@code attempt}, with its body guarded where OkHttp must not resend it. */
  static Request guard(Request attempt, RetryCall call) {
    RequestBody body = attempt.body();
    if (body == null || body instanceof Body || mayResend(call)) {
      return attempt;
    }
    return attempt.newBuilder().method(attempt.method(), new Body(body)).build();
  }

  static boolean mayResend(RetryCall call) {
    if (call.observeOnly()) {
      return true;
    }
    RetryPolicy retry = call.policy().retry();
    if (IdempotencyGate.check(retry, call.request(), Outcome.RESET) != null) {
      return false;
    }
    if (!retry.enabled() || retry.maxAttempts() <= 1) {
      return true;
    }
    return call.attempt() < retry.maxAttempts();
  }

  /** A body that turns one-shot once its request failed. */
  static final class Body extends RequestBody {
    private final RequestBody delegate;
    private volatile boolean failed;

    Body(RequestBody delegate) {
      this.delegate = delegate;
    }

    /** The attempt's request failed on its connection: from now on, this body is one-shot. */
    void failed() {
      failed = true;
    }

    @Override
    public MediaType contentType() {
      return delegate.contentType();
    }

    @Override
    public long contentLength() throws IOException {
      return delegate.contentLength();
    }

    @Override
    public void writeTo(BufferedSink sink) throws IOException {
      delegate.writeTo(sink);
    }

    @Override
    public boolean isOneShot() {
      // The application's body is asked first, failed or not, as OkHttp asks it without us: one
      // whose isOneShot() throws fails the call there with its own exception, not the failure.
      boolean own = delegate.isOneShot();
      return failed || own;
    }

    @Override
    public boolean isDuplex() {
      return delegate.isDuplex();
    }
  }
}
