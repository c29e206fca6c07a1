package dev.retryagent.agent.urlconnection;

import java.net.Proxy;
import java.net.URL;
import java.net.URLConnection;
import java.net.URLStreamHandler;

/**
 * The shape of the JDK's protocol handlers: {@code openConnection(URL, Proxy)} is one {@code new}.
 */
public class FakeHandler extends URLStreamHandler {
  @Override
  protected URLConnection openConnection(URL u) {
    return openConnection(u, (Proxy) null);
  }

  @Override
  protected URLConnection openConnection(URL u, Proxy p) {
    return new FakeConnection(u, p, this);
  }

  /** For the test: what the patched method returns. */
  public URLConnection open(URL u, Proxy p) {
    return openConnection(u, p);
  }
}
