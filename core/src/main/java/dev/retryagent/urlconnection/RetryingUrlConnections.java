package dev.retryagent.urlconnection;

import dev.retryagent.engine.RetryEngine;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.URL;
import java.net.URLConnection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.net.ssl.HttpsURLConnection;

/**
 * {@link HttpURLConnection} with retries through a {@link RetryEngine}: the library way to get what
 * the agent gives, for code you can change.
 *
 * <pre>{@code
 * HttpURLConnection c = (HttpURLConnection) RetryingUrlConnections.open(url, engine);
 * c.setRequestMethod("POST");
 * c.setRequestProperty("Idempotency-Key", key);
 * c.setDoOutput(true);
 * try (OutputStream out = c.getOutputStream()) { out.write(body); }
 * int status = c.getResponseCode();       // after any retries: the final attempt's
 * }</pre>
 *
 * The connection behaves as the JDK's: every setting, the body written through {@code
 * getOutputStream()}, and every response method. Further attempts are made on fresh connections
 * configured the same way; a body is sent again only when the whole of it is held (at most {@code
 * retry.replayBodyLimit}, in every streaming mode). Its class is not the JDK's: code that casts it
 * to {@code sun.net.www.protocol.http.HttpURLConnection} fails. See docs/url-connection.md.
 *
 * <p>Used by hand, the JDK's own silent resend of a request on a broken kept-alive connection stays
 * as it is and is not counted as an attempt; the agent switches it off where it would repeat a
 * request that is not safe to repeat, and counts it elsewhere.
 */
public final class RetryingUrlConnections {
  private RetryingUrlConnections() {}

  /**
   * {@code url.openConnection()}, retried through {@code engine} when it is an {@code http:} or
   * {@code https:} connection; any other connection is returned as it is.
   */
  public static URLConnection open(URL url, RetryEngine engine) throws IOException {
    // The first attempt's connection is opened as the others are: beside the agent, past its hook.
    return wrap(UrlTransport.DIRECT.open(url, null), null, engine, UrlTransport.DIRECT);
  }

  /**
   * {@code url.openConnection(proxy)}, retried through {@code engine}; every attempt goes through
   * {@code proxy}.
   */
  public static URLConnection open(URL url, Proxy proxy, RetryEngine engine) throws IOException {
    Objects.requireNonNull(proxy, "proxy");
    return wrap(UrlTransport.DIRECT.open(url, proxy), proxy, engine, UrlTransport.DIRECT);
  }

  /**
   * Retries {@code connection}, which must be a connection just opened, nothing set on it yet: what
   * the JDK cannot report back (request properties, {@code Authorization} among them, the
   * authenticator, the streaming mode) is recorded only when set on the connection returned, so a
   * further attempt would go out without what was set before. An {@link HttpsURLConnection} gets an
   * {@code HttpsURLConnection}, any other {@link HttpURLConnection} an {@code HttpURLConnection};
   * anything else, or a connection this class made, is returned as it is.
   *
   * @param proxy the proxy {@code connection} was opened with, or null for none given
   * @param transport how further attempts are opened ({@link UrlTransport#DIRECT} by hand)
   * @throws IllegalArgumentException when {@code connection} is connected or has request properties
   *     (the JDK hides {@code Authorization} from its getter: that one cannot be seen)
   */
  public static URLConnection wrap(
      URLConnection connection, Proxy proxy, RetryEngine engine, UrlTransport transport) {
    Objects.requireNonNull(engine, "engine");
    Objects.requireNonNull(transport, "transport");
    if (!(connection instanceof HttpURLConnection) || isRetrying(connection)) {
      return connection;
    }
    requireJustOpened(connection);
    UrlExchange exchange =
        new UrlExchange((HttpURLConnection) connection, proxy, engine, transport);
    return connection instanceof HttpsURLConnection
        ? new RetryingHttpsConnection(exchange)
        : new RetryingHttpConnection(exchange);
  }

  /**
   * Fails fast where a connection used before the wrap shows it: a retry would silently go out
   * without the request properties set on it (the names only are said: values may be secrets).
   */
  private static void requireJustOpened(URLConnection connection) {
    Map<String, List<String>> set;
    try {
      set = connection.getRequestProperties();
    } catch (IllegalStateException connected) {
      throw new IllegalArgumentException(
          "retry-agent: wrap a connection just opened, not one already connected", connected);
    }
    if (!set.isEmpty()) {
      throw new IllegalArgumentException(
          "retry-agent: wrap a connection just opened, nothing set on it yet: request properties "
              + set.keySet()
              + " were set before the wrap, and a retry would go out without them");
    }
  }

  /** True for a connection this class made. */
  public static boolean isRetrying(URLConnection connection) {
    return connection instanceof RetryingHttpConnection
        || connection instanceof RetryingHttpsConnection;
  }
}
