package dev.retryagent.apache5;

import dev.retryagent.engine.RequestInfo;
import dev.retryagent.internal.observe.Sanitizer;
import java.util.Locale;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpHost;
import org.apache.hc.core5.http.HttpRequest;

/**
 * A {@link RequestInfo} view of a request HttpClient made itself within an attempt (a redirect's
 * hop: the classic client's, {@link RetryExecHandler.Attempt#followUpRequest}, or the async
 * client's, {@link AsyncResendCounter.Counted#followUp}), read when asked. {@link ClassicCall} is
 * the view of a call's own request; the static readers here are the one home of how either reads a
 * target and a path.
 */
final class ClassicRequest implements RequestInfo {
  private final HttpRequest request;
  private final HttpHost target;

  ClassicRequest(HttpRequest request, HttpHost target) {
    this.request = request;
    this.target = target;
  }

  /** {@code target}'s scheme, lower case: "http" when it has none. */
  static String schemeOf(HttpHost target) {
    String s = target.getSchemeName();
    return s == null ? "http" : s.toLowerCase(Locale.ROOT);
  }

  /**
   * Every line of {@code message}'s header {@code name} ({@link
   * dev.retryagent.engine.ResponseAccess#header}): two scans, no array, for a header sent once.
   */
  static String lines(org.apache.hc.core5.http.MessageHeaders message, String name) {
    Header first = message.getFirstHeader(name);
    if (first == null || first == message.getLastHeader(name)) {
      return first == null ? null : first.getValue();
    }
    String lines = null;
    for (Header h : message.getHeaders(name)) {
      lines = dev.retryagent.internal.FieldLines.add(lines, h.getValue());
    }
    return lines;
  }

  /** {@code target}'s port, or its scheme's. */
  static int portOf(HttpHost target) {
    int p = target.getPort();
    return p >= 0 ? p : ("https".equals(schemeOf(target)) ? 443 : 80);
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
  public String method() {
    return request.getMethod(); // as sent, case and all (RequestInfo#method)
  }

  @Override
  public String scheme() {
    return schemeOf(target);
  }

  @Override
  public String host() {
    return target.getHostName();
  }

  @Override
  public int port() {
    return portOf(target);
  }

  @Override
  public String path() {
    return pathOf(request.getPath());
  }

  /**
   * Whether {@code request}'s path, query included, holds an '@'; HttpClient 5 keeps no fragment (a
   * request made from a URI drops it), so an '@' there is not seen.
   */
  static boolean atPastPath(HttpRequest request) {
    return Sanitizer.atPastPath(request.getPath());
  }

  /** {@code request}'s first header {@code name}'s value, or null. */
  static String header(HttpRequest request, String name) {
    Header h = request.getFirstHeader(name);
    return h == null ? null : h.getValue();
  }

  @Override
  public boolean atPastPath() {
    return atPastPath(request);
  }

  @Override
  public String header(String name) {
    return header(request, name);
  }

  /**
   * Nothing of the call wrote it: only an attempt's own request is watched ({@link ClassicCall}).
   */
  @Override
  public boolean bodyReplayable() {
    return true;
  }
}
