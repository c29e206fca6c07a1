package dev.retryagent.guarantees;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.retryagent.apache4.RetryingCloseableHttpClient;
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
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The final response of a retried call reaches the application as it arrives, as without the agent:
 * its body is the client's own stream, never read ahead by us (an LLM's server-sent events must
 * come as they are sent). For each client: a 503, then a 200 whose body's first event comes at once
 * and the rest only once the application has read that first event; a retry that buffered the final
 * body would never return it.
 */
class StreamedFinalResponseTest {
  enum Client {
    JDK_SEND,
    JDK_SEND_ASYNC,
    OKHTTP_EXECUTE,
    OKHTTP_ENQUEUE,
    APACHE_4,
    APACHE_5,
    URL_CONNECTION
  }

  private static final String FIRST = "data: one\n\n";
  private static final String REST = "data: two\n\n";

  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final List<Closeable> toClose = new CopyOnWriteArrayList<>();
  private ScriptedHttpServer server;
  private RetryEngine engine;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    engine =
        TestEngines.engine(
            new FakeTime(), Mode.ENFORCE, b -> b, CircuitBreakerPolicy.defaults(), events);
  }

  @AfterEach
  void stop() throws IOException {
    for (Closeable c : toClose) {
      c.close();
    }
    server.close();
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void theFinalResponseAfterARetryStreamsAsItArrives(Client client) throws Exception {
    CountDownLatch firstRead = new CountDownLatch(1);
    server.enqueue(
        status(503),
        ok(FIRST + REST)
            .header("Content-Type", "text/event-stream")
            .heldAfter(FIRST.length(), firstRead));
    try {
      InputStream body =
          assertTimeoutPreemptively(Duration.ofSeconds(10), () -> open(client, "/v1/stream"));
      toClose.add(body);
      byte[] first =
          assertTimeoutPreemptively(
              Duration.ofSeconds(10), () -> readExactly(body, FIRST.length()));
      assertThat(new String(first, StandardCharsets.UTF_8)).isEqualTo(FIRST);
      firstRead.countDown();
      assertThat(new String(body.readAllBytes(), StandardCharsets.UTF_8)).isEqualTo(REST);
    } finally {
      firstRead.countDown();
    }
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(events).extracting(RetryEvent::type).contains(RetryEvent.Type.RETRY);
  }

  /**
   * {@code n} bytes of {@code in}, never asking for more: {@code InputStream.readNBytes} ends with
   * a read of length 0, which okio's stream (and others) answer only once more bytes came.
   */
  private static byte[] readExactly(InputStream in, int n) throws IOException {
    byte[] b = new byte[n];
    for (int off = 0; off < n; ) {
      int got = in.read(b, off, n - off);
      if (got < 0) {
        throw new java.io.EOFException("after " + off + " bytes");
      }
      off += got;
    }
    return b;
  }

  /** The final response's body stream, as the application opens it through {@code client}. */
  private InputStream open(Client client, String path) throws Exception {
    String url = server.url(path);
    switch (client) {
      case JDK_SEND:
      case JDK_SEND_ASYNC:
        {
          HttpClient jdk =
              RetryingHttpClient.wrap(
                  HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(), engine);
          HttpRequest request = HttpRequest.newBuilder(URI.create(url)).build();
          HttpResponse<InputStream> r =
              client == Client.JDK_SEND
                  ? jdk.send(request, HttpResponse.BodyHandlers.ofInputStream())
                  : jdk.sendAsync(request, HttpResponse.BodyHandlers.ofInputStream())
                      .get(10, TimeUnit.SECONDS);
          assertThat(r.statusCode()).isEqualTo(200);
          return r.body();
        }
      case OKHTTP_EXECUTE:
      case OKHTTP_ENQUEUE:
        {
          AsyncRetrier retrier = new AsyncRetrier(engine);
          OkHttpClient ok =
              new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
          toClose.add(() -> ok.dispatcher().executorService().shutdown());
          Call call = ok.newCall(new Request.Builder().url(url).build());
          Response r;
          if (client == Client.OKHTTP_EXECUTE) {
            r = call.execute();
          } else {
            CompletableFuture<Response> f = new CompletableFuture<>();
            retrier.enqueue(
                call,
                new Callback() {
                  @Override
                  public void onFailure(Call c, IOException e) {
                    f.completeExceptionally(e);
                  }

                  @Override
                  public void onResponse(Call c, Response response) {
                    f.complete(response);
                  }
                });
            r = f.get(10, TimeUnit.SECONDS);
          }
          assertThat(r.code()).isEqualTo(200);
          return r.body().byteStream();
        }
      case APACHE_4:
        {
          org.apache.http.impl.client.CloseableHttpClient apache =
              RetryingCloseableHttpClient.wrap(
                  org.apache.http.impl.client.HttpClients.custom(), engine);
          toClose.add(apache);
          org.apache.http.client.methods.CloseableHttpResponse r =
              apache.execute(new org.apache.http.client.methods.HttpGet(url));
          assertThat(r.getStatusLine().getStatusCode()).isEqualTo(200);
          return r.getEntity().getContent();
        }
      case APACHE_5:
        {
          org.apache.hc.client5.http.impl.classic.CloseableHttpClient apache =
              RetryExecHandler.addTo(
                      org.apache.hc.client5.http.impl.classic.HttpClients.custom(), engine)
                  .build();
          toClose.add(apache);
          org.apache.hc.client5.http.impl.classic.CloseableHttpResponse r =
              apache.execute(new org.apache.hc.client5.http.classic.methods.HttpGet(url));
          assertThat(r.getCode()).isEqualTo(200);
          return r.getEntity().getContent();
        }
      default:
        {
          java.net.HttpURLConnection c =
              (java.net.HttpURLConnection) RetryingUrlConnections.open(new URL(url), engine);
          assertThat(c.getResponseCode()).isEqualTo(200);
          return c.getInputStream();
        }
    }
  }
}
