package dev.retryagent.it.apps;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;

/**
 * Makes HTTP/2 calls in clear text as an ordinary application would: java.net.http with {@code
 * Version.HTTP_2} (which reaches an {@code http:} URL by the HTTP/1.1 upgrade to h2c), or OkHttp
 * with {@code Protocol.H2_PRIOR_KNOWLEDGE}. One client for all calls.
 *
 * <p>Arguments: {@code jdk|ok CALL...}, each call {@code METHOD|URL} (a POST sends a small body, no
 * idempotency key). For call number {@code i} (from 1) it prints {@code i.status=} and {@code
 * i.protocol=}, or {@code i.error=} (the exception's class and message).
 */
public final class H2App {
  private H2App() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2 || !(args[0].equals("jdk") || args[0].equals("ok"))) {
      System.err.println("usage: jdk|ok METHOD|URL...");
      System.exit(2);
    }
    // Each client's calls in a class of its own: a run of java.net.http has no OkHttp to load.
    Calls calls = args[0].equals("jdk") ? new JdkCalls() : new OkCalls();
    for (int i = 1; i < args.length; i++) {
      String[] call = args[i].split("\\|", 2);
      String n = String.valueOf(i);
      try {
        String[] outcome = calls.call(call[0], call[1]);
        System.out.println(n + ".status=" + outcome[0]);
        System.out.println(n + ".protocol=" + outcome[1]);
      } catch (IOException e) {
        System.out.println(n + ".error=" + e.getClass().getName() + ": " + e.getMessage());
      }
    }
    calls.close();
  }

  private interface Calls {
    /** The status and the protocol of the response. */
    String[] call(String method, String url) throws IOException, InterruptedException;

    void close();
  }

  private static final class JdkCalls implements Calls {
    private final HttpClient client =
        HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(10))
            .version(HttpClient.Version.HTTP_2)
            .build();

    @Override
    public String[] call(String method, String url) throws IOException, InterruptedException {
      HttpRequest request =
          HttpRequest.newBuilder(URI.create(url))
              .timeout(Duration.ofSeconds(20))
              .method(
                  method,
                  method.equals("POST")
                      ? HttpRequest.BodyPublishers.ofString("{}")
                      : HttpRequest.BodyPublishers.noBody())
              .build();
      HttpResponse<String> r = client.send(request, HttpResponse.BodyHandlers.ofString());
      return new String[] {String.valueOf(r.statusCode()), String.valueOf(r.version())};
    }

    @Override
    public void close() {}
  }

  private static final class OkCalls implements Calls {
    private static final MediaType JSON = MediaType.parse("application/json");
    private final OkHttpClient client =
        new OkHttpClient.Builder()
            .protocols(List.of(Protocol.H2_PRIOR_KNOWLEDGE))
            .readTimeout(20, TimeUnit.SECONDS)
            .build();

    @Override
    public String[] call(String method, String url) throws IOException {
      Request request =
          new Request.Builder()
              .url(url)
              .method(method, method.equals("POST") ? RequestBody.create(JSON, "{}") : null)
              .build();
      try (Response r = client.newCall(request).execute()) {
        r.body().string();
        return new String[] {String.valueOf(r.code()), String.valueOf(r.protocol())};
      }
    }

    @Override
    public void close() {
      client.dispatcher().executorService().shutdown();
      client.connectionPool().evictAll();
    }
  }
}
