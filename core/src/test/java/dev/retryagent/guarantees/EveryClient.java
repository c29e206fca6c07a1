package dev.retryagent.guarantees;

import dev.retryagent.apache4.RetryingCloseableHttpClient;
import dev.retryagent.apache5.AsyncRetryExecHandler;
import dev.retryagent.apache5.RetryExecHandler;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.okhttp.AsyncRetrier;
import dev.retryagent.urlconnection.RetryingUrlConnections;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * One bodiless request through each client the agent wraps, wired to {@code engine} by hand as the
 * agent wires it, each API the agent hooks: the status the application gets. For tests that run one
 * scenario through every client against a loopback server.
 */
enum EveryClient {
  JDK_SEND {
    @Override
    int send(RetryEngine engine, String method, String url) throws Exception {
      return jdkSend(engine, method, url);
    }
  },
  JDK_SEND_ASYNC {
    @Override
    int send(RetryEngine engine, String method, String url) throws Exception {
      return jdkSendAsync(engine, method, url);
    }
  },
  OKHTTP_EXECUTE {
    @Override
    int send(RetryEngine engine, String method, String url) throws Exception {
      return okHttpExecute(engine, method, url);
    }
  },
  OKHTTP_ENQUEUE {
    @Override
    int send(RetryEngine engine, String method, String url) throws Exception {
      return okHttpEnqueue(engine, method, url);
    }
  },
  /** Takes upper-case methods only, as HttpURLConnection's setRequestMethod does. */
  HTTP_URL_CONNECTION {
    @Override
    int send(RetryEngine engine, String method, String url) throws Exception {
      return urlConnection(engine, method, url);
    }
  },
  APACHE_4 {
    @Override
    int send(RetryEngine engine, String method, String url) throws Exception {
      return apache4(engine, method, url);
    }
  },
  APACHE_5_CLASSIC {
    @Override
    int send(RetryEngine engine, String method, String url) throws Exception {
      return apache5Classic(engine, method, url);
    }
  },
  APACHE_5_ASYNC {
    @Override
    int send(RetryEngine engine, String method, String url) throws Exception {
      return apache5Async(engine, method, url);
    }
  };

  private static final long WAIT_SECONDS = 30;

  /** Sends {@code method} to {@code url} through this client; the status the application gets. */
  abstract int send(RetryEngine engine, String method, String url) throws Exception;

  private static int jdkSend(RetryEngine engine, String method, String url) throws Exception {
    return jdk(engine)
        .send(jdkRequest(method, url), HttpResponse.BodyHandlers.ofString())
        .statusCode();
  }

  private static int jdkSendAsync(RetryEngine engine, String method, String url) throws Exception {
    return jdk(engine)
        .sendAsync(jdkRequest(method, url), HttpResponse.BodyHandlers.ofString())
        .get(WAIT_SECONDS, TimeUnit.SECONDS)
        .statusCode();
  }

  private static HttpClient jdk(RetryEngine engine) {
    return RetryingHttpClient.wrap(
        HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(), engine);
  }

  private static HttpRequest jdkRequest(String method, String url) {
    return HttpRequest.newBuilder(URI.create(url))
        .method(method, HttpRequest.BodyPublishers.noBody())
        .build();
  }

  private static int okHttpExecute(RetryEngine engine, String method, String url) throws Exception {
    OkHttpClient client = okHttp(engine);
    try (Response response = client.newCall(okRequest(method, url)).execute()) {
      return response.code();
    } finally {
      client.connectionPool().evictAll();
    }
  }

  private static int okHttpEnqueue(RetryEngine engine, String method, String url) throws Exception {
    OkHttpClient client = okHttp(engine);
    CompletableFuture<Integer> code = new CompletableFuture<>();
    client
        .newCall(okRequest(method, url))
        .enqueue(
            new Callback() {
              @Override
              public void onFailure(Call call, IOException e) {
                code.completeExceptionally(e);
              }

              @Override
              public void onResponse(Call call, Response response) {
                try (Response r = response) {
                  code.complete(r.code());
                }
              }
            });
    try {
      return code.get(WAIT_SECONDS, TimeUnit.SECONDS);
    } finally {
      client.connectionPool().evictAll();
    }
  }

  private static OkHttpClient okHttp(RetryEngine engine) {
    return new OkHttpClient.Builder()
        .retryOnConnectionFailure(false)
        .addInterceptor(new AsyncRetrier(engine).interceptor())
        .build();
  }

  private static Request okRequest(String method, String url) {
    return new Request.Builder().url(url).method(method, null).build();
  }

  private static int urlConnection(RetryEngine engine, String method, String url) throws Exception {
    HttpURLConnection c = (HttpURLConnection) RetryingUrlConnections.open(new URL(url), engine);
    c.setRequestMethod(method);
    int status = c.getResponseCode();
    try (java.io.InputStream body = status < 400 ? c.getInputStream() : c.getErrorStream()) {
      return status;
    }
  }

  private static int apache4(RetryEngine engine, String method, String url) throws Exception {
    try (org.apache.http.impl.client.CloseableHttpClient client =
            RetryingCloseableHttpClient.wrap(
                org.apache.http.impl.client.HttpClients.custom(), engine);
        org.apache.http.client.methods.CloseableHttpResponse response =
            client.execute(
                org.apache.http.client.methods.RequestBuilder.create(method).setUri(url).build())) {
      return response.getStatusLine().getStatusCode();
    }
  }

  private static int apache5Classic(RetryEngine engine, String method, String url)
      throws Exception {
    try (org.apache.hc.client5.http.impl.classic.CloseableHttpClient client =
        RetryExecHandler.addTo(org.apache.hc.client5.http.impl.classic.HttpClients.custom(), engine)
            .build()) {
      return client.execute(
          new org.apache.hc.client5.http.classic.methods.HttpUriRequestBase(
              method, URI.create(url)),
          response -> response.getCode());
    }
  }

  private static int apache5Async(RetryEngine engine, String method, String url) throws Exception {
    try (org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient client =
        AsyncRetryExecHandler.addTo(
                org.apache.hc.client5.http.impl.async.HttpAsyncClients.custom(), engine)
            .build()) {
      client.start();
      return client
          .execute(
              new org.apache.hc.client5.http.async.methods.SimpleHttpRequest(
                  method, URI.create(url)),
              null)
          .get(WAIT_SECONDS, TimeUnit.SECONDS)
          .getCode();
    }
  }
}
