package dev.retryagent.it.apps;

import org.apache.http.client.config.RequestConfig;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.client.methods.HttpGet;
import org.apache.http.config.SocketConfig;
import org.apache.http.conn.HttpClientConnectionManager;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.impl.conn.BasicHttpClientConnectionManager;
import org.apache.http.impl.conn.PoolingHttpClientConnectionManager;
import org.apache.http.util.EntityUtils;

/**
 * An application whose Apache HttpClient 4.5 has a pool of one connection, a socket timeout of 7 s
 * from its {@code SocketConfig} (its {@code RequestConfig} sets none, so a kept-alive connection
 * keeps whatever socket timeout it has) and a connection-request timeout of 20 s. No retry code.
 * One call after the other, on the one connection while it stays open:
 *
 * <ol>
 *   <li>{@code first}: {@code BASE/bounded/first};
 *   <li>{@code next}: {@code BASE/free/next};
 *   <li>{@code stalled}: {@code BASE/bounded/stalled};
 *   <li>{@code pooled}: {@code BASE/bounded/pooled} on a thread of its own while the response of
 *       {@code BASE/free/held} holds the connection, which is given back (the response closed
 *       unread) once {@code pooled} ends or 3.5 s have passed, whichever comes first.
 * </ol>
 *
 * <p>Arguments: {@code BASE} ({@code http://127.0.0.1:PORT}), then {@code basic} for a {@code
 * BasicHttpClientConnectionManager} of the same socket timeout instead of the pool (no {@code
 * pooled}: its one connection is never waited for, a second lease fails at once). Prints {@code
 * NAME.status=} or {@code NAME.error=} (the exception's class) for each call, then {@code
 * calls.done=1}.
 */
public final class Apache4KeptConnectionApp {
  private Apache4KeptConnectionApp() {}

  public static void main(String[] args) throws Exception {
    String base = args[0];
    boolean basic = args.length > 1 && args[1].equals("basic");
    HttpClientConnectionManager manager;
    if (basic) {
      BasicHttpClientConnectionManager one = new BasicHttpClientConnectionManager();
      one.setSocketConfig(SocketConfig.custom().setSoTimeout(7_000).build());
      manager = one;
    } else {
      PoolingHttpClientConnectionManager pool = new PoolingHttpClientConnectionManager();
      pool.setMaxTotal(1);
      pool.setDefaultMaxPerRoute(1);
      pool.setDefaultSocketConfig(SocketConfig.custom().setSoTimeout(7_000).build());
      manager = pool;
    }
    try (CloseableHttpClient client =
        HttpClients.custom()
            .setConnectionManager(manager)
            .setDefaultRequestConfig(
                RequestConfig.custom()
                    .setConnectionRequestTimeout(20_000)
                    .setConnectTimeout(5_000)
                    .build())
            .build()) {
      call(client, "first", base + "/bounded/first");
      call(client, "next", base + "/free/next");
      call(client, "stalled", base + "/bounded/stalled");
      if (basic) {
        System.out.println("calls.done=1"); // its one connection is never waited for
        return;
      }

      CloseableHttpResponse held = client.execute(new HttpGet(base + "/free/held"));
      System.out.println("held.status=" + held.getStatusLine().getStatusCode());
      Thread pooled = new Thread(() -> call(client, "pooled", base + "/bounded/pooled"));
      pooled.start();
      pooled.join(3_500);
      held.close();
      pooled.join();
    }
    System.out.println("calls.done=1");
  }

  private static void call(CloseableHttpClient client, String name, String url) {
    try (CloseableHttpResponse r = client.execute(new HttpGet(url))) {
      EntityUtils.consume(r.getEntity());
      System.out.println(name + ".status=" + r.getStatusLine().getStatusCode());
    } catch (Exception e) {
      System.out.println(name + ".error=" + e.getClass().getName());
      System.out.println(name + ".message=" + e.getMessage());
    }
  }
}
