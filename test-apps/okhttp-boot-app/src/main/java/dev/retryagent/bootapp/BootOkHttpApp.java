package dev.retryagent.bootapp;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Interceptor;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * Inside a Spring Boot executable jar, OkHttp is in a nested jar that only Boot's class loader
 * sees. Makes a GET with {@code execute()} and one with {@code enqueue()}, then prints {@code
 * execute=STATUS:BODY}, {@code enqueue=STATUS:BODY}, {@code okhttp.loader=} (the class loader of
 * OkHttp), {@code interceptors=} and {@code interceptor.loader=}.
 *
 * <p>Argument: the base URL.
 */
public final class BootOkHttpApp {
  private BootOkHttpApp() {}

  public static void main(String[] args) throws Exception {
    OkHttpClient client = new OkHttpClient();
    try (Response r =
        client.newCall(new Request.Builder().url(args[0] + "/sync").build()).execute()) {
      System.out.println("execute=" + r.code() + ":" + r.body().string());
    }
    CompletableFuture<String> async = new CompletableFuture<>();
    client
        .newCall(new Request.Builder().url(args[0] + "/async").build())
        .enqueue(
            new Callback() {
              @Override
              public void onFailure(Call call, IOException e) {
                async.complete("failed:" + e);
              }

              @Override
              public void onResponse(Call call, Response response) {
                try (Response r = response) {
                  async.complete(r.code() + ":" + r.body().string());
                } catch (IOException e) {
                  async.complete("failed:" + e);
                }
              }
            });
    System.out.println("enqueue=" + async.get(30, TimeUnit.SECONDS));
    System.out.println("okhttp.loader=" + OkHttpClient.class.getClassLoader().getClass().getName());
    List<String> names = new ArrayList<>();
    for (Interceptor i : client.interceptors()) {
      names.add(i.getClass().getName());
    }
    System.out.println("interceptors=" + String.join(",", names));
    if (!client.interceptors().isEmpty()) {
      System.out.println(
          "interceptor.loader=" + client.interceptors().get(0).getClass().getClassLoader());
    }
    System.exit(0);
  }
}
