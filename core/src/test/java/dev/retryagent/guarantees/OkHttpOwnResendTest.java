package dev.retryagent.guarantees;

import static org.assertj.core.api.Assertions.assertThat;

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
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the "never twice" property ({@link NeverTwiceProperties}) leaves out, because it does not
 * hold today: OkHttp's own resend of a request whose kept-alive (reused) connection fails after the
 * request was written. OkHttp ({@code RetryAndFollowUpInterceptor}, {@code
 * retryOnConnectionFailure} on by default) sends it again on a new connection, POST included, and
 * the {@link RetryInterceptor}'s network interceptor only counts that resend, it does not stop it.
 * The agent installs the same two interceptors, so it does the same (docs/guarantees.md, "Never
 * twice").
 *
 * <p>These tests pin today's behaviour so that the fix shows: when one fails, the bug it names is
 * fixed; turn it into the guarantee (at most one request; at most {@code maxAttempts}) and lift the
 * exclusions in {@link NeverTwiceProperties} and docs/guarantees.md.
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
    client =
        new OkHttpClient.Builder()
            .addInterceptor(retries)
            .addNetworkInterceptor(retries.networkInterceptor())
            .build();
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
  void todayAnUnkeyedPostIsSentTwiceWhenItsReusedConnectionIsReset() throws Exception {
    server.enqueue(Action.ok("warm"), Action.reset(), Action.ok("second"));
    OkHttpClient c = client(UnsafeMethods.IF_NOT_SENT);
    try (Response warm = c.newCall(new Request.Builder().url(server.url("/w")).build()).execute()) {
      warm.body().string(); // the connection goes back to the pool, kept alive
    }

    try (Response r = c.newCall(post(false)).execute()) {
      assertThat(r.code()).isEqualTo(200);
    }

    // The warm-up, then the POST twice: OkHttp resent it; the guarantee wants 2 requests in all.
    assertThat(server.requests()).extracting(r -> r.method).containsExactly("GET", "POST", "POST");
  }

  @Test
  void todayAKeyedPostGoesPastMaxAttemptsWhenTheLastAttemptsConnectionIsReused() throws Exception {
    // The 429 leaves its connection kept alive: the fourth attempt reuses it, is reset, and OkHttp
    // sends it once more on a new connection.
    server.enqueue(
        Action.reset(),
        Action.reset(),
        Action.status(429).header("Retry-After", "1"),
        Action.reset(),
        Action.ok("fifth"));

    try (Response r = client(UnsafeMethods.IF_IDEMPOTENCY_KEY).newCall(post(true)).execute()) {
      assertThat(r.code()).isEqualTo(200);
    }

    // maxAttempts is 4; the server saw 5, every one with the same key and body.
    assertThat(server.requests()).hasSize(5);
    assertThat(server.requests()).extracting(r -> r.header("Idempotency-Key")).containsOnly("k-1");
    assertThat(server.requests()).extracting(r -> r.body).containsOnly("{}");
  }
}
