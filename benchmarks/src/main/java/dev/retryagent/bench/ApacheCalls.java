package dev.retryagent.bench;

import dev.retryagent.apache4.RetryingCloseableHttpClient;
import dev.retryagent.apache5.AsyncRetryExecHandler;
import dev.retryagent.apache5.RetryExecHandler;
import dev.retryagent.engine.RetryEngine;
import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.hc.client5.http.async.methods.SimpleRequestBuilder;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.core5.http.io.entity.EntityUtils;

/**
 * Loopback GETs through Apache HttpClient 4.5, 5.x classic and 5.x async, each plain and with the
 * retries wired in by hand ({@link RetryingCloseableHttpClient#wrap}, {@link
 * RetryExecHandler#addTo}, {@link AsyncRetryExecHandler#addTo}), for {@link AllocSitesRun} and
 * {@link LoopbackAllocRun}. Plain is the client as {@code createDefault()} builds it: the builder
 * {@code addTo} and {@code wrap} are given is the same default one, so the two differ only by the
 * retry layer (and its governing of HttpClient's own retry element).
 *
 * <p>A new request object per call in every variant: HttpClient's request objects are mutable, and
 * an application makes one per call.
 */
final class ApacheCalls implements Closeable {
  /** The variants' client names, as prefixes of the variant names ("apache4, plain"). */
  static final String[] CLIENTS = {"apache4", "apache5", "apache5-async"};

  private final List<Closeable> clients = new ArrayList<>();
  private final String url;

  private final org.apache.http.impl.client.CloseableHttpClient plain4;
  private final org.apache.http.impl.client.CloseableHttpClient wrapped4;
  private final org.apache.hc.client5.http.impl.classic.CloseableHttpClient plain5;
  private final org.apache.hc.client5.http.impl.classic.CloseableHttpClient wrapped5;
  private final CloseableHttpAsyncClient plainAsync;
  private final CloseableHttpAsyncClient wrappedAsync;

  /**
   * Builds the clients and checks their wiring: the probe's 503 comes back to the plain 4.5 client
   * and is retried to a 200 by every wrapped one. (Plain 5.x retries a 503 of a GET itself, after a
   * second: its probe would prove nothing.)
   */
  ApacheCalls(LoopbackServer server, RetryEngine engine) throws Exception {
    url = server.url("/v1/items");
    plain4 = keep(org.apache.http.impl.client.HttpClients.createDefault());
    wrapped4 =
        keep(
            RetryingCloseableHttpClient.wrap(
                org.apache.http.impl.client.HttpClients.custom(), engine));
    plain5 = keep(org.apache.hc.client5.http.impl.classic.HttpClients.createDefault());
    wrapped5 =
        keep(
            RetryExecHandler.addTo(
                    org.apache.hc.client5.http.impl.classic.HttpClients.custom(), engine)
                .build());
    plainAsync = keep(HttpAsyncClients.createDefault());
    wrappedAsync = keep(AsyncRetryExecHandler.addTo(HttpAsyncClients.custom(), engine).build());
    plainAsync.start();
    wrappedAsync.start();
    LoopbackCallBenchmark.expectStatus(
        503, status4(plain4, server.url("/probe/apache4-plain")), "Apache 4.5 without retries");
    LoopbackCallBenchmark.expectStatus(
        200,
        status4(wrapped4, server.url("/probe/apache4-wrapped")),
        "RetryingCloseableHttpClient");
    LoopbackCallBenchmark.expectStatus(
        200, status5(wrapped5, server.url("/probe/apache5-wrapped")), "RetryExecHandler.addTo");
    LoopbackCallBenchmark.expectStatus(
        200,
        wrappedAsync
            .execute(SimpleRequestBuilder.get(server.url("/probe/async-wrapped")).build(), null)
            .get()
            .getCode(),
        "AsyncRetryExecHandler.addTo");
  }

  /** Plain, wrapped, plain again for each client, into {@code variants}. */
  void addTo(Map<String, Callable<Object>> variants, boolean again) {
    variants.put("apache4, plain", () -> get4(plain4));
    variants.put("apache4, RetryingCloseableHttpClient", () -> get4(wrapped4));
    if (again) {
      variants.put("apache4, plain again", () -> get4(plain4));
    }
    variants.put("apache5, plain", () -> get5(plain5));
    variants.put("apache5, RetryExecHandler", () -> get5(wrapped5));
    if (again) {
      variants.put("apache5, plain again", () -> get5(plain5));
    }
    variants.put("apache5-async, plain", () -> getAsync(plainAsync));
    variants.put("apache5-async, AsyncRetryExecHandler", () -> getAsync(wrappedAsync));
    if (again) {
      variants.put("apache5-async, plain again", () -> getAsync(plainAsync));
    }
  }

  private String get4(org.apache.http.impl.client.CloseableHttpClient client) throws IOException {
    return client.execute(
        new org.apache.http.client.methods.HttpGet(url),
        r -> org.apache.http.util.EntityUtils.toString(r.getEntity()));
  }

  private String get5(org.apache.hc.client5.http.impl.classic.CloseableHttpClient client)
      throws IOException {
    return client.execute(
        new org.apache.hc.client5.http.classic.methods.HttpGet(url),
        r -> EntityUtils.toString(r.getEntity()));
  }

  private String getAsync(CloseableHttpAsyncClient client) throws Exception {
    return client.execute(SimpleRequestBuilder.get(url).build(), null).get().getBodyText();
  }

  private static int status4(org.apache.http.impl.client.CloseableHttpClient client, String url)
      throws IOException {
    return client.execute(
        new org.apache.http.client.methods.HttpGet(url),
        r -> {
          org.apache.http.util.EntityUtils.consume(r.getEntity());
          return r.getStatusLine().getStatusCode();
        });
  }

  private static int status5(
      org.apache.hc.client5.http.impl.classic.CloseableHttpClient client, String url)
      throws IOException {
    return client.execute(
        new org.apache.hc.client5.http.classic.methods.HttpGet(url),
        r -> {
          EntityUtils.consume(r.getEntity());
          return r.getCode();
        });
  }

  private <C extends Closeable> C keep(C client) {
    clients.add(client);
    return client;
  }

  @Override
  public void close() throws IOException {
    for (Closeable c : clients) {
      c.close();
    }
  }
}
