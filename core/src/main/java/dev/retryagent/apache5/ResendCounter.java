package dev.retryagent.apache5;

import dev.retryagent.internal.apache.ExchangeLog;
import java.io.IOException;
import java.util.concurrent.CancellationException;
import org.apache.hc.client5.http.classic.ExecChain;
import org.apache.hc.client5.http.classic.ExecChainHandler;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.HttpException;

/**
 * Sits right after HttpClient's own retry element ({@code HttpRequestRetryExec}): each request it
 * passes down is one exchange of the attempt that {@link RetryExecHandler} runs on this thread, so
 * that what HttpClient resends by itself is counted. Redirects pass here too (each hop is an
 * exchange answered with a 3xx); authentication challenges are answered below, unseen. What
 * HttpClient resends here was allowed by the call first when the strategy is governed ({@link
 * GovernedRetryStrategy}); it is counted either way. Each request's entity is watched for a failure
 * of its own, and each request carries the attempt header ({@link ClassicCall#watch}) and the
 * attempt's trace context ({@link RetryExecHandler.Attempt#traceOn}). Stateless.
 */
final class ResendCounter implements ExecChainHandler {
  static final ResendCounter INSTANCE = new ResendCounter();

  private ResendCounter() {}

  @Override
  public ClassicHttpResponse execute(
      ClassicHttpRequest request, ExecChain.Scope scope, ExecChain chain)
      throws IOException, HttpException {
    RetryExecHandler.Attempt attempt = RetryExecHandler.CURRENT.get();
    if (attempt == null) {
      return chain.proceed(request, scope);
    }
    attempt.exchangeScope = scope; // what HttpClient's retry element would resend: its request
    ExchangeLog log = attempt;
    if (attempt.call instanceof ClassicCall) {
      // A resend or a redirect's hop is a copy of the application's request HttpClient made below
      // the attempt's: its entity is watched too, or a failure of the entity's own in it (a new
      // exception from the same broken source) was taken for the host's; and it carries the
      // attempt's header, which the copy lacked.
      ((ClassicCall) attempt.call).watch(request, attempt.number, log);
    }
    attempt.traceOn(request);
    log.exchangeStarted();
    ClassicHttpResponse response;
    try {
      response = chain.proceed(request, scope);
    } catch (CancellationException e) {
      // The lease below us was cancelled (the request's cancel() while it waited for a pooled
      // connection): the exchange never reached a connection.
      log.notSent();
      throw e;
    } catch (IOException e) {
      if (RetryExecHandler.noPooledConnection(e) || RetryExecHandler.leaseEnded(e)) {
        // The lease below us timed out, or was cancelled or interrupted while it waited (a
        // RequestFailedException): the exchange never reached a connection.
        log.notSent();
      }
      throw e;
    }
    log.answered(response.getCode());
    return response;
  }
}
