package dev.retryagent.agent.urlconnection;

import java.net.Proxy;
import java.net.URL;
import java.net.URLConnection;
import java.net.URLStreamHandler;

/** A handler whose {@code openConnection(URL, Proxy)} is not the JDK's one-liner. */
public class OddHandler extends URLStreamHandler {
  static int opened;

  @Override
  protected URLConnection openConnection(URL u) {
    return openConnection(u, (Proxy) null);
  }

  @Override
  protected URLConnection openConnection(URL u, Proxy p) {
    opened++;
    if (p == Proxy.NO_PROXY) {
      return new FakeConnection(u, p, null);
    }
    return new FakeConnection(u, p, null);
  }

  public URLConnection open(URL u, Proxy p) {
    return openConnection(u, p);
  }
}
