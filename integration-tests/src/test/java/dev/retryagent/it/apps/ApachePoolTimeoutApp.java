package dev.retryagent.it.apps;

import java.io.Closeable;
import java.io.InputStream;

/**
 * An application whose Apache HttpClient (4.5 or 5.x) has a pool of one connection and waits 300 ms
 * for one ({@code connectionRequestTimeout}): a first call's response is left open (its connection
 * stays leased), so a second call to the same server finds none in time. No retry code.
 *
 * <p>Arguments: {@code 4|5 HELD_URL WAITING_URL}. Prints {@code held.status=}, then {@code
 * waiting.status=} or {@code waiting.error=} and {@code waiting.message=}, then {@code
 * calls.done=1}; closes the held response and the client, and exits at the end of its input (so
 * that a test can read its metrics first).
 */
public final class ApachePoolTimeoutApp {
  private ApachePoolTimeoutApp() {}

  /** The two calls of one HttpClient major version. */
  private interface Calls extends Closeable {
    /** Starts the call and leaves its response open; returns the status. */
    int hold(String url) throws Exception;

    /** A call whose response is read and closed; returns the status. */
    int call(String url) throws Exception;
  }

  public static void main(String[] args) throws Exception {
    // Each version's calls in a class of its own: only that version's jars are on the class path.
    try (Calls calls = args[0].equals("4") ? new Apache4() : new Apache5()) {
      System.out.println("held.status=" + calls.hold(args[1]));
      try {
        System.out.println("waiting.status=" + calls.call(args[2]));
      } catch (Exception e) {
        System.out.println("waiting.error=" + e.getClass().getName());
        System.out.println("waiting.message=" + e.getMessage());
      }
      System.out.println("calls.done=1");
    }
    InputStream in = System.in;
    while (in.read() != -1) {
      // until the test ends our input
    }
  }

  private static final class Apache4 implements Calls {
    private final org.apache.http.impl.conn.PoolingHttpClientConnectionManager pool =
        new org.apache.http.impl.conn.PoolingHttpClientConnectionManager();
    private final org.apache.http.impl.client.CloseableHttpClient client;
    private org.apache.http.client.methods.CloseableHttpResponse held;

    Apache4() {
      pool.setDefaultMaxPerRoute(1);
      pool.setMaxTotal(1);
      client =
          org.apache.http.impl.client.HttpClients.custom()
              .setConnectionManager(pool)
              .setDefaultRequestConfig(
                  org.apache.http.client.config.RequestConfig.custom()
                      .setConnectionRequestTimeout(300)
                      .setConnectTimeout(5_000)
                      .setSocketTimeout(20_000)
                      .build())
              .build();
    }

    @Override
    public int hold(String url) throws Exception {
      held = client.execute(new org.apache.http.client.methods.HttpGet(url));
      return held.getStatusLine().getStatusCode();
    }

    @Override
    public int call(String url) throws Exception {
      try (org.apache.http.client.methods.CloseableHttpResponse r =
          client.execute(new org.apache.http.client.methods.HttpGet(url))) {
        org.apache.http.util.EntityUtils.consume(r.getEntity());
        return r.getStatusLine().getStatusCode();
      }
    }

    @Override
    public void close() throws java.io.IOException {
      if (held != null) {
        held.close();
      }
      client.close();
    }
  }

  private static final class Apache5 implements Calls {
    private final org.apache.hc.client5.http.impl.classic.CloseableHttpClient client =
        org.apache.hc.client5.http.impl.classic.HttpClients.custom()
            .setConnectionManager(
                org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder
                    .create()
                    .setMaxConnPerRoute(1)
                    .setMaxConnTotal(1)
                    .build())
            .setDefaultRequestConfig(
                org.apache.hc.client5.http.config.RequestConfig.custom()
                    .setConnectionRequestTimeout(
                        org.apache.hc.core5.util.Timeout.ofMilliseconds(300))
                    .setResponseTimeout(org.apache.hc.core5.util.Timeout.ofSeconds(20))
                    .build())
            .build();
    private org.apache.hc.client5.http.impl.classic.CloseableHttpResponse held;

    @Override
    public int hold(String url) throws Exception {
      held = client.execute(new org.apache.hc.client5.http.classic.methods.HttpGet(url));
      return held.getCode();
    }

    @Override
    public int call(String url) throws Exception {
      try (org.apache.hc.client5.http.impl.classic.CloseableHttpResponse r =
          client.execute(new org.apache.hc.client5.http.classic.methods.HttpGet(url))) {
        org.apache.hc.core5.http.io.entity.EntityUtils.consume(r.getEntity());
        return r.getCode();
      }
    }

    @Override
    public void close() throws java.io.IOException {
      if (held != null) {
        held.close();
      }
      client.close();
    }
  }
}
