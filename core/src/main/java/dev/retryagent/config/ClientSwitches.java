package dev.retryagent.config;

import java.util.Objects;

/**
 * {@code agent.clients}: which HTTP clients the agent instruments. All on by default. Immutable and
 * thread-safe.
 */
public final class ClientSwitches {
  private static final ClientSwitches ALL_ON = new ClientSwitches(true, true, true, true);

  private final boolean jdkHttp;
  private final boolean okhttp;
  private final boolean urlConnection;
  private final boolean apacheHttpClient;

  ClientSwitches(boolean jdkHttp, boolean okhttp, boolean urlConnection, boolean apacheHttpClient) {
    this.jdkHttp = jdkHttp;
    this.okhttp = okhttp;
    this.urlConnection = urlConnection;
    this.apacheHttpClient = apacheHttpClient;
  }

  /** Every client on. */
  public static ClientSwitches defaults() {
    return ALL_ON;
  }

  /** {@code jdk-http}: {@code java.net.http.HttpClient} send / sendAsync. */
  public boolean jdkHttp() {
    return jdkHttp;
  }

  /** {@code okhttp}: OkHttp 3.x, 4.x, 5.x execute / enqueue. */
  public boolean okhttp() {
    return okhttp;
  }

  /** {@code url-connection}: HttpURLConnection (docs/url-connection.md). */
  public boolean urlConnection() {
    return urlConnection;
  }

  /** {@code apache-httpclient}: Apache HttpClient 4.5.x / 5.x classic (once supported). */
  public boolean apacheHttpClient() {
    return apacheHttpClient;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ClientSwitches)) {
      return false;
    }
    ClientSwitches t = (ClientSwitches) o;
    return jdkHttp == t.jdkHttp
        && okhttp == t.okhttp
        && urlConnection == t.urlConnection
        && apacheHttpClient == t.apacheHttpClient;
  }

  @Override
  public int hashCode() {
    return Objects.hash(jdkHttp, okhttp, urlConnection, apacheHttpClient);
  }

  @Override
  public String toString() {
    return "clients{jdk-http="
        + jdkHttp
        + ", okhttp="
        + okhttp
        + ", url-connection="
        + urlConnection
        + ", apache-httpclient="
        + apacheHttpClient
        + "}";
  }
}
