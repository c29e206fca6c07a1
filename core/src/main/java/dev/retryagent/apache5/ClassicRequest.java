package dev.retryagent.apache5;

import dev.retryagent.engine.RequestInfo;
import dev.retryagent.internal.apache.BodyWrites;
import dev.retryagent.internal.apache.ExchangeLog;
import dev.retryagent.internal.observe.Sanitizer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Locale;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.http.HttpHost;
import org.apache.hc.core5.http.io.entity.HttpEntityWrapper;

/**
 * A {@link RequestInfo} view of a classic request at the head of the execution chain, and the maker
 * of each attempt's request: the attempt header, and the entity wrapped, so we know whether a
 * non-repeatable one was written and whether a failure while it was written was the application's
 * own ({@link BodyWrites}).
 */
final class ClassicRequest implements RequestInfo {
  private final ClassicHttpRequest request;
  private final String method;
  private final String scheme;
  private final String host;
  private final int port;
  private final boolean oneShot;
  private volatile boolean written;
  private String attemptHeader;

  ClassicRequest(ClassicHttpRequest request, HttpHost target) {
    this.request = request;
    this.method = request.getMethod().toUpperCase(Locale.ROOT);
    String s = target.getSchemeName();
    this.scheme = s == null ? "http" : s.toLowerCase(Locale.ROOT);
    this.host = target.getHostName();
    this.port = target.getPort() >= 0 ? target.getPort() : ("https".equals(scheme) ? 443 : 80);
    HttpEntity entity = request.getEntity();
    this.oneShot = entity != null && !entity.isRepeatable();
  }

  void prepare(String attemptHeader) {
    this.attemptHeader = attemptHeader;
  }

  /**
   * The request for attempt {@code n}, whose exchanges {@code log} notes: {@code base} itself,
   * changed. {@code base} is never the application's object: HttpClient hands the chain a copy of
   * it, and a retry sends a copy of its own.
   */
  ClassicHttpRequest forAttempt(ClassicHttpRequest base, int n, ExchangeLog log) {
    if (attemptHeader != null) {
      base.setHeader(attemptHeader, Integer.toString(n));
    }
    HttpEntity entity = base.getEntity();
    if (entity instanceof Tracking) {
      entity = ((Tracking) entity).own;
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
    if (attemptHeader != null) {
      exchange.setHeader(attemptHeader, Integer.toString(n));
    }
    HttpEntity entity = exchange.getEntity();
    if (entity != null && !(entity instanceof Tracking)) {
      exchange.setEntity(new Tracking(entity, log));
    }
  }

  @Override
  public String method() {
    return method;
  }

  @Override
  public String scheme() {
    return scheme;
  }

  @Override
  public String host() {
    return host;
  }

  @Override
  public int port() {
    return port;
  }

  @Override
  public String path() {
    return pathOf(request.getPath());
  }

  /**
   * From the request's path, query included; HttpClient 5 keeps no fragment (a request made from a
   * URI drops it), so an '@' there is not seen.
   */
  @Override
  public boolean atPastPath() {
    return Sanitizer.atPastPath(request.getPath());
  }

  /** {@code p}, a request's path as HttpClient holds it, without its query or fragment. */
  static String pathOf(String p) {
    if (p == null || p.isEmpty()) {
      return "/";
    }
    int end = p.length();
    for (int i = 0; i < p.length(); i++) {
      if (p.charAt(i) == '?' || p.charAt(i) == '#') {
        end = i;
        break;
      }
    }
    return end == 0 ? "/" : p.substring(0, end);
  }

  @Override
  public String header(String name) {
    Header h = request.getFirstHeader(name);
    return h == null ? null : h.getValue();
  }

  @Override
  public boolean bodyReplayable() {
    return !oneShot || !written;
  }

  /**
   * The application's entity, for one attempt. A non-repeatable one remembers it was read: until
   * then it can still be sent (a connect failure comes before the body), after that never again. A
   * failure of its own while it is written (not the connection's) is noted as the application's in
   * the attempt's log. Repeatability is the entity's own, so HttpClient's own retry decides as it
   * would.
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
      if (oneShot) {
        written = true;
      }
      return super.getContent();
    }

    @Override
    public void writeTo(OutputStream out) throws IOException {
      if (oneShot) {
        written = true;
      }
      // The length HttpClient framed the body with (RequestContent): none when chunked. HttpCore 5
      // closes a chunked body's stream even when the entity failed: the server gets it whole.
      BodyWrites.writeTo(super::writeTo, out, isChunked() ? -1 : getContentLength(), true, log);
    }
  }
}
