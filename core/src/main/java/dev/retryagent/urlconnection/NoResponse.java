package dev.retryagent.urlconnection;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;

/**
 * The final "connection" of a call that ended without one the application may ask: the engine
 * refused it (circuit breaker open, no rate-limit permit), or the wait for a retry was interrupted
 * or cancelled. Answers as the JDK's connection answers after a failed exchange: the response
 * methods throw the failure, header methods return null or their defaults (the inherited
 * implementations, built on {@link #getHeaderField(String)}), {@code getErrorStream()} null.
 */
final class NoResponse extends HttpURLConnection {
  private final Throwable failure;

  NoResponse(URL url, Throwable failure) {
    super(url);
    this.failure = failure;
  }

  private IOException fail() throws IOException {
    if (failure instanceof IOException) {
      throw (IOException) failure;
    }
    if (failure instanceof RuntimeException) {
      throw (RuntimeException) failure;
    }
    throw (Error) failure;
  }

  @Override
  public void connect() throws IOException {
    throw fail();
  }

  @Override
  public InputStream getInputStream() throws IOException {
    throw fail();
  }

  @Override
  public String getHeaderField(String name) {
    return null;
  }

  @Override
  public String getHeaderField(int n) {
    return null;
  }

  @Override
  public String getHeaderFieldKey(int n) {
    return null;
  }

  @Override
  public void disconnect() {
    // nothing is open
  }

  @Override
  public boolean usingProxy() {
    return false;
  }
}
