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
   * Builds clients, and starts and cancels a call, without a connection: everything of the agent's
   * that a class loader's OkHttp reaches, and nothing that starts OkHttp's own threads.
   */
  public static String touch(String url) {
    OkHttpClient client = new OkHttpClient.Builder().build().newBuilder().build();
    client.newCall(new Request.Builder().url(url).build()).cancel();
    return OkVersions.interceptorNames(client);
  }
}
