package dev.retryagent.apache4;

import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.SelfViewCall;
import dev.retryagent.engine.Sleeper;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.internal.Waits;
import java.io.IOException;
import java.util.function.BooleanSupplier;
import org.apache.http.Header;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.client.methods.HttpExecutionAware;
import org.apache.http.conn.ConnectionPoolTimeoutException;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.protocol.BasicHttpContext;
import org.apache.http.protocol.HttpContext;

/**
 * One call {@link ApacheRetrying4} runs, as one object: the engine's call, its request view, its
 * attempt, its sleeper and its abort signal, instead of a call, a view, an attempt lambda of seven
 * captures, a sleeper and an abort method reference, which also made the call's extras (issue 13:
 * 256 B per call, 80 B now). Used by the call's thread; {@link dev.retryagent.engine.RetryCall}
 * guards its own part.
 *
 * <p>The request object is the application's own and is sent as it is by every attempt; only an
 * attempt header (when the policy names one) and a resend's trace context are set on it for the
 * call, and the request's own headers are put back, as they were and in their order, when the call
 * ends ({@link #restore}). The view reads the request when asked ({@link Request4}).
 */
final class Call4 extends SelfViewCall
    implements SyncRetryLoop.Attempt<CloseableHttpResponse>, Sleeper, BooleanSupplier {
  private final ApacheRetrying4.Transport transport;
  private final HttpHost target;
  private final HttpRequest request;
  private final HttpContext context;
  // Whether the request went out, or its entity was read before (an application's interceptor that
  // buffers it, in ProtocolExec before the connection), is all that is kept of its entity: whether
  // that entity can be written again is read when asked (bodyReplayable), a field fewer (80 B, not
  // 88).
  private volatile boolean sent;
  // The request's own headers, all of them in their order, before the call first changed one.
  private Header[] ownHeaders;

  /** Not begun: hand it to {@code RetryEngine.begin} first. */
  Call4(
      ApacheRetrying4.Transport transport,
      HttpHost target,
      HttpRequest request,
      HttpContext context) {
    this.transport = transport;
    this.target = target;
    this.request = request;
    this.context = context;
  }

  /** The client each attempt is made on, or null when not known ({@code Transport.client}). */
  CloseableHttpClient client() {
    return transport.client();
  }

  /** Our own {@code failure}, said once per cause by the engine ({@code RetryEngine}'s). */
  void internalError(String where, Throwable failure, String consequence) {
    engine().internalError(where, failure, consequence);
  }

  /** The application's request, which every attempt sends. */
  HttpRequest httpRequest() {
    return request;
  }

  @Override
  public CloseableHttpResponse run(int n, long timeoutNanos) throws IOException {
    beforeAttempt(n, policy().retry().attemptHeader());
    // Without a context of the application's, each attempt gets a fresh one, as a new call would.
    HttpContext own = context != null ? context : new BasicHttpContext();
    ObservingContext observed =
        timeoutNanos < 0
            ? new ObservingContext(own, this)
            : new BoundedContext(own, this, timeoutNanos);
    CallContext.AttemptSpan span = startAttemptSpan(Request4.methodOf(request), this, HEADERS);
    boolean reported = false;
    try {
      CloseableHttpResponse response = transport.execute(target, request, observed);
      int status = response.getStatusLine().getStatusCode();
      // Ended here, once: the catch below must not end it again if what follows throws.
      CallContext.AttemptSpan answered = span;
      span = CallContext.AttemptSpan.NONE;
      endAttemptSpan(answered, status, null);
      if (observed.log().answeredShortBody()) {
        // The host answered a request the application's entity cut short (it waited for the rest
        // and gave up, 408, or refused it): the application's failure, not the host's answer. The
        // response goes to the application as it came, neither retried nor a breaker failure.
        reported = true;
        observed.log().endCallAsApplications(this, null, status);
      }
      return response;
    } catch (IOException | RuntimeException | Error e) {
      endAttemptSpan(span, -1, e);
      boolean aborted = callerGaveUp();
      if (aborted) {
        // HttpClient 4.5's abort() closes the socket under the read: the failure that follows
        // (Socket closed, a reset) is the abort's, not the host's. Said here, where it happened,
        // so that a call never aborted makes nothing for it.
        abortedWhen(this);
      }
      if (observed.log().isApplications(e)) {
        // The application's entity failed, not the host: the call ends here as the application's
        // failure (the breaker's permit back without an outcome, no retry), with the exception as
        // it is.
        reported = true;
        observed.log().endCallAsApplications(this, e, -1);
      } else if (e instanceof ConnectionPoolTimeoutException || aborted) {
        // No pooled connection in time, or the application aborted the request: if that came
        // before the exchange's request was written (while it waited for a connection, or
        // connected), nothing went out.
        observed.log().noConnection(this);
      }
      throw e;
    } finally {
      // Only now, the attempt over: HttpClient's own resend inside it (of the copy an interceptor
      // of the application's buffered) is judged as HttpClient judges it, while a retry of ours,
      // which sends the application's entity again, never replays one that was read.
      if (observed.log().exchanges() > 0 || observed.bodyRead()) {
        sent = true;
      }
      if (!reported) {
        observed.log().reportTo(this);
      }
    }
  }

  /** Sets the attempt header, when the policy names one, to the attempt's number. */
  void beforeAttempt(int n, String attemptHeader) {
    if (attemptHeader != null) {
      keepOwnHeaders();
      request.setHeader(attemptHeader, Integer.toString(n));
    }
  }

  /**
   * Remembers all the request's headers, in their order, before the call changes the first: putting
   * back only the values of the headers it set (removed, then added) would move them to the end of
   * the list, and a later send of the same object would write its header lines in another order.
   * Nothing else changes the application's object during the call: HttpClient 4.5 sends a wrapper
   * of it ({@code HttpRequestWrapper}), to which its interceptors, authentication and redirects add
   * what they add. Headers are immutable, so the array keeps them as they are.
   */
  private void keepOwnHeaders() {
    if (ownHeaders == null) {
      ownHeaders = request.getAllHeaders();
    }
  }

  /**
   * Sets a header of an attempt's trace context ({@code traceparent}, ...) on the request. The
   * request is the application's: a later call that sends it again (not retried, or with tracing
   * that sets nothing) must not carry a span of this call, so {@link #restore} puts its own back.
   */
  void setSpanHeader(String name, String value) {
    keepOwnHeaders();
    request.setHeader(name, value);
  }

  /**
   * Puts the request's own headers back as they were, in their order (the attempt header and trace
   * context headers the call set included).
   */
  void restore() {
    if (ownHeaders != null) {
      request.setHeaders(ownHeaders);
    }
  }

  /**
   * Waits {@code nanos}, or until the application aborts the request ({@code abort()} ends the wait
   * within 50 ms; the next attempt then fails at once, as HttpClient fails an aborted request).
   */
  @Override
  public void sleep(long nanos) throws InterruptedException {
    BooleanSupplier aborted = request instanceof HttpExecutionAware ? this : null;
    Waits.sleep(engine().sleeper(), engine().clock(), aborted, nanos);
  }

  /** The abort signal ({@link #abortedWhen}), as {@link #callerGaveUp}. */
  @Override
  public boolean getAsBoolean() {
    return callerGaveUp();
  }

  /** The application aborted the request ({@code HttpRequestBase.abort()}). */
  @Override
  public boolean callerGaveUp() {
    return request instanceof HttpExecutionAware && ((HttpExecutionAware) request).isAborted();
  }

  @Override
  public String method() {
    return Request4.methodOf(request);
  }

  @Override
  public String scheme() {
    return Request4.schemeOf(target, request);
  }

  @Override
  public String host() {
    return Request4.hostOf(target, request);
  }

  @Override
  public int port() {
    return Request4.portOf(target, request);
  }

  @Override
  public String path() {
    return Request4.pathOf(request);
  }

  /** Read from the request when asked: only a path written asks. */
  @Override
  public boolean atPastPath() {
    return Request4.atPastPath(request);
  }

  @Override
  public String header(String name) {
    return Request4.header(request, name);
  }

  /**
   * A non-repeatable entity can be sent again only while no attempt started to write it, nor read
   * it otherwise: every retry sends the application's own request, entity and all, so an entity an
   * interceptor read before a refused connection would go out empty (or fail, its stream closed).
   */
  @Override
  public boolean bodyReplayable() {
    return !sent || !Request4.oneShot(request);
  }

  /**
   * Sets the attempt's trace context on the request it sends: the application's own request object,
   * whose own values {@link #restore} puts back when the call ends.
   */
  private static final CallContext.HeaderSetter<Call4> HEADERS = Call4::setSpanHeader;
}
