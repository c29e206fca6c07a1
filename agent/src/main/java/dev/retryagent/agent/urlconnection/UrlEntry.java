package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgeHandler;
import dev.retryagent.agent.tooling.PassThrough;
import java.net.Proxy;
import java.net.URLConnection;

/**
 * Where the {@code HttpURLConnection} hooks enter the agent: {@link Bridge#URL_OPENED} (a protocol
 * handler made a connection) goes to the {@link UrlOpener}, unless the agent opened it for one of
 * its own attempts (the pass-through token of {@link AgentUrlTransport#open}); {@link
 * Bridge#URL_RESEND} ({@code parseHTTP} starts) goes to {@link AgentUrlTransport#parsing}.
 *
 * <p>Neither hook takes a call over: each answers a value for the JDK's code to go on with, or
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

  /** Removes both hooks' handler: the JDK's connections and resends as they are. */
  static void unregister() {
    Bridge.unregister(Bridge.URL_OPENED);
    Bridge.unregister(Bridge.URL_RESEND);
  }

  @Override
  public Object enter(Object a, Object b, Object c, Object d, Object e, Object f) {
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
