package dev.retryagent.it.differential;

import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.OkHttpVersions;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import okhttp3.Callback;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.ResponseBody;
import okhttp3.WebSocket;
import okhttp3.WebSocketListener;
import retrofit2.Retrofit;
import retrofit2.http.HTTP;
import retrofit2.http.HeaderMap;
import retrofit2.http.Url;

/**
 * OkHttp 3.14, 4.12 and 5.x (one JVM each): {@code execute}, {@code enqueue} (WebSocket handshakes
 * go here too: {@code newWebSocket} enqueues its call), and Retrofit's {@code execute} and {@code
 * enqueue} on top. A new {@code OkHttpClient} per call.
 */
public final class OkHttpDriver implements Driver {
  private static final MediaType TEXT = MediaType.parse("text/plain; charset=utf-8");

  @Override
  public List<Variant> variants() {
    List<Variant> variants = new ArrayList<>();
    for (OkHttpVersions v : OkHttpVersions.all()) {
      List<Path> cp = new ArrayList<>(List.of(v.jars()));
      cp.add(ForkedJvm.locationOf(Retrofit.class));
      variants.add(new Variant("okhttp-" + v.version(), cp));
    }
    return variants;
  }

  @Override
  public List<String> apis() {
    return List.of("execute", "enqueue", "retrofit-execute", "retrofit-enqueue");
  }

  @Override
  public Set<Feature> features(String api) {
    Set<Feature> f =
        EnumSet.of(
            Feature.CONNECT_TIMEOUT,
            Feature.READ_TIMEOUT,
            Feature.WRITE_TIMEOUT,
            Feature.CALL_TIMEOUT,
            Feature.CANCEL_BEFORE,
            Feature.CANCEL,
            Feature.PATCH);
    if (!api.startsWith("retrofit")) {
      f.addAll(EnumSet.of(Feature.CANCEL_ALL, Feature.APP_INTERCEPTOR, Feature.FAULT_MATRIX));
    }
    if (api.equals("enqueue")) {
      f.addAll(EnumSet.of(Feature.WEBSOCKET, Feature.CALLBACK_THROWS));
    }
    return f;
  }

  /**
   * A read timeout is armed twice, on the socket ({@code SocketTimeoutException: Read timed out})
   * and by okio ({@code SocketTimeoutException: timeout}): which fires first is a race inside
   * OkHttp, so the message differs from run to run with or without the agent.
   */
  @Override
  public Map<String, String> racyOutcomes(String api) {
    return Map.of(
        "exception java\\.net\\.SocketTimeoutException: (Read timed out|timeout)",
        "exception java.net.SocketTimeoutException: (a read timeout, either message)");
  }

  @Override
  public Exchange prepare(String api, Action a, URI server) {
    OkHttpClient client = client(a);
    URI url = server.resolve(a.path());
    if (a.isWebSocket()) {
      return webSocket(client, a, url);
    }
    if (api.startsWith("retrofit")) {
      return RetrofitCall.prepare(client, api.endsWith("enqueue"), a, server);
    }
    Request.Builder r = new Request.Builder().url(url.toString());
    for (String h : a.headers()) {
      String[] nv = h.split(": ", 2);
      r.header(nv[0], nv[1]);
    }
    r.method(a.method(), body(a));
    okhttp3.Call call = client.newCall(r.build());
    boolean enqueue = api.equals("enqueue");
    return new Exchange() {
      @Override
      public void start(Delivery delivery) throws IOException {
        if (!enqueue) {
          try (Response response = call.execute()) {
            if (a.readsBody()) {
              response.body().bytes();
            }
            delivery.status(response.code());
          }
          return;
        }
        call.enqueue(
            new Callback() {
              @Override
              public void onFailure(okhttp3.Call c, IOException e) {
                delivery.failed(e);
              }

              @Override
              public void onResponse(okhttp3.Call c, Response response) throws IOException {
                try (response) {
                  if (a.readsBody()) {
                    response.body().bytes();
                  }
                } catch (IOException e) {
                  delivery.failed(e); // the application's own handling of a broken body
                  return;
                }
                delivery.status(response.code());
                if (a.callbackThrows().equals("io")) {
                  throw new IOException("the callback failed for " + url);
                } else if (a.callbackThrows().equals("runtime")) {
                  throw new IllegalStateException("the callback failed for " + url);
                }
              }
            });
      }

      @Override
      public void cancel(Action.Cancel how) {
        if (how == Action.Cancel.ALL) {
          client.dispatcher().cancelAll();
        } else {
          call.cancel();
        }
      }

      @Override
      public String followUp() throws Exception {
        return OkHttpDriver.followUp(client, a, server);
      }
    };
  }

