package dev.retryagent.it.apps;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.CloseableHttpResponse;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.hc.core5.util.Timeout;

/**
 * The clients of {@link SoakApp}, one shared instance each, as a service holds them: {@code
 * java.net.http} ({@code send}, {@code sendAsync}), OkHttp ({@code execute}, {@code enqueue}),
 * {@code HttpURLConnection} and Apache HttpClient 5 classic. Each call is a GET (60%), a POST with
 * an {@code Idempotency-Key} whose body repeats the key (25%), or a POST without one (15%), to
 * {@code BASE/ROUTE/items}; its outcome reaches {@code done} as {@code "200"} (the status) or
 * {@code "error:CLASS"} (the exception the caller got, unwrapped from the client's wrapper).
 */
final class SoakClients {
  /** The routes, by client and call style; each is a route of the soak configuration. */
  static final String JDK_SEND = "jdk-send";

  static final String JDK_ASYNC = "jdk-async";
  static final String OK_EXECUTE = "ok-execute";
  static final String OK_ENQUEUE = "ok-enqueue";
  static final String URL = "url";
  static final String APACHE = "apache";

  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private static final MediaType JSON = MediaType.parse("application/json");

  /**
   * Threads of the JDK client's executor and of OkHttp's dispatcher. Their default pools are
   * cached: they grow to the highest concurrency seen so far, late in a run as well, and that drift
   * (6 to 9 threads in a minute) hid what the soak looks for, the agent's own threads. Fixed and
   * started at once, the applications' pools are flat by construction.
   */
  private static final int POOL_THREADS = 64;

  private final String base;
  private final HttpClient jdk;
  private final OkHttpClient ok;
  private final CloseableHttpClient apache;

