package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgeHandler;
import dev.retryagent.agent.tooling.PassThrough;
import java.net.Proxy;
import java.net.URL;
import java.net.URLConnection;

/**
 * Where the {@code HttpURLConnection} hooks enter the agent: {@link Bridge#URL_OPENED} (a protocol
 * handler made a connection) goes to the {@link UrlOpener}, unless the agent opened it for one of
 * its own attempts (the pass-through token of {@link AgentUrlTransport#open}); {@link
 * Bridge#URL_RESEND} ({@code parseHTTP} starts) goes to {@link AgentUrlTransport#parsing}; {@link
 * Bridge#URL_LIBRARY_OPEN} (the application's own copy of the library opens a connection for one of
 * its attempts) opens the JDK's connection past the first hook.
 *
 * <p>The first two take no call over: each answers a value for the JDK's code to go on with, or
 * {@code null} to leave the JDK's own ({@link Bridge} counts the non-null answers). The rewritten
 * code falls back to the JDK's value when the answer is {@code null} and when the bridge throws.
 */
final class UrlEntry implements BridgeHandler {
  /** Set by {@link AgentUrlTransport#open} around each connection it opens for an attempt. */
  static final PassThrough PASS_THROUGH = new PassThrough();

  private final UrlOpener opener;
  private final AgentUrlTransport transport;

  private UrlEntry(UrlOpener opener, AgentUrlTransport transport) {
    this.opener = opener;
    this.transport = transport;
  }

  /** Sends both hooks' calls to {@code opener} and {@code transport}. */
  static void register(UrlOpener opener, AgentUrlTransport transport) {
    Bridge.register(
        Bridge.URL_OPENED, "an HttpURLConnection being opened", new UrlEntry(opener, null));
    Bridge.register(
        Bridge.URL_RESEND, "an HttpURLConnection response read", new UrlEntry(null, transport));
  }

  /** Removes the hooks' handlers: the JDK's connections and resends as they are. */
  static void unregister() {
    Bridge.unregister(Bridge.URL_OPENED);
    Bridge.unregister(Bridge.URL_RESEND);
    Bridge.unregister(Bridge.URL_LIBRARY_OPEN);
  }

  /**
   * Registers the hook of the application's own copy of the library ({@link
   * Bridge#URL_LIBRARY_OPEN}), when that copy is defined: before any of its connections is opened,
   * which may come before the first connection activates the other two.
   */
  static void registerLibrary() {
    Bridge.register(
        Bridge.URL_LIBRARY_OPEN,
        "the library's HttpURLConnection being opened",
        new UrlEntry(null, null));
  }

  /**
   * A connection for one attempt of the application's own copy of the library ({@code
   * RetryingUrlConnections}), opened with a pass-through token as {@link AgentUrlTransport#open}
   * opens the agent's own: the JDK's connection, not a retrying one of the agent's, so that the
   * library alone retries it, as without the agent. A failure is the library's, as it would be.
   */
  private static Object libraryOpen(Object url, Object proxy) {
    if (!(url instanceof URL) || (proxy != null && !(proxy instanceof Proxy))) {
      return null;
    }
    URL u = (URL) url;
    PASS_THROUGH.next();
    try {
      return Bridge.returned(proxy == null ? u.openConnection() : u.openConnection((Proxy) proxy));
    } catch (Throwable t) {
      return t; // the prologue throws it
    } finally {
      PASS_THROUGH.clear();
    }
  }

  @Override
  public Object enter(Object a, Object b, Object c, Object d, Object e, Object f) {
    if (opener == null && transport == null) {
      // the library's URL, its proxy (null for none)
      return libraryOpen(a, b);
    }
    if (opener != null) {
      // the JDK's new connection, its proxy (null for openConnection(URL))
      if (PASS_THROUGH.consume() || !(a instanceof URLConnection)) {
        return null;
      }
      return opener.open((URLConnection) a, (Proxy) b);
    }
    // the JDK's HttpClient, its failedOnce
    return a == null || !(b instanceof Boolean) ? null : transport.parsing(a, (Boolean) b);
  }
}
