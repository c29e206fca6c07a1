package dev.retryagent.apache5;

import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.internal.apache.ExchangeLog;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.TimeoutException;
import org.apache.hc.client5.http.classic.ExecChain;
import org.apache.hc.client5.http.classic.ExecChainHandler;
import org.apache.hc.client5.http.impl.ChainElement;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.client5.http.impl.classic.RequestFailedException;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.ConnectionRequestTimeoutException;
import org.apache.hc.core5.http.HttpException;

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
 * <p>HttpClient's own retry element ({@code HttpRequestRetryExec}) sends a request again by itself,
 * inside one of our attempts (by default once after an I/O failure of an idempotent request, and
 * once after a 429 or 503 of any method). {@link #addTo} governs it: the builder's retry strategy
 * is wrapped so that HttpClient never resends an outcome the policy retries (our retry takes its
 * place) and resends any other as it would without us ({@link GovernedRetryStrategy}); and a
 * counter right after that element counts what it does resend as attempts, so the two never
 * multiply (docs/apache-httpclient.md).
 *
 * <p>Every response it retries is read (so its connection goes back to the pool) and closed before
 * the next attempt. A non-repeatable entity ({@code HttpEntity.isRepeatable() == false}) is never
 * written twice. A cancelled request ({@code HttpUriRequestBase.cancel()}) ends the wait between
 * attempts within 50 ms. Each attempt keeps the client's own timeouts, shortened to the policy's
 * {@code perAttemptTimeout} and, for a retry, to the time left before its {@code deadline} ({@link
 * AttemptTimeouts}). The wait happens on the caller's thread. Thread-safe; one instance may serve
 * many clients.
 */
public final class RetryExecHandler implements ExecChainHandler {
  /** The name of this handler in the execution chain. */
  public static final String NAME = "retry-agent";

  /** The name of the resend counter, right after HttpClient's {@code RETRY} element. */
  public static final String COUNTER_NAME = "retry-agent-resends";

  /**
   * The attempt running on this thread, for {@link ResendCounter} and {@link
   * GovernedRetryStrategy}; null outside our attempts.
   */
  static final ThreadLocal<Attempt> CURRENT = new ThreadLocal<>();

  private final RetryEngine engine;

  public RetryExecHandler(RetryEngine engine) {
    this.engine = Objects.requireNonNull(engine, "engine");
  }

  /**
   * Adds a new handler on {@code engine} to {@code builder}, as {@link #install} does, and governs
   * the retry strategy the builder has now: the application's own when it set one before, else
   * HttpClient's default. A strategy set on the builder afterwards replaces the governed one: it
   * then resends as it likes, and its resends are counted (a retry of ours leaves room for them).
   * To govern a strategy of your own, set it before calling this method.
   */
  public static HttpClientBuilder addTo(HttpClientBuilder builder, RetryEngine engine) {
    // A handler and counter of ours the builder holds already step aside for the new ones: those
    // the retry agent put there when the builder was made, when it runs in the same JVM (the
    // application's copy of the library is not the agent's, so its calls would be retried by
    // both: each attempt of this handler again by the agent's, below it), or an earlier addTo's.
    // Replaced in place when the client is built, before the new ones are added; a builder
    // without them is left as it is.
    builder.replaceExecInterceptor(NAME, SteppedAside.INSTANCE);
    builder.replaceExecInterceptor(COUNTER_NAME, SteppedAside.INSTANCE);
    add(builder, new RetryExecHandler(engine));
    GovernedRetryStrategy.govern(builder);
    return builder;
  }

  /**
   * For a builder just made (the agent's hook, at the end of its constructor): puts {@code retries}
   * first in the chain of every client {@code builder} builds, the resend counter after
   * HttpClient's own retry element (absent when the application disables automatic retries: nothing
   * to count then), and HttpClient's default retry strategy, governed. An exec interceptor the
   * application adds first afterwards runs outside ours, once per call; a retry strategy it sets
   * afterwards replaces the governed one (see {@link #addTo}).
   */
  public static HttpClientBuilder install(HttpClientBuilder builder, ExecChainHandler retries) {
    add(builder, retries);
    builder.setRetryStrategy(
        GovernedRetryStrategy.around(DefaultHttpRequestRetryStrategy.INSTANCE));
    return builder;
  }

  private static void add(HttpClientBuilder builder, ExecChainHandler retries) {
    builder.addExecInterceptorFirst(NAME, retries);
    builder.addExecInterceptorAfter(
        ChainElement.RETRY.name(), COUNTER_NAME, ResendCounter.INSTANCE);
  }

  /**
   * Runs {@code request} down {@code chain} as if no handler of ours were there: what HttpClient
   * resends is neither governed nor counted for an attempt of an enclosing call on this thread (a
   * call made from inside another's chain, say by a request interceptor).
   */
  public static ClassicHttpResponse passThrough(
      ClassicHttpRequest request, ExecChain.Scope scope, ExecChain chain)
      throws IOException, HttpException {
    Attempt outer = CURRENT.get();
    // set, not remove: see execute's finally.
    if (outer != null) {
      CURRENT.set(null);
    }
    try {
      return chain.proceed(request, scope);
    } finally {
      if (outer != null) {
        CURRENT.set(outer);
      }
    }
  }

  @Override
  public ClassicHttpResponse execute(
      ClassicHttpRequest request, ExecChain.Scope scope, ExecChain chain)
      throws IOException, HttpException {
    ClassicCall call = engine.begin(new ClassicCall(request, scope, chain));
    if (call.passThrough()) {
      return passThrough(request, scope, chain);
    }
    Attempt outer = CURRENT.get();
    try {
      return SyncRetryLoop.execute(call, call, call, call);
    } catch (ChainFailure e) {
      // The earlier attempts' failures, which the call attached to the carrier.
      for (Throwable earlier : e.getSuppressed()) {
        e.cause.addSuppressed(earlier);
      }
      throw e.cause;
    } catch (InterruptedException e) {
      // Only the wait can be interrupted, and SyncRetryLoop turns that into InterruptedIOException.
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted");
    } finally {
      // set, not remove: the thread keeps its map entry, holding null (or the enclosing call's
      // attempt, which it held before), so no call is left reachable from a pooled thread and no
      // entry is made anew for the next call (remove() cost one, 32 B, per call).
      CURRENT.set(outer);
    }
  }

  /** Attempt {@code n} of {@code call}, sending {@code request} down {@code chain}. */
  static ClassicHttpResponse attempt(
      ClassicHttpRequest request, int n, ExecChain.Scope scope, ExecChain chain, ClassicCall call)
      throws IOException {
    Attempt attempt = new Attempt(call, n);
    CURRENT.set(attempt);
    ClassicHttpRequest sent = call.forAttempt(request, n, attempt);
    CallContext.AttemptSpan span = call.startAttemptSpan(sent.getMethod(), sent, attempt);
    boolean reported = false;
    try {
      ClassicHttpResponse response = chain.proceed(sent, scope);
      // Ended here, once: the catch below must not end it again if what follows throws.
      CallContext.AttemptSpan answered = span;
      span = CallContext.AttemptSpan.NONE;
      call.endAttemptSpan(answered, response.getCode(), null);
      if (attempt.answeredShortBody()) {
        // The host answered a request the application's entity cut short (it waited for the rest
        // and gave up, 408, or refused it): the application's failure, not the host's answer. The
        // response goes to the application as it came, neither retried nor a breaker failure.
        CURRENT.set(null);
        reported = true;
        attempt.endCallAsApplications(call, null, response.getCode());
      }
      return response;
    } catch (HttpException e) {
      call.endAttemptSpan(span, -1, e);
      throw new ChainFailure(e);
    } catch (IOException | RuntimeException | Error e) {
      call.endAttemptSpan(span, -1, e);
      if (attempt.isApplications(e)) {
        // The application's entity failed, not the host: the call ends here as the application's
        // failure (the breaker's permit back without an outcome, no retry), with the exception as
        // it is.
        CURRENT.set(null);
        reported = true;
        attempt.endCallAsApplications(call, e, -1);
      } else if (noPooledConnection(e) || leaseEnded(e)) {
        // No pooled connection in time, or the lease cancelled or interrupted while it waited for
        // one: nothing of the exchange went out.
        attempt.noConnection(call, leaseEnded(e));
      }
      throw e;
    } finally {
      CURRENT.set(null);
      if (!reported) {
        attempt.reportTo(call);
      }
    }
  }

  /**
   * Whether {@code e} is HttpClient's failure to lease a pooled connection within {@code
   * connectionRequestTimeout}: {@code ConnectionRequestTimeoutException} when its wait for the
   * lease timed out, or {@code RequestFailedException} around a {@code TimeoutException} when the
   * pool failed the pending lease at its deadline first (HttpCore's {@code
   * DeadlineTimeoutException}, passed on as the lease's {@code ExecutionException}: a connection
   * released after the deadline, before the wait ended). Nothing of the exchange went out either
   * way.
   */
  static boolean noPooledConnection(Throwable e) {
    return e instanceof ConnectionRequestTimeoutException
        || (e instanceof RequestFailedException && e.getCause() instanceof TimeoutException);
  }

  /**
   * Whether {@code e} ended HttpClient's wait for a pooled connection before it had one, by the
   * application's hand: the request's {@code cancel()} (HttpCore's pool throws {@code
   * CancellationException}; a lease failed with one would reach us inside InternalExecRuntime's
   * {@code RequestFailedException}, not seen but read the same), or an interrupt of the waiting
   * thread ({@code RequestFailedException("Request aborted")} around the {@code
   * InterruptedException}, the flag set again). Only the lease wraps those causes so (read in 5.4);
   * nothing of the exchange went out.
   */
  static boolean leaseEnded(Throwable e) {
    return e instanceof CancellationException
        || (e instanceof RequestFailedException
            && (e.getCause() instanceof InterruptedException
                || e.getCause() instanceof CancellationException));
  }

  /**
   * One attempt of a call: the exchanges HttpClient makes in it (it is their log, one object per
   * attempt instead of two: issue 13, 24 B per attempt), the call that decides, and the attempt's
   * number, which every request of the attempt carries in the attempt header.
   */
  static final class Attempt extends ExchangeLog
      implements CallContext.HeaderSetter<ClassicHttpRequest> {
    final RetryCall call;
    final int number;
    // The trace context the attempt's span set on its request (name, value, ...), or null: for
    // the requests HttpClient makes below us in the attempt (ResendCounter).
    private List<String> traceHeaders;

    // The scope of the exchange HttpClient's retry element passed down last (ResendCounter): from
    // 5.4 on a redirect's hop runs in a scope of its own, whose request is what that element
    // resends ({@link #followUpRequest}). Null before the first exchange.
    ExecChain.Scope exchangeScope;

    Attempt(RetryCall call, int number) {
      this.call = call;
      this.number = number;
    }

    /**
     * The request HttpClient's retry element would resend, when it is one HttpClient made itself to
     * follow the application's with another method (the GET of a redirect after a POST answered
     * 301, 302 or 303: from 5.4 on the hop's scope holds it, and the element resends a copy of the
     * scope's request), judged as itself; null when it has the call's method (5.1 to 5.3 keep the
     * application's request for every hop; a 307 sends the POST again) or cannot be told, and the
     * call's own rule decides. Made only when HttpClient asks to resend.
     */
    ClassicRequest followUpRequest() {
      ExecChain.Scope hop = exchangeScope;
      if (hop == null
          || hop.originalRequest == null
          || hop.route == null
          || hop.originalRequest.getMethod().equalsIgnoreCase(call.request().method())) {
        return null;
      }
      return new ClassicRequest(hop.originalRequest, hop.route.getTargetHost());
    }

    /** Sets the attempt's trace context on the request it sends, and keeps it for its copies. */
    @Override
    public void set(ClassicHttpRequest request, String name, String value) {
      request.setHeader(name, value);
      if (traceHeaders == null) {
        traceHeaders = new ArrayList<>(4);
      }
      traceHeaders.add(name);
      traceHeaders.add(value);
    }

    /**
     * Sets the attempt's trace context on {@code exchange}, a request HttpClient sends in the
     * attempt: a redirect's hop or a resend of its own, copies of the application's request made
     * below us, which lacked it; the server then saw the hop outside the attempt's trace.
     */
    void traceOn(ClassicHttpRequest exchange) {
      List<String> h = traceHeaders;
      if (h != null) {
        for (int i = 0; i + 1 < h.size(); i += 2) {
          exchange.setHeader(h.get(i), h.get(i + 1));
        }
      }
    }
  }

  /**
   * What an earlier handler of ours becomes in the chain of a builder {@link #addTo} was given
   * after it: the request goes on down the chain untouched.
   */
  private static final class SteppedAside implements ExecChainHandler {
    static final SteppedAside INSTANCE = new SteppedAside();

    @Override
    public ClassicHttpResponse execute(
        ClassicHttpRequest request, ExecChain.Scope scope, ExecChain chain)
        throws IOException, HttpException {
      return chain.proceed(request, scope);
    }

    @Override
    public String toString() {
      return "retry-agent (stepped aside)";
    }
  }

  /**
   * Carries a protocol failure ({@code HttpException}) through the retry loop, which only passes
   * I/O and unchecked exceptions: it is never retried, whatever {@code retryOn.exceptions} names
   * (the engine's Classifier knows this class by name), and reaches the caller unchanged.
   */
  private static final class ChainFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final HttpException cause;

    ChainFailure(HttpException cause) {
      super(cause.getMessage(), cause, true, false);
      this.cause = cause;
    }
  }
}
