package dev.retryagent.guarantees;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.okhttp.RetryInterceptor;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.ScriptedHttpServer.Action;
import java.io.IOException;
import java.net.SocketException;
import okhttp3.Interceptor;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okio.BufferedSink;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * OkHttp's own resend of a request whose kept-alive (reused) connection fails after the request was
 * written ({@code RetryAndFollowUpInterceptor}, {@code retryOnConnectionFailure} on by default): it
 * sends it again on a new connection, POST included, unless the body is one-shot. The {@link
 * RetryInterceptor} guards the body ({@code ResendGuard}) where the engine would not repeat the
 * request, or no attempt is left: the "never twice" property ({@link NeverTwiceProperties}) starts
 * every call on a new connection, so these are the cases it does not reach.
 */
class OkHttpOwnResendTest {
  private ScriptedHttpServer server;
  private OkHttpClient client;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
    if (client != null) {
      client.dispatcher().executorService().shutdown();
      client.connectionPool().evictAll();
    }
  }

  private OkHttpClient client(UnsafeMethods mode) {
    return client(mode, null);
  }

  /** With {@code before}, if not null, as a network interceptor ahead of the library's. */
  private OkHttpClient client(UnsafeMethods mode, Interceptor before) {
    FakeTime time = new FakeTime();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .policy(
                new Policy(
                    "resend",
                    RetryPolicy.builder().maxAttempts(4).unsafeMethods(mode).build(),
                    Policy.defaults().budget(),
                    CircuitBreakerPolicy.defaults(),
                    Policy.defaults().rateLimit()))
            .build();
    RetryInterceptor retries = new RetryInterceptor(engine);
    OkHttpClient.Builder b = new OkHttpClient.Builder().addInterceptor(retries);
    if (before != null) {
      b.addNetworkInterceptor(before);
    }
    client = b.addNetworkInterceptor(retries.networkInterceptor()).build();
    return client;
  }

  private Request post(boolean keyed) {
    Request.Builder b =
        new Request.Builder()
            .url(server.url("/pay"))
            .post(RequestBody.create(MediaType.get("text/plain"), "{}"));
    if (keyed) {
      b.header("Idempotency-Key", "k-1");
    }
    return b.build();
  }

  @Test
  void anUnkeyedPostWhoseReusedConnectionIsResetIsNotSentAgain() throws Exception {
    server.enqueue(Action.ok("warm"), Action.reset(), Action.ok("second"));
    OkHttpClient c = client(UnsafeMethods.IF_NOT_SENT);
    try (Response warm = c.newCall(new Request.Builder().url(server.url("/w")).build()).execute()) {
      warm.body().string(); // the connection goes back to the pool, kept alive
    }

    assertThatThrownBy(() -> c.newCall(post(false)).execute()).isInstanceOf(SocketException.class);

    // Without the guard: GET, POST, POST (OkHttp's resend) and a 200.
    assertThat(server.requests()).extracting(r -> r.method).containsExactly("GET", "POST");
  }

  @Test
  void anUnkeyedPostIsNotSentAgainWhenAnInterceptorBeforeOursReplacedItsBody() throws Exception {
    // A network interceptor of the application's (compression, signing) sends a body of its own:
    // the guarded body is still the one OkHttp asks whether it may resend.
    Interceptor rewrap =
        chain -> {
          Request r = chain.request();
          RequestBody own = r.body();
          RequestBody copy =
              new RequestBody() {
                @Override
                public MediaType contentType() {
                  return own.contentType();
                }

                @Override
                public long contentLength() throws IOException {
                  return own.contentLength();
                }

                @Override
                public void writeTo(BufferedSink sink) throws IOException {
                  own.writeTo(sink);
                }
              };
          return chain.proceed(own == null ? r : r.newBuilder().method(r.method(), copy).build());
        };
    server.enqueue(Action.ok("warm"), Action.reset(), Action.ok("second"));
    OkHttpClient c = client(UnsafeMethods.IF_NOT_SENT, rewrap);
    try (Response warm = c.newCall(new Request.Builder().url(server.url("/w")).build()).execute()) {
      warm.body().string();
    }

    assertThatThrownBy(() -> c.newCall(post(false)).execute()).isInstanceOf(SocketException.class);

    assertThat(server.requests()).extracting(r -> r.method).containsExactly("GET", "POST");
  }

  @Test
  void aKeyedPostIsResentByOkHttpWhileAnAttemptIsLeft() throws Exception {
    server.enqueue(Action.ok("warm"), Action.reset(), Action.ok("second"));
    OkHttpClient c = client(UnsafeMethods.IF_IDEMPOTENCY_KEY);
    try (Response warm = c.newCall(new Request.Builder().url(server.url("/w")).build()).execute()) {
      warm.body().string();
    }

    try (Response r = c.newCall(post(true)).execute()) {
      assertThat(r.code()).isEqualTo(200);
    }

    // OkHttp's resend, counted as the second attempt: the same as without the agent.
    assertThat(server.requests()).extracting(r -> r.method).containsExactly("GET", "POST", "POST");
    assertThat(server.requests().subList(1, 3))
        .extracting(r -> r.header("Idempotency-Key"))
        .containsOnly("k-1");
  }

  @Test
  void theLastAttemptOnAReusedConnectionIsNotResentPastMaxAttempts() throws Exception {
    // The 429 leaves its connection kept alive: the fourth attempt reuses it and is reset; OkHttp
    // would send it once more on a new connection, a fifth request with maxAttempts 4.
    server.enqueue(
        Action.reset(),
        Action.reset(),
        Action.status(429).header("Retry-After", "1"),
        Action.reset(),
        Action.ok("fifth"));

    assertThatThrownBy(
            () -> client(UnsafeMethods.IF_IDEMPOTENCY_KEY).newCall(post(true)).execute().close())
        .isInstanceOf(SocketException.class);

    assertThat(server.requests()).hasSize(4);
    assertThat(server.requests()).extracting(r -> r.header("Idempotency-Key")).containsOnly("k-1");
    assertThat(server.requests()).extracting(r -> r.body).containsOnly("{}");
  }

  @Test
  void aRedirectOfAGuardedPostIsFollowedAsWithoutTheAgent() throws Exception {
    // OkHttp follows a 302 of a POST as a GET (and never a 307 of a POST): a guarded body changes
    // neither, since it is one-shot only after a failure.
    server.enqueue(
        Action.status(302).header("Location", server.url("/elsewhere")), Action.ok("followed"));

    try (Response r = client(UnsafeMethods.IF_NOT_SENT).newCall(post(false)).execute()) {
      assertThat(r.body().string()).isEqualTo("followed");
    }

    assertThat(server.requests()).extracting(r -> r.method).containsExactly("POST", "GET");
  }
}
