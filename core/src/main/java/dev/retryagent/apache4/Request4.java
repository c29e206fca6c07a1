package dev.retryagent.apache4;

import dev.retryagent.engine.RequestInfo;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.http.Header;
import org.apache.http.HttpEntity;
import org.apache.http.HttpEntityEnclosingRequest;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.client.methods.HttpUriRequest;

/**
 * A {@link RequestInfo} view of an HttpClient 4.5 request and its target. The request object is the
 * application's own and is sent as it is by every attempt; only an attempt header (when the policy
 * names one) and a resend's trace context are set on it for the call, and the request's own values
 * of those headers are put back when the call ends.
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
  private Header[] ownAttemptHeaders;
  private Map<String, Header[]> ownSpanHeaders; // by the name set, before the call first set it

  Request4(HttpHost target, HttpRequest request) {
    this.request = request;
    this.method = request.getRequestLine().getMethod().toUpperCase(Locale.ROOT);
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
      return ((HttpUriRequest) request).getURI();
    }
    try {
      return URI.create(request.getRequestLine().getUri());
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  void prepare(String attemptHeader) {
    this.attemptHeader = attemptHeader;
    if (attemptHeader != null) {
      ownAttemptHeaders = request.getHeaders(attemptHeader);
    }
  }

  void beforeAttempt(int n) {
    if (attemptHeader != null) {
      request.setHeader(attemptHeader, Integer.toString(n));
    }
  }

  /**
   * Sets a header of an attempt's trace context ({@code traceparent}, ...) on the request. The
   * request is the application's: a later call that sends it again (not retried, or with tracing
   * that sets nothing) must not carry a span of this call, so {@link #restore} puts its own back.
   */
  void setSpanHeader(String name, String value) {
    if (ownSpanHeaders == null) {
      ownSpanHeaders = new LinkedHashMap<>();
    }
    if (!ownSpanHeaders.containsKey(name)) {
      ownSpanHeaders.put(name, request.getHeaders(name));
    }
    request.setHeader(name, value);
  }

  /** Puts the request's own attempt headers and trace context headers back. */
  void restore() {
    if (attemptHeader != null) {
      request.removeHeaders(attemptHeader);
      for (Header h : ownAttemptHeaders) {
        request.addHeader(h);
      }
    }
    if (ownSpanHeaders != null) {
      for (Map.Entry<String, Header[]> own : ownSpanHeaders.entrySet()) {
        request.removeHeaders(own.getKey());
        for (Header h : own.getValue()) {
          request.addHeader(h);
        }
      }
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
