package dev.retryagent.it.apps;

import java.io.IOException;
import java.lang.ref.WeakReference;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * The anti-pattern of a long-running service: a new client for every call, never closed, dropped
 * once the call is done ({@code java.net.http} {@code send} and {@code sendAsync}, OkHttp {@code
 * execute} and {@code enqueue}, Apache HttpClient 4.5 and 5.x), and a new {@code HttpURLConnection}
 * for every call, as it always is. Whatever the agent keeps per client or connection must let it go
 * as the application does.
 *
 * <p>Arguments: {@code URL CALLS}. Makes {@code CALLS} calls with each way, each on a client of its
 * own, and prints {@code status.WAY=} (the statuses seen, comma-separated, once each), then, after
 * collecting the garbage until every client is gone or 20 s have passed, {@code alive.WAY=} (the
 * clients still reachable) and {@code terminated=1}.
 */
public final class ClientPerCallApp {
  private ClientPerCallApp() {}

  public static void main(String[] args) throws Exception {
    String url = args[0];
    int calls = Integer.parseInt(args[1]);
    String[] ways = {
      "jdkSend", "jdkSendAsync", "okExecute", "okEnqueue", "apache4", "apache5", "urlConnection"
    };
    List<List<WeakReference<Object>>> refs = new ArrayList<>();
    for (String way : ways) {
      List<WeakReference<Object>> clients = new ArrayList<>();
      java.util.TreeSet<Integer> statuses = new java.util.TreeSet<>();
      for (int i = 0; i < calls; i++) {
        statuses.add(call(way, url + "/" + way + "/" + i, clients));
      }
      refs.add(clients);
      System.out.println(
          "status."
              + way
              + "="
              + statuses.toString().replace("[", "").replace("]", "").replace(" ", ""));
    }
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (alive(refs) > 0 && until - System.nanoTime() > 0) {
      System.gc();
      Thread.sleep(50); // a GC loop, bounded: reference processing takes its own time
    }
    for (int i = 0; i < ways.length; i++) {
      int n = 0;
      for (WeakReference<Object> r : refs.get(i)) {
        n += r.get() == null ? 0 : 1;
      }
      System.out.println("alive." + ways[i] + "=" + n);
    }
    System.out.println("terminated=1");
    System.exit(0); // the threads of clients never closed
  }

  private static int alive(List<List<WeakReference<Object>>> refs) {
    int n = 0;
    for (List<WeakReference<Object>> l : refs) {
      for (WeakReference<Object> r : l) {
        n += r.get() == null ? 0 : 1;
      }
    }
    return n;
  }

  private static int call(String way, String url, List<WeakReference<Object>> clients)
      throws Exception {
    switch (way) {
      case "jdkSend":
      case "jdkSendAsync":
        {
          HttpClient c = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
          clients.add(new WeakReference<>(c));
          HttpRequest r =
              HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build();
          return way.equals("jdkSend")
              ? c.send(r, HttpResponse.BodyHandlers.ofString()).statusCode()
              : c.sendAsync(r, HttpResponse.BodyHandlers.ofString())
                  .get(30, TimeUnit.SECONDS)
                  .statusCode();
        }
      case "okExecute":
        {
          OkHttpClient c = new OkHttpClient();
          clients.add(new WeakReference<>(c));
          try (Response r = c.newCall(new Request.Builder().url(url).build()).execute()) {
            r.body().string();
            return r.code();
          }
        }
      case "okEnqueue":
        {
          OkHttpClient c = new OkHttpClient();
          clients.add(new WeakReference<>(c));
          CompletableFuture<Integer> done = new CompletableFuture<>();
          c.newCall(new Request.Builder().url(url).build())
              .enqueue(
                  new Callback() {
                    @Override
                    public void onFailure(Call call, IOException e) {
                      done.completeExceptionally(e);
                    }

                    @Override
                    public void onResponse(Call call, Response response) {
                      try (Response r = response) {
                        done.complete(r.code());
                      }
                    }
                  });
          return done.get(30, TimeUnit.SECONDS);
        }
      case "apache4":
        {
          org.apache.http.impl.client.CloseableHttpClient c =
              org.apache.http.impl.client.HttpClients.createDefault();
          clients.add(new WeakReference<>(c));
          try (org.apache.http.client.methods.CloseableHttpResponse r =
              c.execute(new org.apache.http.client.methods.HttpGet(url))) {
            org.apache.http.util.EntityUtils.consume(r.getEntity());
            return r.getStatusLine().getStatusCode();
          }
        }
      case "apache5":
        {
          org.apache.hc.client5.http.impl.classic.CloseableHttpClient c =
              org.apache.hc.client5.http.impl.classic.HttpClients.createDefault();
          clients.add(new WeakReference<>(c));
          return c.execute(
              new org.apache.hc.client5.http.classic.methods.HttpGet(url),
              response -> {
                org.apache.hc.core5.http.io.entity.EntityUtils.consume(response.getEntity());
                return response.getCode();
              });
        }
      case "urlConnection":
        {
          // not a client, but what the agent keeps for a connection must let it go as well
          java.net.HttpURLConnection c =
              (java.net.HttpURLConnection) URI.create(url).toURL().openConnection();
          clients.add(new WeakReference<>(c));
          c.setReadTimeout(20_000);
          int status = c.getResponseCode();
          try (java.io.InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
            if (in != null) {
              in.readAllBytes();
            }
          }
          return status;
        }
      default:
        throw new IllegalArgumentException(way);
    }
  }
}
