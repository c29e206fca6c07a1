package dev.retryagent.guarantees;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.apache4.RetryingCloseableHttpClient;
import dev.retryagent.apache5.AsyncRetryExecHandler;
import dev.retryagent.apache5.RetryExecHandler;
import dev.retryagent.engine.GiveUpReason;
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
import java.net.ProtocolException;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A request sent as {@code get}, not {@code GET}: method names are case-sensitive (RFC 9110 section
 * 9.1), and a server may treat {@code get} as any method it does not know. The adapters upper-cased
 * the method, so a {@code get} answered 503 was judged a GET and sent again. Now each client that
 * sends the case it is given (java.net.http, OkHttp, Apache HttpClient 4.5 and 5.x, classic and
 * async) sends a {@code get} once, through a real loopback server, where a {@code GET} is retried;
 * HttpURLConnection refuses a {@code get} itself, with the agent as without.
 */
class MethodCaseTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private RetryEngine engine;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    server.otherwise(status(503));
    engine =
        TestEngines.engine(
            time, Mode.ENFORCE, r -> r.maxAttempts(2), CircuitBreakerPolicy.defaults(), events);
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  @ParameterizedTest
  @ValueSource(strings = {"GET", "get"})
  void theJdkClient(String method) throws Exception {
    HttpClient client =
        RetryingHttpClient.wrap(
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(), engine);
    HttpResponse<String> response =
        client.send(
            HttpRequest.newBuilder(URI.create(server.url("/x")))
                .method(method, HttpRequest.BodyPublishers.noBody())
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).isEqualTo(503);
    assertSentAsOftenAsItsCaseAllows(method);
  }

  @ParameterizedTest
  @ValueSource(strings = {"GET", "get"})
  void okHttp(String method) throws Exception {
    OkHttpClient client =
        new OkHttpClient.Builder()
            .retryOnConnectionFailure(false)
            .addInterceptor(new AsyncRetrier(engine).interceptor())
            .build();
    try (Response response =
        client
            .newCall(new Request.Builder().url(server.url("/x")).method(method, null).build())
            .execute()) {
      assertThat(response.code()).isEqualTo(503);
    } finally {
      client.connectionPool().evictAll();
    }
    assertSentAsOftenAsItsCaseAllows(method);
  }

  @ParameterizedTest
  @ValueSource(strings = {"GET", "get"})
  void apacheHttpClient4(String method) throws Exception {
    try (org.apache.http.impl.client.CloseableHttpClient client =
            RetryingCloseableHttpClient.wrap(
                org.apache.http.impl.client.HttpClients.custom(), engine);
        org.apache.http.client.methods.CloseableHttpResponse response =
            client.execute(
                org.apache.http.client.methods.RequestBuilder.create(method)
                    .setUri(server.url("/x"))
                    .build())) {
      assertThat(response.getStatusLine().getStatusCode()).isEqualTo(503);
    }
    assertSentAsOftenAsItsCaseAllows(method);
  }

  @ParameterizedTest
  @ValueSource(strings = {"GET", "get"})
  void apacheHttpClient5Classic(String method) throws Exception {
    try (org.apache.hc.client5.http.impl.classic.CloseableHttpClient client =
        RetryExecHandler.addTo(org.apache.hc.client5.http.impl.classic.HttpClients.custom(), engine)
            .build()) {
      int status =
          client.execute(
              new org.apache.hc.client5.http.classic.methods.HttpUriRequestBase(
                  method, URI.create(server.url("/x"))),
              response -> response.getCode());
      assertThat(status).isEqualTo(503);
    }
    assertSentAsOftenAsItsCaseAllows(method);
  }

  @ParameterizedTest
  @ValueSource(strings = {"GET", "get"})
  void apacheHttpClient5Async(String method) throws Exception {
    try (org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient client =
        AsyncRetryExecHandler.addTo(
                org.apache.hc.client5.http.impl.async.HttpAsyncClients.custom(), engine)
            .build()) {
      client.start();
      org.apache.hc.client5.http.async.methods.SimpleHttpResponse response =
          client
              .execute(
                  new org.apache.hc.client5.http.async.methods.SimpleHttpRequest(
                      method, URI.create(server.url("/x"))),
                  null)
              .get(30, TimeUnit.SECONDS);
      assertThat(response.getCode()).isEqualTo(503);
    }
    assertSentAsOftenAsItsCaseAllows(method);
  }

  /** HttpURLConnection takes its upper-case methods only: a get never reaches the engine. */
  @Test
  void httpUrlConnectionRefusesALowerCaseMethodWithTheAgentAsWithout() throws Exception {
    HttpURLConnection plain = (HttpURLConnection) new URL(server.url("/x")).openConnection();
    HttpURLConnection retrying =
        (HttpURLConnection) RetryingUrlConnections.open(new URL(server.url("/x")), engine);
    assertThatThrownBy(() -> plain.setRequestMethod("get")).isInstanceOf(ProtocolException.class);
    assertThatThrownBy(() -> retrying.setRequestMethod("get"))
        .isInstanceOf(ProtocolException.class);
    assertThat(retrying.getResponseCode()).as("still a GET").isEqualTo(503);
    retrying.getErrorStream().close();
    assertSentAsOftenAsItsCaseAllows("GET");
  }

  /** A GET twice (maxAttempts 2); a get once, given up as not idempotent. */
  private void assertSentAsOftenAsItsCaseAllows(String method) {
    assertThat(server.requests()).extracting(r -> r.method).containsOnly(method);
    if (method.equals("GET")) {
      assertThat(server.requestCount()).as("a GET, retried").isEqualTo(2);
      return;
    }
    assertThat(server.requestCount()).as("a get, an unknown method, not retried").isEqualTo(1);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.NOT_IDEMPOTENT);
  }
}
