package dev.retryagent.agent.urlconnection;

import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.URL;

/** What {@link FakeHandler} makes, as the JDK's handler makes its connection. */
public class FakeConnection extends HttpURLConnection {
  final Proxy proxy;

  FakeConnection(URL u, Proxy p, FakeHandler h) {
    super(u);
    this.proxy = p;
  }

  @Override
  public void connect() {}

  @Override
  public void disconnect() {}

  @Override
  public boolean usingProxy() {
    return proxy != null;
  }
}
