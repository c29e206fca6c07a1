package dev.retryagent.urlconnection;

import java.io.IOException;
import java.net.Proxy;
import java.net.URL;
import java.net.URLConnection;

/**
 * The library's own attempts ({@link UrlTransport#DIRECT}): each connection opened with the public
 * API, the JDK's own resends as they are.
 *
 * <p>A class of its own, not an anonymous one: the retry agent, when it runs in the same JVM,
 * recognises the application's copy of it by name and opens the JDK's connection in {@link #open}
 * past its own hook, so that a connection of {@link RetryingUrlConnections} is retried by the
 * library alone, not by both (each of the library's attempts would otherwise be a retrying
 * connection of the agent's). Keep its name and {@code open}'s signature.
 */
final class DirectUrlTransport implements UrlTransport {
  @Override
  public URLConnection open(URL url, Proxy proxy) throws IOException {
    return proxy == null ? url.openConnection() : url.openConnection(proxy);
  }
}
