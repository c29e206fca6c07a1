package dev.retryagent.it.harness;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A request as {@link CountingServer} read it.
 *
 * @param method the request method
 * @param target the request target (path and query)
 * @param headers header names in lower case, values in arrival order
 * @param body the request body (empty when there was none)
 * @param connection the server's number for the connection it came on, 1-based
 */
public record RecordedRequest(
    String method, String target, Map<String, List<String>> headers, byte[] body, int connection) {

  /** The first value of a header (any case), or null. */
  public String header(String name) {
    List<String> values = headers.get(name.toLowerCase(Locale.ROOT));
    return values == null || values.isEmpty() ? null : values.get(0);
  }

  /** The body as UTF-8 text. */
  public String bodyText() {
    return new String(body, StandardCharsets.UTF_8);
  }

  @Override
  public String toString() {
    return method
        + " "
        + target
        + " ("
        + body.length
        + " body bytes, connection "
        + connection
        + ")";
  }
}
