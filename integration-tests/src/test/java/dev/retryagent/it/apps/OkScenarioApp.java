package dev.retryagent.it.apps;

import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okio.BufferedSink;

/**
 * An application with no retry code that makes the calls it is told to with OkHttp (whichever
 * version is on its class path), through {@code execute()} or {@code enqueue()}. Run with the
 * agent, or with {@code --by-hand CONFIG} to add the library's interceptor itself (and, for {@code
 * enqueue}, to hand calls to its async retrier), from the same configuration file.
 *
 * <p>Arguments: {@code [--by-hand CONFIG] [--mode MODE] CALL...}; each call is {@code
 * NAME|API|METHOD|URL|HEADERS|BODY} with API {@code execute} or {@code enqueue}, headers as {@code
 * Name=value;Name2=value2} (may be empty), body may be empty; a body {@code oneshot:TEXT} is a
 * one-shot body. For each call it prints {@code NAME.status=} and {@code NAME.body=}, or {@code
 * NAME.error=} (exception class) and {@code NAME.message=}, then {@code NAME.millis=}. At the end:
 * {@code okhttp.version=}, {@code okhttp.module=} (null on the class path), {@code interceptors=}
 * (class names of the client's application interceptors), {@code pool.connections=} and {@code
 * pool.idle=} (all idle: no response left open).
 */
public final class OkScenarioApp {
  private static final MediaType TEXT = MediaType.parse("text/plain; charset=utf-8");

  private OkScenarioApp() {}

  public static void main(String[] args) throws Exception {
    int i = 0;
    Path byHand = null;
    String mode = null;
    while (i < args.length && args[i].startsWith("--")) {
      if (args[i].equals("--by-hand")) {
        byHand = Path.of(args[++i]);
      } else if (args[i].equals("--mode")) {
        mode = args[++i];
      }
      i++;
    }
    OkHttpClient client = new OkHttpClient.Builder().readTimeout(20, TimeUnit.SECONDS).build();
    OkByHandWiring.Wired wired = null;
    if (byHand != null) {
      // In its own class: with the agent, the library is not on the class path at all.
      wired = OkByHandWiring.wire(client, byHand, mode);
      client = wired.client();
    }
    for (; i < args.length; i++) {
      call(client, wired, args[i].split("\\|", -1));
    }
    System.out.println("okhttp.version=" + OkVersions.version());
    System.out.println("okhttp.module=" + OkHttpClient.class.getModule().getName());
    System.out.println("interceptors=" + OkVersions.interceptorNames(client));
    System.out.println("pool.connections=" + client.connectionPool().connectionCount());
    System.out.println("pool.idle=" + client.connectionPool().idleConnectionCount());
    client.dispatcher().executorService().shutdown();
    client.connectionPool().evictAll();
  }

  private static void call(OkHttpClient client, OkByHandWiring.Wired wired, String[] spec)
      throws InterruptedException {
    String name = spec[0];
    boolean async = spec[1].equals("enqueue");
    Request.Builder b = new Request.Builder().url(spec[3]);
    RequestBody body = body(spec[5]);
    if (body == null && (spec[2].equals("POST") || spec[2].equals("PUT"))) {
      body = RequestBody.create(TEXT, "");
    }
    b.method(spec[2], body);
    if (!spec[4].isEmpty()) {
      for (String header : spec[4].split(";")) {
        String[] kv = header.split("=", 2);
        b.header(kv[0], kv[1]);
      }
    }
    Call call = client.newCall(b.build());
    long start = System.nanoTime();
    try {
      Response response;
      if (async) {
        CompletableFuture<Response> f = new CompletableFuture<>();
        Callback callback =
            new Callback() {
              @Override
              public void onFailure(Call c, IOException e) {
                f.completeExceptionally(e);
              }

              @Override
              public void onResponse(Call c, Response r) {
                f.complete(r);
              }
            };
        if (wired != null) {
          wired.enqueue(call, callback);
        } else {
          call.enqueue(callback);
        }
        try {
          response = f.get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          throw (IOException) e.getCause();
        }
      } else {
        response = call.execute();
      }
      try (Response r = response) {
        System.out.println(name + ".status=" + r.code());
        System.out.println(name + ".body=" + r.body().string());
      }
    } catch (IOException | java.util.concurrent.TimeoutException e) {
      System.out.println(name + ".error=" + e.getClass().getName());
      System.out.println(name + ".message=" + String.valueOf(e.getMessage()).replace('\n', ' '));
    }
    System.out.println(name + ".millis=" + (System.nanoTime() - start) / 1_000_000);
  }

  private static RequestBody body(String spec) {
    if (spec.isEmpty()) {
      return null;
    }
    if (!spec.startsWith("oneshot:")) {
      return RequestBody.create(TEXT, spec);
    }
    String text = spec.substring("oneshot:".length());
    return new RequestBody() {
      @Override
      public MediaType contentType() {
        return TEXT;
      }

      @Override
      public void writeTo(BufferedSink sink) throws IOException {
        sink.writeUtf8(text);
      }

      @Override
      public boolean isOneShot() {
        return true;
      }
    };
  }
}
