package dev.retryagent.demo.server;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** One HTTP/1.1 request as the demo servers see it: method, path, headers and the whole body. */
public final class ServerRequest {
  private final String method;
  private final String path;
  private final Map<String, String> headers;
  private final byte[] body;

  /**
   * @param target the request target; any query string is dropped
   * @param headers header names are matched case-insensitively; a repeated header keeps its last
   *     value
   */
  public ServerRequest(String method, String target, Map<String, String> headers, byte[] body) {
    this.method = method;
    int q = target.indexOf('?');
    this.path = q < 0 ? target : target.substring(0, q);
    TreeMap<String, String> h = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    h.putAll(headers);
    this.headers = Collections.unmodifiableMap(h);
    this.body = body.clone();
  }

  public String method() {
    return method;
  }

  /** The path without the query string. */
  public String path() {
    return path;
  }

  /** The header's value, or null when absent. */
  public String header(String name) {
    return headers.get(name);
  }

  public String bodyText() {
    return new String(body, StandardCharsets.UTF_8);
  }

  /** True when the client asked to close the connection after this exchange. */
  boolean wantsClose() {
    String c = header("Connection");
    return c != null && c.toLowerCase(Locale.ROOT).contains("close");
  }
}
