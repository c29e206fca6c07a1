package dev.retryagent.it.apps;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse;
import org.apache.hc.client5.http.async.methods.SimpleRequestBuilder;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.core5.concurrent.FutureCallback;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http2.HttpVersionPolicy;
import org.apache.hc.core5.io.CloseMode;

/**
 * An application on Apache HttpClient 5.x's async client ({@code HttpAsyncClients.createDefault()};
 * with {@code -Dapp.h2=true} {@code HttpAsyncClients.custom()} with {@code FORCE_HTTP_2}, which
 * speaks HTTP/2 in clear text with prior knowledge; with {@code -Dapp.h2only=true} the HTTP/2-only
 * client of {@code HttpAsyncClients.createHttp2Default()}, {@code H2AsyncClientBuilder}'s, which
 * speaks it the same way), a {@code FutureCallback} per call. No retry code.
 *
 * <p>Arguments: {@code URL...}; for each, in turn, a {@code GET} (a URL ending in {@code /post}: a
 * {@code POST} of {@code {}}), whose outcome it prints as {@code N.status=}, {@code N.body=} or
 * {@code N.error=}, the response's protocol as {@code N.version=} and the callback's thread as
 * {@code N.thread=} (N from 1); then {@code calls.done=1}. With no arguments it stays up (for tests
 * that act on a running JVM, a reload): it prints {@code ready=PID} once its client is started,
 * then calls each URL it reads on stdin, one a line, until the end of input or {@code exit}.
 */
public final class ApacheAsyncApp {
  private ApacheAsyncApp() {}

  public static void main(String[] args) throws Exception {
    try (CloseableHttpAsyncClient client = client()) {
      client.start();
      if (args.length == 0) {
        System.out.println("ready=" + ProcessHandle.current().pid());
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int n = 0;
        for (String line = in.readLine(); line != null && !line.equals("exit"); ) {
          call(client, ++n, line.trim());
          line = in.readLine();
        }
      }
      for (int i = 0; i < args.length; i++) {
        call(client, i + 1, args[i]);
      }
      System.out.println("calls.done=1");
      client.close(CloseMode.GRACEFUL);
    }
  }

  private static CloseableHttpAsyncClient client() {
    if (Boolean.getBoolean("app.h2only")) {
      return HttpAsyncClients.createHttp2Default();
    }
    return Boolean.getBoolean("app.h2")
        ? HttpAsyncClients.custom().setVersionPolicy(HttpVersionPolicy.FORCE_HTTP_2).build()
        : HttpAsyncClients.createDefault();
  }

  private static void call(CloseableHttpAsyncClient client, int n, String url) throws Exception {
    SimpleRequestBuilder b =
        url.endsWith("/post")
            ? SimpleRequestBuilder.post(url).setBody("{}", ContentType.APPLICATION_JSON)
            : SimpleRequestBuilder.get(url);
    CompletableFuture<String> outcome = new CompletableFuture<>();
    client.execute(
        b.build(),
        new FutureCallback<SimpleHttpResponse>() {
          @Override
          public void completed(SimpleHttpResponse r) {
            outcome.complete(
                n
                    + ".status="
                    + r.getCode()
                    + "\n"
                    + n
                    + ".body="
                    + r.getBodyText()
                    + "\n"
                    + n
                    + ".version="
                    + r.getVersion()
                    + thread());
          }

          @Override
          public void failed(Exception e) {
            outcome.complete(n + ".error=" + e.getClass().getName() + thread());
          }

          @Override
          public void cancelled() {
            outcome.complete(n + ".error=cancelled" + thread());
          }

          private String thread() {
            return "\n"
                + n
                + ".thread="
                + Thread.currentThread().getName().replaceAll("[0-9]+", "N");
          }
        });
    System.out.println(outcome.get(60, TimeUnit.SECONDS));
  }
}
