package dev.retryagent.apache5;

import dev.retryagent.engine.AttemptResult;
import dev.retryagent.engine.RequestInfo;
import java.io.IOException;
import org.apache.hc.client5.http.async.AsyncExecCallback;
import org.apache.hc.client5.http.async.AsyncExecChain;
import org.apache.hc.client5.http.async.AsyncExecChainHandler;
import org.apache.hc.core5.http.EntityDetails;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.HttpRequest;
import org.apache.hc.core5.http.HttpResponse;
import org.apache.hc.core5.http.nio.AsyncDataConsumer;
import org.apache.hc.core5.http.nio.AsyncEntityProducer;

/**
 * The async client's {@link ResendCounter}: right after HttpClient's own retry element ({@code
 * AsyncHttpRequestRetryExec}), each request it passes down is one exchange of the attempt under way
 * of an {@link AsyncRetryExecHandler} call, so that what HttpClient resends by itself counts as
 * attempts. HttpClient's retry element asks its strategy inside the callback this class hands up to
 * it, on the I/O thread: that callback, which knows the call and the request the element would
 * resend, is made current there ({@link AsyncRetryExecHandler#CURRENT}) for {@link
 * GovernedRetryStrategy}. Each request carries the attempt header. Stateless.
 */
final class AsyncResendCounter implements AsyncExecChainHandler {
  static final AsyncResendCounter INSTANCE = new AsyncResendCounter();

  private AsyncResendCounter() {}

  @Override
  public void execute(
      HttpRequest request,
      AsyncEntityProducer producer,
      AsyncExecChain.Scope scope,
      AsyncExecChain chain,
      AsyncExecCallback callback)
      throws HttpException, IOException {
    AsyncCall call =
        scope.execCount == null ? null : AsyncRetryExecHandler.RUNNING.get(scope.execCount);
    AsyncCall.Exchange attempt = call == null ? null : call.current;
    if (attempt == null) {
      chain.proceed(request, producer, scope, callback);
      return;
    }
    String header = call.policy().retry().attemptHeader();
    if (header != null) {
      // A redirect's hop or a resend is a copy HttpClient made below the attempt: it lacked it.
      request.setHeader(header, Integer.toString(attempt.number));
    }
    attempt.log.exchangeStarted();
    chain.proceed(request, producer, scope, new Counted(call, attempt, callback, request, scope));
  }

  /**
   * The callback handed up to HttpClient's retry element, current around it ({@link
   * AsyncRetryExecHandler#CURRENT}): the call, and the request this exchange sent, a copy the
   * element made (5.1 to 5.6) of the one it resends.
   */
  static final class Counted implements AsyncExecCallback {
    private final AsyncCall call;
    private final AsyncCall.Exchange attempt;
    private final AsyncExecCallback up;
    // What was passed down, and in which scope: in every 5.x a redirect's hop is a request of its
    // own here (AsyncRedirectExec sits above the retry element), with its own scope when the
    // redirect leads to another host.
    private final HttpRequest sent;
    private final AsyncExecChain.Scope scope;

    Counted(
        AsyncCall call,
        AsyncCall.Exchange attempt,
        AsyncExecCallback up,
        HttpRequest sent,
        AsyncExecChain.Scope scope) {
      this.call = call;
      this.attempt = attempt;
      this.up = up;
      this.sent = sent;
      this.scope = scope;
    }

    /**
     * Whether HttpClient's retry element may resend after {@code result}, the outcome of this
     * exchange ({@link AsyncCall#clientMayResendInExchange}); {@code resent}: the request it names
     * as the one it would resend (its I/O strategy's argument), or null to take the one this
     * exchange sent (its 429 and 503 strategy names none). Never after the call judged the
     * attempt's response and retries it ({@link AsyncCall.Exchange#retriedAtHead}): its body, read
     * away, failed (broken off, or past the length read away); the call's retry, which waits for
     * this exchange's end, takes the resend's place. Resent, the resend's answer came to the
     * attempt's callback and went up to the application, and the exchange's end, which the retry
     * waits for, never came: the call never ended.
     */
    boolean mayResend(AttemptResult result, HttpRequest resent) {
      if (attempt.retriedAtHead()) {
        return false;
      }
      return call.clientMayResendInExchange(result, followUp(resent != null ? resent : sent));
    }

    /**
     * {@code resent} judged as itself when HttpClient made it to follow the call's request with
     * another method (the GET of a redirect after a POST answered 301, 302 or 303), as the classic
     * client's {@link RetryExecHandler.Attempt#followUpRequest}; null when it has the call's method
     * (the call's own request, or a 307's hop, which sends the POST again) and the call's rule
     * decides. Made only when HttpClient asks to resend.
     */
    RequestInfo followUp(HttpRequest resent) {
      if (resent.getMethod().equalsIgnoreCase(call.method()) || scope.route == null) {
        return null;
      }
      return new ClassicRequest(resent, scope.route.getTargetHost());
    }

    @Override
    public AsyncDataConsumer handleResponse(HttpResponse response, EntityDetails details)
        throws HttpException, IOException {
      attempt.log.answered(response.getCode());
      Counted outer = AsyncRetryExecHandler.CURRENT.get();
      AsyncRetryExecHandler.CURRENT.set(this);
      try {
        return up.handleResponse(response, details);
      } finally {
        restore(outer);
      }
    }

    @Override
    public void handleInformationResponse(HttpResponse response) throws HttpException, IOException {
      up.handleInformationResponse(response);
    }

    @Override
    public void completed() {
      up.completed();
    }

    @Override
    public void failed(Exception cause) {
      Counted outer = AsyncRetryExecHandler.CURRENT.get();
      AsyncRetryExecHandler.CURRENT.set(this);
      try {
        up.failed(cause);
      } finally {
        restore(outer);
      }
    }

    private static void restore(Counted outer) {
      // set, not remove: the I/O thread keeps its map entry, holding null (or what it held
      // before), so no call is left reachable from it and no entry is made anew per response.
      AsyncRetryExecHandler.CURRENT.set(outer);
    }
  }
}
