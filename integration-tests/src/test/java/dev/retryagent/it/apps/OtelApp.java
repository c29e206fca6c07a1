package dev.retryagent.it.apps;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * An application that uses the OpenTelemetry API itself, run with the OpenTelemetry Java agent.
 *
 * <p>Arguments: {@code BASE_URL SCENARIO...}, each {@code CLIENT-PARENT}: CLIENT one of {@code
 * send} ({@code HttpClient.send}), {@code async} ({@code sendAsync}, 2 arguments), {@code okexec}
 * ({@code Call.execute}), {@code okenq} ({@code Call.enqueue}), {@code url} ({@code
 * HttpURLConnection} GET; {@code urls}: the same to the base URL in the system property {@code
 * otelit.https}), {@code urlput} and {@code urlpost} ({@code HttpURLConnection} PUT and POST of the
 * body {@code body of SCENARIO}, in fixed-length streaming mode), {@code ap5} and {@code ap4} (a
 * GET through an Apache HttpClient 5.x and 4.5 client with a response handler; {@code ap5post}: a
 * POST of the body {@code body of SCENARIO}; {@code ap5async}: a GET through HttpClient 5.x's async
 * client, {@code HttpAsyncClients.createDefault()}, with a {@code FutureCallback}); PARENT {@code
 * root} (no span current) or {@code app} (inside a span of the application's own tracer). One call
 * each, in order, to {@code BASE_URL/SCENARIO}. Prints {@code SCENARIO.status=}, for {@code app}
 * {@code SCENARIO.appSpan=} and {@code SCENARIO.trace=}, and for the asynchronous ones {@code
 * SCENARIO.callbackSpan=} (the span current in the application's stage or callback: all zeros for
 * none).
 */
public final class OtelApp {
  private OtelApp() {}

  public static void main(String[] args) throws Exception {
    String base = args[0];
    Tracer tracer = GlobalOpenTelemetry.getTracer("otel-it-app");
    HttpClient jdk = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    OkHttpClient ok = new OkHttpClient();
    Apache apache = new Apache();
    for (int i = 1; i < args.length; i++) {
      String scenario = args[i];
      String url = base + "/" + scenario;
      Span span = null;
      Scope scope = null;
      if (scenario.endsWith("-app")) {
        span = tracer.spanBuilder("app " + scenario).startSpan();
        scope = span.makeCurrent();
        System.out.println(scenario + ".appSpan=" + span.getSpanContext().getSpanId());
        System.out.println(scenario + ".trace=" + span.getSpanContext().getTraceId());
      }
      try {
        System.out.println(scenario + ".status=" + call(scenario, url, jdk, ok, apache));
      } finally {
        if (scope != null) {
          scope.close();
          span.end();
        }
      }
    }
    // OkHttp's dispatcher threads are not daemons: without this the JVM (and the OpenTelemetry
    // agent's flush at exit) would wait for them to idle out, a minute.
    ok.dispatcher().executorService().shutdown();
    ok.connectionPool().evictAll();
    if (apache.async != null) {
      apache.async.close();
    }
  }

  private static int call(
      String scenario, String url, HttpClient jdk, OkHttpClient ok, Apache apache)
      throws Exception {
    String client = scenario.substring(0, scenario.indexOf('-'));
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build();
    switch (client) {
      case "send":
        return jdk.send(request, HttpResponse.BodyHandlers.ofString()).statusCode();
      case "async":
        return jdk.sendAsync(request, HttpResponse.BodyHandlers.ofString())
            .thenApply(
                r -> {
                  callbackSpan(scenario);
                  return r.statusCode();
                })
            .get(20, TimeUnit.SECONDS);
      case "okexec":
        try (Response r = ok.newCall(new Request.Builder().url(url).build()).execute()) {
          return r.code();
        }
      case "okenq":
        CompletableFuture<Integer> done = new CompletableFuture<>();
        ok.newCall(new Request.Builder().url(url).build())
            .enqueue(
                new Callback() {
                  @Override
                  public void onFailure(Call call, IOException e) {
                    done.completeExceptionally(e);
                  }

                  @Override
                  public void onResponse(Call call, Response r) {
                    try (r) {
                      callbackSpan(scenario);
                      done.complete(r.code());
                    }
                  }
                });
        return done.get(20, TimeUnit.SECONDS);
      case "url":
        return viaUrlConnection(url, "GET", null);
      case "urls":
        return viaUrlConnection(System.getProperty("otelit.https") + "/" + scenario, "GET", null);
      case "urlput":
        return viaUrlConnection(url, "PUT", "body of " + scenario);
      case "urlpost":
        return viaUrlConnection(url, "POST", "body of " + scenario);
      case "ap5":
        return apache.five.execute(
            new org.apache.hc.client5.http.classic.methods.HttpGet(url), Apache::code5);
      case "ap5post":
        org.apache.hc.client5.http.classic.methods.HttpPost post =
            new org.apache.hc.client5.http.classic.methods.HttpPost(url);
        post.setEntity(new org.apache.hc.core5.http.io.entity.StringEntity("body of " + scenario));
        return apache.five.execute(post, Apache::code5);
      case "ap5async":
        CompletableFuture<Integer> got = new CompletableFuture<>();
        apache
            .async()
            .execute(
                org.apache.hc.client5.http.async.methods.SimpleRequestBuilder.get(url).build(),
                new org.apache.hc.core5.concurrent.FutureCallback<
                    org.apache.hc.client5.http.async.methods.SimpleHttpResponse>() {
                  @Override
                  public void completed(
                      org.apache.hc.client5.http.async.methods.SimpleHttpResponse r) {
                    callbackSpan(scenario);
                    got.complete(r.getCode());
                  }

                  @Override
                  public void failed(Exception e) {
                    got.completeExceptionally(e);
                  }

                  @Override
                  public void cancelled() {
                    got.cancel(false);
                  }
                });
        return got.get(20, TimeUnit.SECONDS);
      case "ap4":
        return apache.four.execute(
            new org.apache.http.client.methods.HttpGet(url),
            r -> {
              org.apache.http.util.EntityUtils.consume(r.getEntity());
              return r.getStatusLine().getStatusCode();
            });
      default:
        throw new IllegalArgumentException(scenario);
    }
  }

  /** One {@code HttpURLConnection} call as an application writes it; the response is read. */
  private static int viaUrlConnection(String url, String method, String body) throws IOException {
    HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
    c.setConnectTimeout(20_000);
    c.setReadTimeout(20_000);
    c.setRequestMethod(method);
    if (body != null) {
      byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
      c.setDoOutput(true);
      c.setFixedLengthStreamingMode(bytes.length);
      try (OutputStream out = c.getOutputStream()) {
        out.write(bytes);
      }
    }
    int status = c.getResponseCode();
    try (InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream()) {
      if (in != null) {
        in.readAllBytes();
      }
    }
    return status;
  }

  /** One client of each Apache HttpClient line, as an application builds them. */
  private static final class Apache {
    final org.apache.hc.client5.http.impl.classic.CloseableHttpClient five =
        org.apache.hc.client5.http.impl.classic.HttpClients.custom().build();
    final org.apache.http.impl.client.CloseableHttpClient four =
        org.apache.http.impl.client.HttpClients.custom().build();

    private org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient async;

    /** The async client ({@code createDefault()}), made and started on first use. */
    org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient async() {
      if (async == null) {
        async = org.apache.hc.client5.http.impl.async.HttpAsyncClients.createDefault();
        async.start();
      }
      return async;
    }

    static int code5(org.apache.hc.core5.http.ClassicHttpResponse r) throws IOException {
      org.apache.hc.core5.http.io.entity.EntityUtils.consume(r.getEntity());
      return r.getCode();
    }
  }

  private static void callbackSpan(String scenario) {
    System.out.println(scenario + ".callbackSpan=" + Span.current().getSpanContext().getSpanId());
  }
}
