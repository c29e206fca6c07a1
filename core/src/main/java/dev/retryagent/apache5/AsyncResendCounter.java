package dev.retryagent.apache5;

import dev.retryagent.internal.apache.ExchangeLog;
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
 * it, on the I/O thread: the call is made current there ({@link AsyncRetryExecHandler#CURRENT}) for
 * {@link GovernedRetryStrategy}. Each request carries the attempt header. Stateless.
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
    chain.proceed(request, producer, scope, new Counted(call, attempt.log, callback));
  }

  /** The callback handed up to HttpClient's retry element, with the call current around it. */
  private static final class Counted implements AsyncExecCallback {
    private final AsyncCall call;
    private final ExchangeLog log;
    private final AsyncExecCallback up;

    Counted(AsyncCall call, ExchangeLog log, AsyncExecCallback up) {
      this.call = call;
      this.log = log;
      this.up = up;
    }

    @Override
    public AsyncDataConsumer handleResponse(HttpResponse response, EntityDetails details)
        throws HttpException, IOException {
      log.answered(response.getCode());
      AsyncCall outer = AsyncRetryExecHandler.CURRENT.get();
      AsyncRetryExecHandler.CURRENT.set(call);
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
      AsyncCall outer = AsyncRetryExecHandler.CURRENT.get();
      AsyncRetryExecHandler.CURRENT.set(call);
      try {
        up.failed(cause);
      } finally {
        restore(outer);
      }
    }

    private static void restore(AsyncCall outer) {
      // set, not remove: the I/O thread keeps its map entry, holding null (or what it held
      // before), so no call is left reachable from it and no entry is made anew per response.
      AsyncRetryExecHandler.CURRENT.set(outer);
    }
  }
}
