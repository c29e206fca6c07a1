package dev.retryagent.cli;

import dev.retryagent.config.PathMask;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.internal.observe.Sanitizer;
import java.net.URI;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The request {@code explain} asks about, as the engine sees a real one: method, target, raw path
 * without the query, headers by name (any case). Its body is taken to be one that can be sent again
 * (bytes, a string, a file), as most are.
 */
final class ExplainedRequest implements RequestInfo {
  private final String method;
  // As the argument gave it: method is upper-cased, a client sends what it is given.
  private final String sent;
  private final String scheme;
  private final String host;
  private final int port;
  private final boolean portGiven;
  private final String path;
  private final boolean atPastPath;
  private final Map<String, String> headers;

  private ExplainedRequest(
      String method,
      String sent,
      String scheme,
      String host,
      int port,
      boolean portGiven,
      String path,
      boolean atPastPath,
      Map<String, String> headers) {
    this.method = method;
    this.sent = sent;
    this.scheme = scheme;
    this.host = host;
    this.port = port;
    this.portGiven = portGiven;
    this.path = path;
    this.atPastPath = atPastPath;
    this.headers = headers;
  }

  /**
   * @param headers {@code NAME:VALUE} each
   * @throws IllegalArgumentException with a message that never repeats a header value or a query
   */
  static ExplainedRequest parse(String method, String url, String[] headers) {
    // What match.methods and retry.methods accept (ValueType.METHOD), so every method a route can
    // name can be explained (VERSION-CONTROL, M-SEARCH).
    if (!method.matches("[A-Za-z][A-Za-z0-9_-]{0,31}")) {
      throw new IllegalArgumentException("METHOD must be an HTTP method such as GET or POST");
    }
    URI uri;
    try {
      uri = new URI(url);
    } catch (java.net.URISyntaxException e) {
      throw new IllegalArgumentException("URL is not a valid URI (" + e.getReason() + ")");
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("http") && !scheme.equals("https")) {
      throw new IllegalArgumentException("URL must be absolute, http:// or https://");
    }
    if (uri.getHost() == null) {
      // URI takes an authority whose port does not fit an int for a registry name, without host.
      String port = portText(uri.getRawAuthority());
      throw new IllegalArgumentException(port != null ? badPort(port) : "URL has no host");
    }
    if (uri.getPort() == 0 || uri.getPort() > 65535) {
      // URI accepts any int; no client sends to such a port, so there is nothing to explain.
      throw new IllegalArgumentException(badPort(Integer.toString(uri.getPort())));
    }
    int port = uri.getPort() >= 0 ? uri.getPort() : (scheme.equals("https") ? 443 : 80);
    String raw = uri.getRawPath();
    Map<String, String> byName = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    for (int i = 0; i < headers.length; i++) {
      int colon = headers[i].indexOf(':');
      if (colon <= 0) {
        throw new IllegalArgumentException(
            "header argument " + (i + 1) + " must be NAME:VALUE (its text is not shown)");
      }
      byName.putIfAbsent(headers[i].substring(0, colon).trim(), headers[i].substring(colon + 1));
    }
    return new ExplainedRequest(
        method.toUpperCase(Locale.ROOT),
        method,
        scheme,
        uri.getHost(),
        port,
        uri.getPort() >= 0,
        raw == null || raw.isEmpty() ? "/" : raw,
        Sanitizer.atPastPath(uri.getRawQuery(), uri.getRawFragment()),
        byName);
  }

  private static String badPort(String port) {
    return "URL port " + port + " is not 1..65535";
  }

  /**
   * The digits after the host in {@code authority} when they are no port (user-info never looked
   * at), or null.
   */
  private static String portText(String authority) {
    if (authority == null) {
      return null;
    }
    String hostPort = authority.substring(authority.lastIndexOf('@') + 1);
    int colon = hostPort.lastIndexOf(':');
    if (colon < 0 || colon < hostPort.lastIndexOf(']')) {
      return null;
    }
    String port = hostPort.substring(colon + 1);
    if (!port.matches("[0-9]+")) {
      return null;
    }
    // A port in range: URI refused the host (my_host:8080), not the port.
    String digits = port.replaceFirst("^0+(?=.)", "");
    return digits.length() > 5 || Integer.parseInt(digits) == 0 || Integer.parseInt(digits) > 65535
        ? port
        : null;
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
  public boolean atPastPath() {
    return atPastPath;
  }

  @Override
  public String header(String name) {
    return headers.get(name);
  }

  @Override
  public boolean bodyReplayable() {
    return true;
  }

  /**
   * This request with its method as the argument wrote it ({@code get}), not upper-cased: what a
   * client given that text sends. Method names are case-sensitive, so that is another method.
   */
  ExplainedRequest asSent() {
    return new ExplainedRequest(
        sent, sent, scheme, host, port, portGiven, path, atPastPath, headers);
  }

  /** Header names as given, sorted; never their values. */
  Iterable<String> headerNames() {
    return headers.keySet();
  }

  /**
   * {@code POST https://pay.example.com/v1/charges}: no user-info, no query, no fragment; the path
   * as log lines write it (Sanitizer.path: no path parameters, a servlet container's {@code
   * ;jsessionid=...} being a session's credential; segments masked as {@code
   * agent.redact.pathSegments} says).
   */
  String describe(PathMask mask) {
    return method
        + " "
        + scheme
        + "://"
        + host
        + (portGiven ? ":" + port : "")
        + Sanitizer.path(path, mask, atPastPath);
  }
}
