package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.urlconnection.RetryingUrlConnections;
import java.net.Proxy;
import java.net.URLConnection;

/**
 * What the JDK's http and https handlers' connections become ({@link UrlEntry}): the application
 * gets a retrying facade over the JDK's connection, unless the client is switched off ({@code
 * agent.clients.url-connection}, also by a reload) or the agent is off; then the JDK's connection
 * itself, so casts and reflection keep working. The agent's own attempts never get here (a
 * pass-through token).
 */
final class UrlOpener {
  private final AgentRuntime runtime;
  private final AgentUrlTransport transport;

  UrlOpener(AgentRuntime runtime, AgentUrlTransport transport) {
    this.runtime = runtime;
    this.transport = transport;
  }

  /** The facade over {@code connection}, or {@code null}: the application gets the JDK's. */
  URLConnection open(URLConnection connection, Proxy proxy) {
    if (!runtime.urlConnectionEnabled()) {
      return null;
    }
    URLConnection facade =
        RetryingUrlConnections.wrap(connection, proxy, runtime.engine(), transport);
    return facade == connection ? null : facade;
  }
}