  /**
   * A {@code GET} of the follow-up path on the same client, then what the client still holds: its
   * connections in use (the pool keeps one idle) and the calls its dispatcher still runs or queues,
   * given a moment to let go (an enqueued call leaves the dispatcher after its callback returned).
   */
  static String followUp(OkHttpClient client, Action a, URI server) throws Exception {
    Request.Builder r =
        new Request.Builder()
            .url(
                server.resolve(dev.retryagent.it.harness.CountingServer.FOLLOW_UP_PATH).toString());
    for (String h : a.headers()) {
      String[] nv = h.split(": ", 2);
      r.header(nv[0], nv[1]);
    }
    int code;
    try (Response response = client.newCall(r.build()).execute()) {
      response.body().bytes();
      code = response.code();
    }
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
    while (true) {
      int inUse =
          client.connectionPool().connectionCount() - client.connectionPool().idleConnectionCount();
      int calls = client.dispatcher().runningCallsCount() + client.dispatcher().queuedCallsCount();
      if (inUse == 0 && calls == 0) {
        return "status " + code;
      }
      if (System.nanoTime() - until > 0) {
        return "status "
            + code
            + ", "
            + inUse
            + " connection(s) in use, "
            + calls
            + " call(s) in the dispatcher";
      }
      Thread.sleep(20); // polling OkHttp's own bookkeeping, not waiting for the test
    }
  }

  private static OkHttpClient client(Action a) {
    OkHttpClient.Builder b = new OkHttpClient.Builder().followRedirects(a.followsRedirects());
    if (a.followsUp()) {
      // One connection kept: a call that left one behind shows as a connection still in use.
      b.connectionPool(new okhttp3.ConnectionPool(1, 1, TimeUnit.MINUTES));
    }
    if (a.connectTimeout() > 0) {
      b.connectTimeout(a.connectTimeout(), TimeUnit.MILLISECONDS);
    }
    if (a.readTimeout() > 0) {
      b.readTimeout(a.readTimeout(), TimeUnit.MILLISECONDS);
    }
    if (a.writeTimeout() > 0) {
      b.writeTimeout(a.writeTimeout(), TimeUnit.MILLISECONDS);
    }
    if (a.callTimeout() > 0) {
      b.callTimeout(a.callTimeout(), TimeUnit.MILLISECONDS);
    }
    if (!a.interceptorHeader().isEmpty()) {
      String[] nv = a.interceptorHeader().split(": ", 2);
      b.addInterceptor(
          chain -> chain.proceed(chain.request().newBuilder().header(nv[0], nv[1]).build()));
    }
    return b.build();
  }

  private static RequestBody body(Action a) {
    if (a.bodyBytes() > 0) {
      return RequestBody.create(TEXT, "x".repeat(a.bodyBytes()));
    }
    boolean needsBody = !a.method().equals("GET") && !a.method().equals("HEAD");
    return a.body().isEmpty() && !needsBody ? null : RequestBody.create(TEXT, a.body());
  }

