package dev.retryagent.apache5;

import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.SelfViewCall;
import dev.retryagent.engine.Sleeper;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.internal.Waits;
import dev.retryagent.internal.apache.BodyWrites;
import dev.retryagent.internal.apache.ExchangeLog;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.function.BooleanSupplier;
import org.apache.hc.client5.http.classic.ExecChain;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.protocol.HttpClientContext;
import org.apache.hc.core5.concurrent.CancellableDependency;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.http.io.entity.HttpEntityWrapper;
import org.apache.hc.core5.http.io.support.ClassicRequestBuilder;

/**
 * One call {@link RetryExecHandler} runs, as one object (issue 13: 72 B, where a view, the engine's
 * call and the attempts were 136 B and a cancel signal made the call's extras, 64 B, and two
 * lambdas, 40 B): the engine's call, its request view, its attempts (the rest of the chain, once
 * per attempt), the reading and release of their responses, its sleeper, and the maker of each
 * attempt's request: the attempt header, and the entity wrapped, so we know whether a
 * non-repeatable one was written and whether a failure while it was written was the application's
 * own ({@link BodyWrites}). Used by the call's thread; {@link dev.retryagent.engine.RetryCall}
 * guards its own part.
 *
 * <p>The view reads the request at the head of the chain, its target and its policy's attempt
 * header when asked; the application's request ({@code scope.originalRequest}) answers whether the
 * caller cancelled.
 */
