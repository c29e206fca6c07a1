package dev.retryagent.apache5;

import dev.retryagent.apache.ExchangeLog;
import dev.retryagent.apache.Waits;
import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.Sleeper;
import dev.retryagent.engine.SyncRetryLoop;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.Objects;
import org.apache.hc.client5.http.classic.ExecChain;
import org.apache.hc.client5.http.classic.ExecChainHandler;
import org.apache.hc.client5.http.impl.ChainElement;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.core5.concurrent.CancellableDependency;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.support.ClassicRequestBuilder;

/**
 * Runs each request of an Apache HttpClient 5.x classic client through a {@link RetryEngine}: an
 * {@code ExecChainHandler} that must be first in the client's execution chain, so that each attempt
 * runs the whole chain below it (redirects, HttpClient's own retry, protocol, connection), and
 * every {@code execute} overload goes through it. By hand:
 *
 * <pre>{@code
 * CloseableHttpClient client =
 *     RetryExecHandler.addTo(HttpClients.custom(), engine).build();
 * }</pre>
 *
 * <p>{@link #addTo} also adds a counter right after HttpClient's own retry element ({@code
 * HttpRequestRetryExec}, which by default sends a request again once after an I/O failure of an
 * idempotent request, and after a 429 or 503 of any method): what it resends inside one of our
 * attempts counts as attempts, so the two do not multiply (docs/apache-httpclient.md).
 *
 * <p>Every response it retries is read (so its connection goes back to the pool) and closed before
 * the next attempt. A non-repeatable entity ({@code HttpEntity.isRepeatable() == false}) is never
 * written twice. A cancelled request ({@code HttpUriRequestBase.cancel()}) ends the wait between
 * attempts within 50 ms. Each attempt keeps the client's own timeouts. The wait happens on the
 * caller's thread. Thread-safe; one instance may serve many clients.
 */
public final class RetryExecHandler implements ExecChainHandler {
  /** The name of this handler in the execution chain. */
  public static final String NAME = "retry-agent";

  /** The name of the resend counter, right after HttpClient's {@code RETRY} element. */
  public static final String COUNTER_NAME = "retry-agent-resends";

  /** The exchanges of the attempt running on this thread, for {@link ResendCounter}. */
  static final ThreadLocal<ExchangeLog> CURRENT = new ThreadLocal<>();

  private final RetryEngine engine;

  public RetryExecHandler(RetryEngine engine) {
    this.engine = Objects.requireNonNull(engine, "engine");
  }

  /** Adds a new handler on {@code engine} to {@code builder}; see {@link #install}. */
  public static HttpClientBuilder addTo(HttpClientBuilder builder, RetryEngine engine) {
    return install(builder, new RetryExecHandler(engine));
  }

  /**
   * Puts {@code retries} first in the chain of every client {@code builder} builds, and the resend
   * counter after HttpClient's own retry element (absent when the application disabled automatic
   * retries: nothing to count then). An exec interceptor the application adds first afterwards runs
   * outside ours, once per call.
   */
  public static HttpClientBuilder install(HttpClientBuilder builder, ExecChainHandler retries) {
    builder.addExecInterceptorFirst(NAME, retries);
    builder.addExecInterceptorAfter(
        ChainElement.RETRY.name(), COUNTER_NAME, ResendCounter.INSTANCE);
    return builder;
  }

  @Override
  public ClassicHttpResponse execute(
      ClassicHttpRequest request, ExecChain.Scope scope, ExecChain chain)
      throws IOException, HttpException {
    ClassicRequest info = new ClassicRequest(request, scope.route.getTargetHost());
    RetryCall call = engine.newCall(info);
    if (call.passThrough()) {
      return chain.proceed(request, scope);
    }
    info.prepare(call.policy().retry().attemptHeader());
    Sleeper sleeper = engine.sleeper();
    if (scope.originalRequest instanceof CancellableDependency) {
      CancellableDependency cancellable = (CancellableDependency) scope.originalRequest;
      call.cancelledWhen(cancellable::isCancelled);
      sleeper = Waits.untilCancelled(sleeper, cancellable::isCancelled);
    }
    ExchangeLog outer = CURRENT.get();
    try {
      return SyncRetryLoop.execute(
          call,
          sleeper,
          (n, timeoutNanos) -> attempt(n == 1 ? request : copy(scope), n, scope, chain, info, call),
          ACCESS);
    } catch (ChainFailure e) {
      throw e.cause;
    } catch (InterruptedException e) {
      // Only the wait can be interrupted, and SyncRetryLoop turns that into InterruptedIOException.
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted");
    } finally {
      if (outer == null) {
        CURRENT.remove();
      } else {
        CURRENT.set(outer);
      }
    }
  }

  /**
   * A retry sends a fresh copy of the application's request, as HttpClient's own retry does: the
   * chain below adds headers to the request it is given.
   */
  private static ClassicHttpRequest copy(ExecChain.Scope scope) {
    return ClassicRequestBuilder.copy(scope.originalRequest).build();
  }

  private static ClassicHttpResponse attempt(
      ClassicHttpRequest request,
      int n,
      ExecChain.Scope scope,
      ExecChain chain,
      ClassicRequest info,
      RetryCall call)
      throws IOException {
    ExchangeLog log = new ExchangeLog();
    CURRENT.set(log);
    try {
      return chain.proceed(info.forAttempt(request, n), scope);
    } catch (HttpException e) {
      throw new ChainFailure(e);
    } finally {
      CURRENT.set(null);
      log.reportTo(call);
    }
  }

  /**
   * Carries a protocol failure ({@code HttpException}) through the retry loop, which only passes
   * I/O and unchecked exceptions: it is not retried, and reaches the caller unchanged.
   */
  private static final class ChainFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final HttpException cause;

    ChainFailure(HttpException cause) {
      super(cause.getMessage(), cause, false, false);
      this.cause = cause;
    }
  }

  static final ResponseAccess<ClassicHttpResponse> ACCESS =
      new ResponseAccess<ClassicHttpResponse>() {
        @Override
        public int status(ClassicHttpResponse response) {
          return response.getCode();
        }

        @Override
        public String header(ClassicHttpResponse response, String name) {
          Header h = response.getFirstHeader(name);
          return h == null ? null : h.getValue();
        }

        @Override
        public void discard(ClassicHttpResponse response) {
          // Reading the body to its end gives the connection back to the pool for the next
          // attempt; closing alone would leave it leased to this exchange.
          try {
            EntityUtils.consume(response.getEntity());
          } catch (IOException | RuntimeException ignored) {
            // the connection is discarded instead
          }
          try {
            response.close();
          } catch (IOException | RuntimeException ignored) {
            // nothing more to release
          }
        }
      };
}
