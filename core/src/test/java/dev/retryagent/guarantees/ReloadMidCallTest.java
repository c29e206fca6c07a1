package dev.retryagent.guarantees;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.okhttp.RetryInterceptor;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Flow;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okio.BufferedSink;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A reload of the configuration while a POST without key is in flight ({@code agent.reload}: "a
 * valid edit applies to new calls"): the call keeps the method rules it started with, but for the
 * stricter of its rule for unsafe requests and the one now in force, which each retry's decision
 * asks. The reload is made by the request's own body as the client writes it, so it lands inside
 * the first attempt, before the engine judges its 503. A call that took the new rule alone would
 * repeat the POST under a reload to {@code unsafeMethods: always} (three requests where the client
 * alone sends one); one that kept its own alone repeated it after a reload to {@code never}, the
 * operator's way to stop duplicate charges.
 */
class ReloadMidCallTest {
  enum Client {
    JDK,
    OKHTTP
  }

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private RetryEngine engine;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    server.otherwise(status(503));
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  private static Policy policy(UnsafeMethods unsafe) {
    return new Policy(
        "reloaded-" + unsafe,
        RetryPolicy.builder().maxAttempts(3).unsafeMethods(unsafe).build(),
        Policy.defaults().budget(),
        CircuitBreakerPolicy.builder().enabled(false).build(),
        Policy.defaults().rateLimit());
  }

  private RetryEngine engine(UnsafeMethods unsafe) {
    engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .policy(policy(unsafe))
            .build();
    return engine;
  }

  /** The reload, made while the client writes the body. */
  private void reloadTo(UnsafeMethods unsafe) {
    Policy p = policy(unsafe);
    engine.reconfigure(Mode.ENFORCE, (method, host, port, path) -> p);
  }

  /** A POST whose body, as the client writes it, reloads the engine to {@code next}; its status. */
  private int post(Client client, UnsafeMethods next) throws Exception {
    byte[] bytes = "{}".getBytes(StandardCharsets.UTF_8);
    if (client == Client.JDK) {
      HttpClient c = RetryingHttpClient.wrap(HttpClient.newHttpClient(), engine);
      HttpRequest.BodyPublisher reloading =
          new HttpRequest.BodyPublisher() {
            @Override
            public long contentLength() {
              return bytes.length;
            }

            @Override
            public void subscribe(Flow.Subscriber<? super ByteBuffer> s) {
              reloadTo(next);
              HttpRequest.BodyPublishers.ofByteArray(bytes).subscribe(s);
            }
          };
      return c.send(
              HttpRequest.newBuilder(URI.create(server.url("/pay"))).POST(reloading).build(),
              HttpResponse.BodyHandlers.discarding())
          .statusCode();
    }
    RetryInterceptor retries = new RetryInterceptor(engine);
    OkHttpClient c =
        new OkHttpClient.Builder()
            .addInterceptor(retries)
            .addNetworkInterceptor(retries.networkInterceptor())
            .build();
    RequestBody reloading =
        new RequestBody() {
          @Override
          public MediaType contentType() {
            return MediaType.get("application/json");
          }

          @Override
          public long contentLength() {
            return bytes.length;
          }

          @Override
          public void writeTo(BufferedSink sink) throws IOException {
            reloadTo(next);
            sink.write(bytes);
          }
        };
    try (Response r =
        c.newCall(new Request.Builder().url(server.url("/pay")).post(reloading).build())
            .execute()) {
      return r.code();
    } finally {
      c.dispatcher().executorService().shutdown();
      c.connectionPool().evictAll();
    }
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void aReloadToAlwaysDuringAnUnkeyedPostDoesNotRepeatIt(Client client) throws Exception {
    engine(UnsafeMethods.IF_NOT_SENT);

    assertThat(post(client, UnsafeMethods.ALWAYS)).isEqualTo(503);

    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void aCallStartedUnderAlwaysStopsRepeatingAfterAReloadToNever(Client client) throws Exception {
    // The stricter rule wins: a reload to never stops the retries of calls under way (before, by
    // the old design, the call kept "always" and the server got the POST three times).
    engine(UnsafeMethods.ALWAYS);

    assertThat(post(client, UnsafeMethods.NEVER)).isEqualTo(503);

    assertThat(server.requestCount()).isEqualTo(1);
    // The next call is the new configuration's: once.
    assertThat(post(client, UnsafeMethods.NEVER)).isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(2);
  }
}
