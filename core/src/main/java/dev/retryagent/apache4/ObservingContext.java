package dev.retryagent.apache4;

import dev.retryagent.engine.RetryCall;
import dev.retryagent.internal.apache.BodyWrites;
import dev.retryagent.internal.apache.ExchangeLog;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import org.apache.http.HttpEntity;
import org.apache.http.HttpEntityEnclosingRequest;
import org.apache.http.HttpRequest;
import org.apache.http.HttpResponse;
import org.apache.http.entity.HttpEntityWrapper;
import org.apache.http.protocol.HttpContext;

/**
 * The {@code HttpContext} of one attempt: every attribute is read from and written to the
 * application's context (or the attempt's own), so the application sees what it would see without
 * us; on the way it notes the exchanges HttpClient makes, from the attributes its execution chain
 * writes (HttpCore's {@code HttpRequestExecutor} and HttpClient's {@code ProtocolExec}):
 *
 * <ul>
 *   <li>{@code http.request_sent = false}: a request is about to be written on a connection, an
 *       exchange starts (unless the current {@code http.request} is a proxy's {@code CONNECT} not
 *       yet answered with a 2xx);
 *   <li>{@code http.response}: the exchange (after any authentication round) was answered;
 *   <li>a read of {@code http.authscheme-registry} after an exchange: an authentication challenge
 *       is being answered, so the next exchange is a follow-up, not a resend.
 * </ul>
 *
 * It also gives HttpClient's retry handler, when governed ({@link GovernedRetryHandler}), the call
 * that decides whether it may resend; that attribute is answered, never stored.
 *
 * <p>Not final: an attempt with a bound on its time is a {@link BoundedContext}, so that an attempt
 * without one costs nothing more.
 */
class ObservingContext extends ExchangeLog implements HttpContext {
  static final String REQUEST_SENT = "http.request_sent";
  static final String REQUEST = "http.request";
  static final String RESPONSE = "http.response";
  static final String AUTH_SCHEMES = "http.authscheme-registry";

  private final HttpContext delegate;
  private final RetryCall call;
  private boolean tunnelling;
  // The application's entity was read in this attempt (written, or buffered by an interceptor of
  // the application's before the connection). Told to the call only when the attempt ends
  // (Call4.run): during the attempt HttpClient's own resend sends the copy that interceptor left on
  // its wrapper, which RetryExec judges repeatable, and the call must judge it as HttpClient does.
  private boolean bodyRead;

  ObservingContext(HttpContext delegate, RetryCall call) {
    this.delegate = delegate;
    this.call = call;
  }

  /**
   * The attempt's exchanges: this context itself, one object per attempt instead of two (issue 13:
   * 24 B per attempt).
   */
  ExchangeLog log() {
    return this;
  }

  @Override
  public Object getAttribute(String id) {
    if (AUTH_SCHEMES.equals(id)) {
      followUp();
    } else if (GovernedRetryHandler.CALL_ATTRIBUTE.equals(id)) {
      return call;
    }
    return delegate.getAttribute(id);
  }

  @Override
  public void setAttribute(String id, Object obj) {
    delegate.setAttribute(id, obj);
    if (REQUEST_SENT.equals(id)) {
      if (Boolean.FALSE.equals(obj) && !tunnelling) {
        exchangeStarted();
      }
    } else if (REQUEST.equals(id)) {
      guardEntity(obj);
      tunnelling =
          obj instanceof HttpRequest
              && "CONNECT".equalsIgnoreCase(((HttpRequest) obj).getRequestLine().getMethod());
    } else if (RESPONSE.equals(id) && obj instanceof HttpResponse) {
      int status = ((HttpResponse) obj).getStatusLine().getStatusCode();
      if (!tunnelling) {
        answered(status);
      } else if (status >= 200 && status < 300) {
        // The proxy set the tunnel up (its answer is not the call's): the next request written is
        // the application's, which HttpClient before 4.5.10 does not name in http.request again.
        tunnelling = false;
      }
    }
  }

  /**
   * Gives the request HttpClient is about to send for the application's (its {@code
   * HttpRequestWrapper}, never the application's own object) the application's entity wrapped, so
   * that a failure of the entity's own while it is written is noted as the application's ({@link
   * BodyWrites}). A request with another entity (a redirect's, a proxy's {@code CONNECT}) is left
   * as it is.
   */
  private void guardEntity(Object obj) {
    if (!(call instanceof Call4)) {
      return;
    }
    HttpRequest own = ((Call4) call).httpRequest();
    if (!(own instanceof HttpEntityEnclosingRequest)
        || obj == own
        || !(obj instanceof HttpEntityEnclosingRequest)) {
      return;
    }
    HttpEntityEnclosingRequest sent = (HttpEntityEnclosingRequest) obj;
    HttpEntity entity = ((HttpEntityEnclosingRequest) own).getEntity();
    if (entity != null && sent.getEntity() == entity) {
      sent.setEntity(new Guarding(entity, this));
    }
  }

  /** Whether the application's entity was read ({@code writeTo} or {@code getContent}) so far. */
  boolean bodyRead() {
    return bodyRead;
  }

  /**
   * The application's entity, its own failures while it is written noted in the attempt's log, and
   * any read of it noted ({@link #bodyRead}): HttpClient's write, or an application interceptor's
   * that buffers it before the connection is made (its {@code BufferedHttpEntity} writes it; {@code
   * EntityUtils} reads its content).
   */
  private static final class Guarding extends HttpEntityWrapper {
    private final ObservingContext log;

    Guarding(HttpEntity entity, ObservingContext log) {
      super(entity);
      this.log = log;
    }

    @Override
    public InputStream getContent() throws IOException {
      log.bodyRead = true;
      return super.getContent();
    }

    @Override
    public void writeTo(OutputStream out) throws IOException {
      log.bodyRead = true;
      // The length HttpClient framed the body with (RequestContent): none when chunked. HttpCore
      // 4.4 leaves a chunked body cut when the entity fails (it closes the stream only after).
      BodyWrites.writeTo(super::writeTo, out, isChunked() ? -1 : getContentLength(), false, log);
    }
  }

  @Override
  public Object removeAttribute(String id) {
    return delegate.removeAttribute(id);
  }

  @Override
  public String toString() {
    return delegate.toString();
  }
}
