package dev.retryagent.guarantees;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.apache4.RetryingCloseableHttpClient;
import dev.retryagent.apache5.AsyncRetryExecHandler;
import dev.retryagent.apache5.RetryExecHandler;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.okhttp.AsyncRetrier;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import dev.retryagent.urlconnection.RetryingUrlConnections;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A 503 with two {@code Retry-After} lines, 2 and 7 seconds, in either order, then a 200:
 * java.net.http and Apache HttpClient read the first line, OkHttp and HttpURLConnection the last,
 * and each adapter took its client's, so one response was waited for 2 s or 7 s depending on the
 * client. Every client now waits the longest, 7 s, through a real loopback server.
 */
class RetryAfterLinesTest {
  private static final long SEVEN_SECONDS = TimeUnit.SECONDS.toNanos(7);

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private RetryEngine engine;

  private void start(String order) throws IOException {
    server = new ScriptedHttpServer();
    server.enqueue(status(503).headerLines("Retry-After", order.split(",")), ok("done"));
    engine =
        TestEngines.engine(time, Mode.ENFORCE, r -> r, CircuitBreakerPolicy.defaults(), events);
  }

  @BeforeEach
  void clear() {
    events.clear();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  @ParameterizedTest
  @ValueSource(strings = {"2,7", "7,2"})
  void theJdkClientSend(String order) throws Exception {
    start(order);
    HttpResponse<String> response =
        jdkClient()
            .send(
                HttpRequest.newBuilder(URI.create(server.url("/x"))).build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).isEqualTo(200);
    assertWaitedTheLongest();
  }

  @ParameterizedTest
  @ValueSource(strings = {"2,7", "7,2"})
  void theJdkClientSendAsync(String order) throws Exception {
    start(order);
    HttpResponse<String> response =
        jdkClient()
            .sendAsync(
                HttpRequest.newBuilder(URI.create(server.url("/x"))).build(),
                HttpResponse.BodyHandlers.ofString())
            .get(30, TimeUnit.SECONDS);
    assertThat(response.statusCode()).isEqualTo(200);
    assertWaitedTheLongest();
  }

  private HttpClient jdkClient() {
    return RetryingHttpClient.wrap(
        HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(), engine);
  }

  @ParameterizedTest
  @ValueSource(strings = {"2,7", "7,2"})
  void okHttpExecute(String order) throws Exception {
    start(order);
    OkHttpClient client = okHttp();
    try (Response response =
        client.newCall(new Request.Builder().url(server.url("/x")).build()).execute()) {
      assertThat(response.code()).isEqualTo(200);
    } finally {
      client.connectionPool().evictAll();
    }
    assertWaitedTheLongest();
  }

  @ParameterizedTest
  @ValueSource(strings = {"2,7", "7,2"})
  void okHttpEnqueue(String order) throws Exception {
    start(order);
    OkHttpClient client = okHttp();
    CompletableFuture<Integer> code = new CompletableFuture<>();
    client
        .newCall(new Request.Builder().url(server.url("/x")).build())
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
      assertThat(code.get(30, TimeUnit.SECONDS)).isEqualTo(200);
    } finally {
      client.connectionPool().evictAll();
    }
    assertWaitedTheLongest();
  }

  private OkHttpClient okHttp() {
    return new OkHttpClient.Builder()
        .retryOnConnectionFailure(false)
        .addInterceptor(new AsyncRetrier(engine).interceptor())
        .build();
  }

  @ParameterizedTest
  @ValueSource(strings = {"2,7", "7,2"})
  void httpUrlConnection(String order) throws Exception {
    start(order);
    HttpURLConnection c =
        (HttpURLConnection) RetryingUrlConnections.open(new URL(server.url("/x")), engine);
    assertThat(c.getResponseCode()).isEqualTo(200);
    c.getInputStream().close();
    assertWaitedTheLongest();
  }

  @ParameterizedTest
  @ValueSource(strings = {"2,7", "7,2"})
  void apacheHttpClient4(String order) throws Exception {
    start(order);
    try (org.apache.http.impl.client.CloseableHttpClient client =
            RetryingCloseableHttpClient.wrap(
                org.apache.http.impl.client.HttpClients.custom(), engine);
        org.apache.http.client.methods.CloseableHttpResponse response =
            client.execute(new org.apache.http.client.methods.HttpGet(server.url("/x")))) {
      assertThat(response.getStatusLine().getStatusCode()).isEqualTo(200);
    }
    assertWaitedTheLongest();
  }

  @ParameterizedTest
  @ValueSource(strings = {"2,7", "7,2"})
  void apacheHttpClient5Classic(String order) throws Exception {
    start(order);
    try (org.apache.hc.client5.http.impl.classic.CloseableHttpClient client =
        RetryExecHandler.addTo(org.apache.hc.client5.http.impl.classic.HttpClients.custom(), engine)
            .build()) {
      int status =
          client.execute(
              new org.apache.hc.client5.http.classic.methods.HttpGet(server.url("/x")),
              response -> response.getCode());
      assertThat(status).isEqualTo(200);
    }
    assertWaitedTheLongest();
  }

  @ParameterizedTest
  @ValueSource(strings = {"2,7", "7,2"})
  void apacheHttpClient5Async(String order) throws Exception {
    start(order);
    try (org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient client =
        AsyncRetryExecHandler.addTo(
                org.apache.hc.client5.http.impl.async.HttpAsyncClients.custom(), engine)
            .build()) {
      client.start();
      org.apache.hc.client5.http.async.methods.SimpleHttpResponse response =
          client
              .execute(
                  new org.apache.hc.client5.http.async.methods.SimpleHttpRequest(
                      "GET", URI.create(server.url("/x"))),
                  null)
              .get(30, TimeUnit.SECONDS);
      assertThat(response.getCode()).isEqualTo(200);
    }
    assertWaitedTheLongest();
  }

  /** One retry, after 7 s whichever line came first. */
  private void assertWaitedTheLongest() {
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.RETRY)
        .extracting(RetryEvent::delayNanos)
        .containsExactly(SEVEN_SECONDS);
  }
}
