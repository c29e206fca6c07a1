package dev.retryagent.urlconnection;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;

/**
 * The JDK's own connection to a URL, behind a connection of the test's: a subclass watches the
 * steps it cares about and calls these, which hand the exchange to the JDK's connection.
 */
abstract class ForwardingConnection extends HttpURLConnection {
  final HttpURLConnection real;

  ForwardingConnection(URL url) throws IOException {
    super(url);
    real = (HttpURLConnection) url.openConnection();
  }

  @Override
  public void connect() throws IOException {
    real.connect();
    connected = true;
  }

  @Override
  public InputStream getInputStream() throws IOException {
    return real.getInputStream();
  }

  @Override
  public int getResponseCode() throws IOException {
    return real.getResponseCode();
  }

  @Override
  public String getHeaderField(String name) {
    return real.getHeaderField(name);
  }

  @Override
  public InputStream getErrorStream() {
    return real.getErrorStream();
  }

  @Override
  public void disconnect() {
    real.disconnect();
  }

  @Override
  public boolean usingProxy() {
    return false;
  }
}