  SoakClients(String base) {
    this.base = base;
    this.jdk =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .executor(fixedPool("soak-jdk-client-", POOL_THREADS))
            .build();
    Dispatcher dispatcher = new Dispatcher(fixedPool("soak-okhttp-dispatcher-", POOL_THREADS));
    dispatcher.setMaxRequests(256);
    dispatcher.setMaxRequestsPerHost(256);
    this.ok =
        new OkHttpClient.Builder()
            .dispatcher(dispatcher)
            .readTimeout(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
            .build();
    this.apache =
        HttpClients.custom()
            .setConnectionManager(
                PoolingHttpClientConnectionManagerBuilder.create()
                    .setMaxConnPerRoute(256)
                    .setMaxConnTotal(256)
                    .build())
            .setDefaultRequestConfig(
                RequestConfig.custom().setResponseTimeout(Timeout.ofSeconds(30)).build())
            .build();
  }

  private static ExecutorService fixedPool(String prefix, int threads) {
    AtomicInteger n = new AtomicInteger();
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            threads,
            threads,
            0,
            TimeUnit.MILLISECONDS,
            new LinkedBlockingQueue<>(),
            r -> {
              Thread t = new Thread(r, prefix + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    pool.prestartAllCoreThreads();
    return pool;
  }

  /** What one call sends: method, idempotency key (or null) and body (or null). */
  private static final class Shape {
    final String method;
    final String key;
    final String body;

    private Shape(String method, String key, String body) {
      this.method = method;
      this.key = key;
      this.body = body;
    }

    static Shape random() {
      int r = ThreadLocalRandom.current().nextInt(100);
      if (r < 60) {
        return new Shape("GET", null, null);
      }
      String key = UUID.randomUUID().toString();
      return r < 85
          ? new Shape("POST", key, "{\"key\":\"" + key + "\"}")
          : new Shape("POST", null, "{\"key\":null}");
    }
  }

  private String url(String route) {
    return base + "/" + route + "/items";
  }

  /** One blocking call on {@code route}'s client; returns its outcome. */
  String call(String route) {
    Shape s = Shape.random();
    try {
      switch (route) {
        case JDK_SEND:
          return String.valueOf(jdk.send(jdkRequest(route, s), bodyOf()).statusCode());
        case OK_EXECUTE:
          try (Response r = ok.newCall(okRequest(route, s)).execute()) {
            r.body().string();
            return String.valueOf(r.code());
          }
        case URL:
          return urlConnection(route, s);
        case APACHE:
          return apache(route, s);
        default:
          throw new IllegalArgumentException(route);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return error(e);
    } catch (Exception e) {
      return error(e);
    }
  }

  /** One asynchronous call on {@code route}'s client; {@code done} gets its outcome. */
  void callAsync(String route, Consumer<String> done) {
    Shape s = Shape.random();
    switch (route) {
      case JDK_ASYNC:
        jdk.sendAsync(jdkRequest(route, s), bodyOf())
            .whenComplete(
                (r, e) -> done.accept(e == null ? String.valueOf(r.statusCode()) : error(e)));
        return;
      case OK_ENQUEUE:
        ok.newCall(okRequest(route, s))
            .enqueue(
                new Callback() {
                  @Override
                  public void onFailure(Call call, IOException e) {
                    done.accept(error(e));
                  }

                  @Override
                  public void onResponse(Call call, Response response) throws IOException {
                    try (response) {
                      response.body().string();
                      done.accept(String.valueOf(response.code()));
                    }
                  }
                });
        return;
      default:
        throw new IllegalArgumentException(route);
    }
  }

  private static HttpResponse.BodyHandler<String> bodyOf() {
    return HttpResponse.BodyHandlers.ofString();
  }

  private HttpRequest jdkRequest(String route, Shape s) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url(route))).timeout(TIMEOUT);
    if (s.key != null) {
      b.header("Idempotency-Key", s.key);
    }
    return b.method(
            s.method,
            s.body == null
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(s.body))
        .build();
  }

  private Request okRequest(String route, Shape s) {
    Request.Builder b = new Request.Builder().url(url(route));
    if (s.key != null) {
      b.header("Idempotency-Key", s.key);
    }
    return b.method(s.method, s.body == null ? null : RequestBody.create(JSON, s.body)).build();
  }

  private String urlConnection(String route, Shape s) throws IOException {
    HttpURLConnection c = (HttpURLConnection) URI.create(url(route)).toURL().openConnection();
    c.setConnectTimeout((int) TIMEOUT.toMillis());
    c.setReadTimeout((int) TIMEOUT.toMillis());
    c.setRequestMethod(s.method);
    if (s.key != null) {
      c.setRequestProperty("Idempotency-Key", s.key);
    }
    if (s.body != null) {
      c.setDoOutput(true);
      c.setRequestProperty("Content-Type", "application/json");
      try (OutputStream out = c.getOutputStream()) {
        out.write(s.body.getBytes(StandardCharsets.UTF_8));
      }
    }
    int status = c.getResponseCode();
    // Read to the end and close, so the connection goes back to the keep-alive cache.
    try (InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream()) {
      if (in != null) {
        in.readAllBytes();
      }
    }
    return String.valueOf(status);
  }

  @SuppressWarnings("deprecation") // execute(request) is what most 5.x code still calls
  private String apache(String route, Shape s) throws IOException {
    HttpUriRequestBase request = new HttpUriRequestBase(s.method, URI.create(url(route)));
    if (s.key != null) {
      request.addHeader("Idempotency-Key", s.key);
    }
    if (s.body != null) {
      request.setEntity(new StringEntity(s.body, ContentType.APPLICATION_JSON));
    }
    try (CloseableHttpResponse r = apache.execute(request)) {
      EntityUtils.consume(r.getEntity());
      return String.valueOf(r.getCode());
    }
  }

  /** {@code error:CLASS} of what the caller got, unwrapped from a completion wrapper. */
  private static String error(Throwable t) {
    Throwable e = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    return "error:" + e.getClass().getName();
  }
}
