package dev.retryagent.it.apps;

import java.io.IOException;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * Makes one GET with a new {@code OkHttpClient} of whatever OkHttp its own class loader sees:
 * loaded by {@link OkAgentChecksApp} into other class loaders (another OkHttp version, another
 * agent's loader), and called there by reflection.
 */
public final class OkDriver {
  private OkDriver() {}

  /** Returns {@code status=N;version=V;interceptors=A,B;interceptorLoader=L}. */
  public static String get(String url) throws IOException {
    OkHttpClient client = new OkHttpClient();
    try (Response r = client.newCall(new Request.Builder().url(url).build()).execute()) {
      String loader =
          client.interceptors().isEmpty()
              ? "none"
              : String.valueOf(client.interceptors().get(0).getClass().getClassLoader());
      return "status="
          + r.code()
          + ";version="
          + OkVersions.version(OkHttpClient.class)
          + ";interceptors="
          + OkVersions.interceptorNames(client)
          + ";interceptorLoader="
          + loader.replace(';', ',');
    } finally {
      client.dispatcher().executorService().shutdown();
      client.connectionPool().evictAll();
    }
  }

  /**
   * Builds clients, cancels a call, and (with {@code enqueue}) enqueues one to {@code url} where
   * nothing listens (the agent retries the refused connection, then the callback fails): everything
   * of the agent's that a class loader's OkHttp reaches. OkHttp 3 and 4 then leave no thread of
   * theirs running (no connection is ever pooled; the dispatcher is shut down); OkHttp 5 keeps its
   * "OkHttp TaskRunner" thread, and with it its loader, for a minute after an enqueue, with or
   * without the agent.
   */
  public static String touch(String url, boolean enqueue) throws Exception {
    OkHttpClient client = new OkHttpClient.Builder().build().newBuilder().build();
    client.newCall(new Request.Builder().url(url).build()).cancel();
    if (!enqueue) {
      return OkVersions.interceptorNames(client) + ";not enqueued";
    }
    java.util.concurrent.CompletableFuture<String> failed =
        new java.util.concurrent.CompletableFuture<>();
    client
        .newCall(new Request.Builder().url(url).build())
        .enqueue(
            new okhttp3.Callback() {
              @Override
              public void onFailure(okhttp3.Call call, IOException e) {
                failed.complete(e.getClass().getSimpleName());
              }

              @Override
              public void onResponse(okhttp3.Call call, Response response) {
                response.close();
                failed.complete("response " + response.code());
              }
            });
    String outcome = failed.get(30, java.util.concurrent.TimeUnit.SECONDS);
    client.dispatcher().executorService().shutdown();
    client
        .dispatcher()
        .executorService()
        .awaitTermination(10, java.util.concurrent.TimeUnit.SECONDS);
    return OkVersions.interceptorNames(client) + ";" + outcome;
  }
}
