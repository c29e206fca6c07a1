package dev.retryagent.guarantees;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.apache4.RetryingCloseableHttpClient;
import dev.retryagent.apache5.AsyncRetryExecHandler;
import dev.retryagent.apache5.RetryExecHandler;
import dev.retryagent.config.PathMask;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.internal.observe.Sanitizer;
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
import java.util.concurrent.CopyOnWriteArrayList;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A password with an unencoded '/' and then a '?' or '#' ({@code http://127.0.0.1:PORT/ca?nary@h/x}
 * as {@code https://u:12/ca?nary@h/x}): each client connects to the host and port before the first
 * '/', sends the path {@code /ca}, and the URL's last '@' is in the query or fragment. A reader
 * that takes that '@' for the end of the user-info reads {@code PORT/ca?nary} as the password, so
 * the path the agent writes for such a request, whichever client sent it through a real loopback
 * server, is {@code /<redacted>}; routes still see {@code /ca}. Each client's {@code path()} is
 * without its query, and the agent wrote {@code /ca} before.
 */
class PasswordPastThePathTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private RetryEngine engine;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    server.enqueue(status(503), ok("done"));
    engine =
        TestEngines.engine(time, Mode.ENFORCE, r -> r, CircuitBreakerPolicy.defaults(), events);
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  @ParameterizedTest
  @ValueSource(strings = {"/ca?nary@h.example/x", "/ca#nary@h.example/x"})
  void theJdkClient(String rest) throws Exception {
    HttpClient client =
        RetryingHttpClient.wrap(
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(), engine);
    HttpResponse<String> response =
        client.send(
            HttpRequest.newBuilder(URI.create(server.url(rest))).build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).isEqualTo(200);
    assertNoPartOfThePasswordWritten();
  }

  @ParameterizedTest
  @ValueSource(strings = {"/ca?nary@h.example/x", "/ca#nary@h.example/x"})
  void okHttp(String rest) throws Exception {
    OkHttpClient client =
        new OkHttpClient.Builder()
            .retryOnConnectionFailure(false)
            .addInterceptor(new AsyncRetrier(engine).interceptor())
            .build();
    try (Response response =
        client.newCall(new Request.Builder().url(server.url(rest)).build()).execute()) {
      assertThat(response.code()).isEqualTo(200);
    } finally {
      client.connectionPool().evictAll();
    }
    assertNoPartOfThePasswordWritten();
  }

  @ParameterizedTest
  @ValueSource(strings = {"/ca?nary@h.example/x", "/ca#nary@h.example/x"})
  void httpUrlConnection(String rest) throws Exception {
    HttpURLConnection c =
        (HttpURLConnection) RetryingUrlConnections.open(new URL(server.url(rest)), engine);

    assertThat(c.getResponseCode()).isEqualTo(200);
    c.getInputStream().close();
    assertNoPartOfThePasswordWritten();
  }

  @ParameterizedTest
  @ValueSource(strings = {"/ca?nary@h.example/x", "/ca#nary@h.example/x"})
  void apacheHttpClient4(String rest) throws Exception {
    try (org.apache.http.impl.client.CloseableHttpClient client =
            RetryingCloseableHttpClient.wrap(
                org.apache.http.impl.client.HttpClients.custom(), engine);
        org.apache.http.client.methods.CloseableHttpResponse response =
            client.execute(new org.apache.http.client.methods.HttpGet(server.url(rest)))) {
      assertThat(response.getStatusLine().getStatusCode()).isEqualTo(200);
    }
    assertNoPartOfThePasswordWritten();
  }

  /** HttpClient 5 keeps no fragment (a request made from a URI drops it): '?' only. */
  @ParameterizedTest
  @ValueSource(strings = {"/ca?nary@h.example/x"})
  void apacheHttpClient5Classic(String rest) throws Exception {
    try (org.apache.hc.client5.http.impl.classic.CloseableHttpClient client =
        RetryExecHandler.addTo(org.apache.hc.client5.http.impl.classic.HttpClients.custom(), engine)
            .build()) {
      int status =
          client.execute(
              new org.apache.hc.client5.http.classic.methods.HttpGet(server.url(rest)),
              response -> response.getCode());
      assertThat(status).isEqualTo(200);
    }
    assertNoPartOfThePasswordWritten();
  }

  /** HttpClient 5's async client, as its classic one: '?' only. */
  @ParameterizedTest
  @ValueSource(strings = {"/ca?nary@h.example/x"})
  void apacheHttpClient5Async(String rest) throws Exception {
    try (org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient client =
        AsyncRetryExecHandler.addTo(
                org.apache.hc.client5.http.impl.async.HttpAsyncClients.custom(), engine)
            .build()) {
      client.start();
      org.apache.hc.client5.http.async.methods.SimpleHttpResponse response =
          client
              .execute(
                  org.apache.hc.client5.http.async.methods.SimpleRequestBuilder.get(
                          server.url(rest))
                      .build(),
                  null)
              .get(30, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(response.getCode()).isEqualTo(200);
    }
    assertNoPartOfThePasswordWritten();
  }

  /** One retry (the 503), its path as every writer writes it; routes still see /ca. */
  private void assertNoPartOfThePasswordWritten() {
    assertThat(server.requests()).extracting(r -> r.path).allMatch(p -> p.startsWith("/ca"));
    assertThat(events).filteredOn(e -> e.type() == RetryEvent.Type.RETRY).hasSize(1);
    for (RetryEvent e : events) {
      assertThat(e.path()).as("what routes match").isEqualTo("/ca");
      assertThat(Sanitizer.path(e.path(), PathMask.NONE, e.atPastPath()))
          .as("log lines and dead letters")
          .isEqualTo("/<redacted>");
      assertThat(e.toString())
          .as("RetryEvent.toString")
          .contains(":" + server.port() + "/<redacted> ")
          .doesNotContain("/ca");
    }
  }
}
