package dev.retryagent.urlconnection;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.util.List;
import java.util.Map;

/**
 * The final "connection" of a call that ended without one the application may ask: the engine
 * refused it (circuit breaker open, no rate-limit permit), or the wait for a retry was interrupted
 * or cancelled. Answers as the JDK's connection answers after a failed exchange: the response
 * methods throw the failure, header methods return null or their defaults (the inherited
 * implementations, built on {@link #getHeaderField(String)}), {@code getErrorStream()} null. The
 * request's settings are read from the connection that had them: what the application set, as the
 * JDK's connection answers after a failure (an error handler names the request from them); a blank
 * connection answered a GET without headers.
 */
final class NoResponse extends HttpURLConnection {
  private final Throwable failure;
  private final HttpURLConnection settings;

  /**
   * @param settings the connection the application's settings were made on, or copied to: the
   *     template or the last attempt
   */
  NoResponse(URL url, Throwable failure, HttpURLConnection settings) {
    super(url);
    this.failure = failure;
    this.settings = settings;
  }

  HttpURLConnection settings() {
    return settings;
  }

  @Override
  public String getRequestMethod() {
    return settings.getRequestMethod();
  }

  @Override
  public String getRequestProperty(String key) {
    return settings.getRequestProperty(key);
  }

  @Override
  public Map<String, List<String>> getRequestProperties() {
    return settings.getRequestProperties();
  }

  @Override
  public boolean getDoInput() {
    return settings.getDoInput();
  }

  @Override
  public boolean getDoOutput() {
    return settings.getDoOutput();
  }

  @Override
  public boolean getUseCaches() {
    return settings.getUseCaches();
  }

  @Override
  public boolean getAllowUserInteraction() {
    return settings.getAllowUserInteraction();
  }

  @Override
  public long getIfModifiedSince() {
    return settings.getIfModifiedSince();
  }

  @Override
  public boolean getInstanceFollowRedirects() {
    return settings.getInstanceFollowRedirects();
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