  private static Exchange webSocket(OkHttpClient client, Action a, URI url) {
    Request.Builder r = new Request.Builder().url(url.toString());
    for (String h : a.headers()) {
      String[] nv = h.split(": ", 2);
      r.header(nv[0], nv[1]);
    }
    Request request = r.build();
    WebSocket[] socket = new WebSocket[1];
    // What the case observes is the handshake: once open, the socket is cancelled, and whatever
    // OkHttp reports about that is not part of it.
    java.util.concurrent.atomic.AtomicBoolean open =
        new java.util.concurrent.atomic.AtomicBoolean();
    return new Exchange() {
      @Override
      public void start(Delivery delivery) {
        socket[0] =
            client.newWebSocket(
                request,
                new WebSocketListener() {
                  @Override
                  public void onOpen(WebSocket webSocket, Response response) {
                    open.set(true);
                    delivery.succeeded("websocket open");
                    webSocket.cancel();
                  }

                  @Override
                  public void onFailure(WebSocket webSocket, Throwable t, Response response) {
                    if (!open.get()) {
                      delivery.failed(t);
                    }
                  }
                });
      }

      @Override
      public void cancel(Action.Cancel how) {
        socket[0].cancel();
      }
    };
  }

  /** A Retrofit service of raw bodies: no converter needed. */
  interface Raw {
    @HTTP(method = "GET")
    retrofit2.Call<ResponseBody> get(@Url String url, @HeaderMap Map<String, String> headers);

    @HTTP(method = "POST", hasBody = true)
    retrofit2.Call<ResponseBody> post(
        @Url String url,
        @HeaderMap Map<String, String> headers,
        @retrofit2.http.Body RequestBody body);

    @HTTP(method = "PUT", hasBody = true)
    retrofit2.Call<ResponseBody> put(
        @Url String url,
        @HeaderMap Map<String, String> headers,
        @retrofit2.http.Body RequestBody body);

    @HTTP(method = "PATCH", hasBody = true)
    retrofit2.Call<ResponseBody> patch(
        @Url String url,
        @HeaderMap Map<String, String> headers,
        @retrofit2.http.Body RequestBody body);
  }

  /** Retrofit's {@code execute} and {@code enqueue}, over the same client. */
  private static final class RetrofitCall {
    private RetrofitCall() {}

    static Exchange prepare(OkHttpClient client, boolean enqueue, Action a, URI server) {
      Raw raw =
          new Retrofit.Builder()
              .baseUrl(server.toString() + "/")
              .client(client)
              .build()
              .create(Raw.class);
      Map<String, String> headers = new TreeMap<>();
      for (String h : a.headers()) {
        String[] nv = h.split(": ", 2);
        headers.put(nv[0], nv[1]);
      }
      String url = server.resolve(a.path()).toString();
      retrofit2.Call<ResponseBody> call;
      switch (a.method()) {
        case "GET":
          call = raw.get(url, headers);
          break;
        case "POST":
          call = raw.post(url, headers, body(a));
          break;
        case "PATCH":
          call = raw.patch(url, headers, body(a));
          break;
        default:
          call = raw.put(url, headers, body(a));
          break;
      }
      return new Exchange() {
        @Override
        public void start(Delivery delivery) throws IOException {
          if (!enqueue) {
            delivery.status(closed(call.execute()));
            return;
          }
          call.enqueue(
              new retrofit2.Callback<ResponseBody>() {
                @Override
                public void onResponse(
                    retrofit2.Call<ResponseBody> c, retrofit2.Response<ResponseBody> response) {
                  delivery.status(closed(response));
                }

                @Override
                public void onFailure(retrofit2.Call<ResponseBody> c, Throwable t) {
                  delivery.failed(t);
                }
              });
        }

        @Override
        public void cancel(Action.Cancel how) {
          call.cancel();
        }

        @Override
        public String followUp() throws Exception {
          return OkHttpDriver.followUp(client, a, server);
        }
      };
    }

    private static int closed(retrofit2.Response<ResponseBody> response) {
      ResponseBody body = response.isSuccessful() ? response.body() : response.errorBody();
      if (body != null) {
        body.close();
      }
      return response.code();
    }
  }
}
