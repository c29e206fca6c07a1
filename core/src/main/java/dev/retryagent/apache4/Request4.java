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
 * A {@link RequestInfo} view of an HttpClient 4.5 request and its target, read from them when asked
 * (nothing is copied). {@link Call4} is the view of a call's own request; this one is for a request
 * HttpClient made itself within an attempt (a redirect's hop, {@link GovernedRetryHandler}). Its
 * static methods are the one home of how either view reads a request.
 */
final class Request4 implements RequestInfo {
  private final HttpHost target;
  private final HttpRequest request;

  Request4(HttpHost target, HttpRequest request) {
    this.target = target;
    this.request = request;
  }

  /**
   * The request's method as it is sent, case and all ({@link RequestInfo#method}). An
   * HttpUriRequest gives it directly; {@code getRequestLine()} builds a new line on every call.
   */
  static String methodOf(HttpRequest request) {
    return request instanceof HttpUriRequest
        ? ((HttpUriRequest) request).getMethod()
        : request.getRequestLine().getMethod();
  }

  static String schemeOf(HttpHost target, HttpRequest request) {
    String s;
    if (target != null) {
      s = target.getSchemeName();
    } else {
      URI uri = uriOf(request);
      s = uri == null ? null : uri.getScheme();
    }
    return s == null ? "http" : s.toLowerCase(Locale.ROOT);
  }

  static String hostOf(HttpHost target, HttpRequest request) {
    String h;
    if (target != null) {
      h = target.getHostName();
    } else {
      URI uri = uriOf(request);
      h = uri == null ? null : uri.getHost();
    }
    return h == null ? "" : h;
  }

  static int portOf(HttpHost target, HttpRequest request) {
    int p;
    if (target != null) {
      p = target.getPort();
    } else {
      URI uri = uriOf(request);
      p = uri == null ? -1 : uri.getPort();
    }
    return p >= 0 ? p : ("https".equals(schemeOf(target, request)) ? 443 : 80);
  }

  static String pathOf(HttpRequest request) {
    URI uri = uriOf(request);
    String raw = uri == null ? null : uri.getRawPath();
    return raw == null || raw.isEmpty() ? "/" : raw;
  }

  static boolean atPastPath(HttpRequest request) {
    URI uri = uriOf(request);
    return uri != null && Sanitizer.atPastPath(uri.getRawQuery(), uri.getRawFragment());
  }

  static String header(HttpRequest request, String name) {
    Header h = request.getFirstHeader(name);
    return h == null ? null : h.getValue();
  }

  /** The request's entity cannot be written twice ({@code isRepeatable() == false}). */
  static boolean oneShot(HttpRequest request) {
    HttpEntity entity =
        request instanceof HttpEntityEnclosingRequest
            ? ((HttpEntityEnclosingRequest) request).getEntity()
            : null;
    return entity != null && !entity.isRepeatable();
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

  @Override
  public String method() {
    return methodOf(request);
  }

  @Override
  public String scheme() {
    return schemeOf(target, request);
  }

  @Override
  public String host() {
    return hostOf(target, request);
  }

  @Override
  public int port() {
    return portOf(target, request);
  }

  @Override
  public String path() {
    return pathOf(request);
  }

  @Override
  public boolean atPastPath() {
    return atPastPath(request);
  }

  @Override
  public String header(String name) {
    return header(request, name);
  }

  /** Not sent yet by the call: only a request whose entity cannot be written again is not. */
  @Override
  public boolean bodyReplayable() {
    return true;
  }
}