final class ClassicCall extends SelfViewCall
    implements SyncRetryLoop.Attempt<ClassicHttpResponse>,
        ResponseAccess<ClassicHttpResponse>,
        Sleeper,
        BooleanSupplier,
        java.io.Closeable {
  private final ClassicHttpRequest request;
  private final ExecChain.Scope scope;
  private final ExecChain chain;
  // An attempt began to write the request's entity (or read its content to send it), or the
  // application's entity was spent before ours began (forAttempt).
  private volatile boolean written;

  /** Not begun: hand it to {@code RetryEngine.begin} first. */
  ClassicCall(ClassicHttpRequest request, ExecChain.Scope scope, ExecChain chain) {
    this.request = request;
    this.scope = scope;
    this.chain = chain;
  }

  /**
   * Attempt {@code n}, under the policy's bound {@code timeoutNanos} when there is one (-1: none,
   * the attempt keeps the application's timeouts and nothing is made): the attempt's config in the
   * context is then the application's with each timeout shortened to the bound ({@link
   * AttemptTimeouts}), for every exchange of the attempt (HttpClient's own resend, a redirect's
   * hop), and the application's is put back after it, before the application sees the context again
   * (or what its interceptor set there, without the bound: {@link AttemptTimeouts#unshortened}).
   * HttpClient gives the connection its socket timeout anew at its next lease.
   */
  @Override
  public ClassicHttpResponse run(int n, long timeoutNanos) throws IOException {
    ClassicHttpRequest sent = n == 1 ? request : copy(scope);
    if (timeoutNanos < 0) {
      return RetryExecHandler.attempt(sent, n, scope, chain, this);
    }
    HttpClientContext context = scope.clientContext;
    // Never null in practice: HttpClient sets the request's or the client's before the chain.
    RequestConfig own = context.getRequestConfig();
    RequestConfig bounded =
        AttemptTimeouts.bounded(own != null ? own : RequestConfig.DEFAULT, scope, timeoutNanos);
    if (bounded == null) {
      return RetryExecHandler.attempt(sent, n, scope, chain, this);
    }
    context.setRequestConfig(bounded);
    try {
      return RetryExecHandler.attempt(sent, n, scope, chain, this);
    } finally {
      context.setRequestConfig(
          AttemptTimeouts.unshortened(context.getRequestConfig(), bounded, own));
    }
  }

  /**
   * A retry sends a fresh copy of the application's request, as HttpClient's own retry does: the
   * chain below adds headers to the request it is given.
   */
  private static ClassicHttpRequest copy(ExecChain.Scope scope) {
    return ClassicRequestBuilder.copy(scope.originalRequest).build();
  }

  /**
   * The request for attempt {@code n}, whose exchanges {@code log} notes: {@code base} itself,
   * changed. {@code base} is never the application's object: HttpClient hands the chain a copy of
   * it, and a retry sends a copy of its own.
   */
  ClassicHttpRequest forAttempt(ClassicHttpRequest base, int n, ExchangeLog log) {
    String attemptHeader = policy().retry().attemptHeader();
    if (attemptHeader != null) {
      base.setHeader(attemptHeader, Integer.toString(n));
    }
    HttpEntity entity = base.getEntity();
    if (entity instanceof Tracking) {
      entity = ((Tracking) entity).own;
    }
    HttpEntity original = scope.originalRequest.getEntity();
    if (n == 1 && entity != original && original != null && !original.isRepeatable()) {
      // An exec interceptor of the application's above us (addExecInterceptorFirst) put another
      // entity on the request it passed down, most likely a copy of what it read of the
      // application's (a body logger's EntityUtils.toByteArray): a retry sends a copy of the
      // application's request, whose entity is then spent though this attempt never writes it
      // (its length declared and nothing written, or an empty chunked body). Never replayed.
      written = true;
    }
    if (entity != null) {
      base.setEntity(new Tracking(entity, log));
    }
    return base;
  }

  /**
   * {@code exchange}, a request HttpClient sends in attempt {@code n} (its retry element's resend,
   * a redirect's hop: each a copy of the application's request, with the application's entity and
   * headers as they are; or the attempt's own request), with its entity watched for {@code log} as
   * the attempt's is ({@link #forAttempt}), left as it is when it already is; and with the attempt
   * header set to {@code n}. Without it such a copy went out without the header (the hop of a
   * 307/308 redirect, HttpClient's resend), where the JDK's and OkHttp's redirects and resends of
   * an attempt's request carry the attempt's number, as HttpClient 4.5's do. {@code exchange} is
   * HttpClient's own copy, never the application's object.
   */
  void watch(ClassicHttpRequest exchange, int n, ExchangeLog log) {
    String attemptHeader = policy().retry().attemptHeader();
    if (attemptHeader != null) {
      exchange.setHeader(attemptHeader, Integer.toString(n));
    }
    HttpEntity entity = exchange.getEntity();
    if (entity != null && !(entity instanceof Tracking)) {
      exchange.setEntity(new Tracking(entity, log));
    }
  }

  /**
   * Waits {@code nanos}, or until the application cancels its request ({@code cancel()} ends the
   * wait within 50 ms; the next attempt then fails at once, as HttpClient fails a cancelled
   * request). The sleeper that looks is made only for a wait.
   */
  @Override
  public void sleep(long nanos) throws InterruptedException {
    BooleanSupplier cancelled =
        scope.originalRequest instanceof CancellableDependency ? this : null;
    Waits.sleep(engine().sleeper(), engine().clock(), cancelled, nanos);
  }

  /** {@link #callerGaveUp}, for a wait that a cancel ends. */
  @Override
  public boolean getAsBoolean() {
    return callerGaveUp();
  }

  /**
   * The application cancelled its request ({@code cancel()}): checked before retries and during a
   * wait, instead of a cancel signal registered with the call, which made the call's extras on
   * every call.
   */
  @Override
  public boolean callerGaveUp() {
    return scope.originalRequest instanceof CancellableDependency
        && ((CancellableDependency) scope.originalRequest).isCancelled();
  }

  @Override
  public String method() {
    return request.getMethod(); // as sent, case and all (RequestInfo#method)
  }

  @Override
  public String scheme() {
    return ClassicRequest.schemeOf(scope.route.getTargetHost());
  }

  @Override
  public String host() {
    return scope.route.getTargetHost().getHostName();
  }

  @Override
  public int port() {
    return ClassicRequest.portOf(scope.route.getTargetHost());
  }

  @Override
  public String path() {
    return ClassicRequest.pathOf(request.getPath());
  }

  /** As {@link ClassicRequest#atPastPath(org.apache.hc.core5.http.HttpRequest)}. */
  @Override
  public boolean atPastPath() {
    return ClassicRequest.atPastPath(request);
  }

  @Override
  public String header(String name) {
    return ClassicRequest.header(request, name);
  }

  /**
   * A non-repeatable entity can be sent again only while no attempt began to write it, nor read it
   * otherwise. Judged on the entity a retry sends: the application's request's ({@link #copy}), not
   * the attempt's, on which an application's request interceptor may have put a repeatable copy of
   * what it read ({@code EntityUtils.toByteArray}) before a refused connect: the retry would send
   * the application's entity spent (its length declared, nothing written).
   */
  @Override
  public boolean bodyReplayable() {
    if (!written) {
      return true;
    }
    HttpEntity entity = scope.originalRequest.getEntity();
    return entity == null || entity.isRepeatable();
  }

  @Override
  public int status(ClassicHttpResponse response) {
    return response.getCode();
  }

  @Override
  public String header(ClassicHttpResponse response, String name) {
    return ClassicRequest.lines(response, name);
  }

  @Override
  public void discard(ClassicHttpResponse response) {
    // The response's close would read the rest of its body; the scope's endpoint, discarded,
    // closes the connection unread. The body as it came, not decoded (RawBody).
    RawBody.release(response.getEntity(), this, response);
  }

  @Override
  public ClassicHttpResponse copyToGiveBack(ClassicHttpResponse response) throws IOException {
    return GivenBackEntity.copyOf(response, this);
  }

  @Override
  public boolean copyRatherThanKeep(ClassicHttpResponse response) {
    // Kept, it holds the pool's lease (a limit per route); one of unknown length is tried
    // too: over the limit, it is released without a copy.
    HttpEntity entity = response.getEntity();
    return entity == null || entity.getContentLength() <= GIVE_BACK_LIMIT;
  }

  @Override
  public boolean copyLeavesWhole(ClassicHttpResponse response) {
    // The copy reads the body (to its end, or as far as it has arrived): one that makes none
    // has read it away, but for a body declared over the limit, which it does not read.
    HttpEntity entity = response.getEntity();
    return entity == null || entity.getContentLength() > GIVE_BACK_LIMIT;
  }

  /**
   * Closes the connection of a response whose body was not read to its end; also from another
   * thread than the one reading it (a retried body's grace: {@link
   * dev.retryagent.internal.Discards.Grace}), the endpoint taken from the exec runtime atomically.
   */
  @Override
  public void close() {
    scope.execRuntime.discardEndpoint();
  }

  /**
   * The application's entity, for one attempt. Once it was read, a non-repeatable one can never be
   * sent again; until then it still can (a connect failure comes before the body). A failure of its
   * own while it is written (not the connection's) is noted as the application's in the attempt's
   * log. Repeatability is the entity's own, so HttpClient's own retry decides as it would.
   */
  private final class Tracking extends HttpEntityWrapper {
    final HttpEntity own;
    private final ExchangeLog log;

    Tracking(HttpEntity entity, ExchangeLog log) {
      super(entity);
      this.own = entity;
      this.log = log;
    }

    @Override
    public InputStream getContent() throws IOException {
      written = true;
      return super.getContent();
    }

    @Override
    public void writeTo(OutputStream out) throws IOException {
      written = true;
      // The length HttpClient framed the body with (RequestContent): none when chunked. HttpCore 5
      // closes a chunked body's stream even when the entity failed: the server gets it whole.
      BodyWrites.writeTo(super::writeTo, out, isChunked() ? -1 : getContentLength(), true, log);
    }
  }
}
