package dev.retryagent.apache4;

import dev.retryagent.engine.RequestInfo;
import dev.retryagent.internal.observe.Sanitizer;
import java.net.URI;
import java.util.Locale;
import org.apache.http.Header;
import org.apache.http.HttpEntity;
import org.apache.http.HttpEntityEnclosingRequest;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.client.methods.HttpUriRequest;

/**
 * A {@link RequestInfo} view of an HttpClient 4.5 request and its target. The request object is the
 * application's own and is sent as it is by every attempt; only an attempt header (when the policy
 * names one) and a resend's trace context are set on it for the call, and the request's own headers
 * are put back, as they were and in their order, when the call ends.
 */
final class Request4 implements RequestInfo {
  private final HttpRequest request;
  private final String method;
  private final String scheme;
  private final String host;
  private final int port;
  private final String path;
  private final boolean oneShot;
  private volatile boolean sent;
  private String attemptHeader;
  // The request's own headers, all of them in their order, before the call first changed one.
  private Header[] ownHeaders;

  Request4(HttpHost target, HttpRequest request) {
    this.request = request;
    // An HttpUriRequest gives its method directly; getRequestLine() builds a new line per call.
    String m =
        request instanceof HttpUriRequest
            ? ((HttpUriRequest) request).getMethod()
            : request.getRequestLine().getMethod();
    this.method = m.toUpperCase(Locale.ROOT);
    URI uri = uriOf(request);
    String s = target != null ? target.getSchemeName() : uri == null ? null : uri.getScheme();
    this.scheme = s == null ? "http" : s.toLowerCase(Locale.ROOT);
    String h = target != null ? target.getHostName() : uri == null ? null : uri.getHost();
    this.host = h == null ? "" : h;
    int p = target != null ? target.getPort() : uri == null ? -1 : uri.getPort();
    this.port = p >= 0 ? p : ("https".equals(scheme) ? 443 : 80);
    String raw = uri == null ? null : uri.getRawPath();
    this.path = raw == null || raw.isEmpty() ? "/" : raw;
    HttpEntity entity =
        request instanceof HttpEntityEnclosingRequest
            ? ((HttpEntityEnclosingRequest) request).getEntity()
            : null;
    this.oneShot = entity != null && !entity.isRepeatable();
  }

  private static URI uriOf(HttpRequest request) {
    if (request instanceof HttpUriRequest) {
      URI uri = ((HttpUriRequest) request).getURI();
      if (uri != null) {
        return uri;
      }
      // HttpRequestWrapper of a request that is not an HttpUriRequest: its URI is in its line.
    }
    try {
      return URI.create(request.getRequestLine().getUri());
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** The application's request, which every attempt sends. */
  HttpRequest request() {
    return request;
  }

  void prepare(String attemptHeader) {
    this.attemptHeader = attemptHeader;
  }

  void beforeAttempt(int n) {
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

  /** An attempt started to write the request on a connection. */
  void markSent() {
    sent = true;
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
    return path;
  }

  /** Read from the request when asked: only a path written asks. */
  @Override
  public boolean atPastPath() {
    URI uri = uriOf(request);
    return uri != null && Sanitizer.atPastPath(uri.getRawQuery(), uri.getRawFragment());
  }

  @Override
  public String header(String name) {
    Header h = request.getFirstHeader(name);
    return h == null ? null : h.getValue();
  }

  /** A non-repeatable entity can be sent again only while no attempt started to write it. */
  @Override
  public boolean bodyReplayable() {
    return !oneShot || !sent;
  }
}
