package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.urlconnection.RetryingUrlConnections;
import java.net.Proxy;
import java.net.URLConnection;
import java.util.function.BiFunction;

/**
 * What the bridge calls for every connection the JDK's http and https handlers open: the
 * application gets a retrying facade over the JDK's connection, unless the agent opened it for one
 * of its own attempts, the client is switched off ({@code agent.clients.url-connection}, also by a
 * reload) or the agent is off; then the JDK's connection itself, so casts and reflection keep
 * working.
 */
final class UrlOpener implements BiFunction<URLConnection, Proxy, URLConnection> {
  private final AgentRuntime runtime;
  private final AgentUrlTransport transport;

  UrlOpener(AgentRuntime runtime, AgentUrlTransport transport) {
    this.runtime = runtime;
    this.transport = transport;
  }

  @Override
  public URLConnection apply(URLConnection connection, Proxy proxy) {
    if (transport.opening() || !runtime.urlConnectionEnabled()) {
      return connection;
    }
    return RetryingUrlConnections.wrap(connection, proxy, runtime.engine(), transport);
  }
}
