package dev.retryagent.okhttp;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.reset;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * OkHttp's own resend of a request after its connection failed ({@code retryOnConnectionFailure})
 * counts as a retry, and a reload during a call's retry wait that makes the rule for requests not
 * safe to repeat stricter applies to each retry of the call (docs/configuration.md, the reload
 * section): so to OkHttp's resend inside the retry's attempt too ({@link ResendGuard#mayResend}).
 */
class ResendAfterReloadTest {
  private static final MediaType JSON = MediaType.parse("application/json");

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<OkHttpClient> clients = new ArrayList<>();

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
    for (OkHttpClient c : clients) {
      c.dispatcher().executorService().shutdown();
      c.connectionPool().evictAll();
    }
  }

  static List<Arguments> ways() {
    List<Arguments> all = new ArrayList<>();
    for (boolean reload : new boolean[] {false, true}) {
      for (boolean enqueue : new boolean[] {false, true}) {
        for (boolean network : new boolean[] {true, false}) {
          all.add(Arguments.of(reload, enqueue, network));
        }
      }
    }
    return all;
  }

  private static Policy unsafe(UnsafeMethods rule) {
    return new Policy(
        "test",
        RetryPolicy.builder().maxAttempts(3).unsafeMethods(rule).build(),
        Policy.defaults().budget(),
        CircuitBreakerPolicy.builder().enabled(false).build(),
        Policy.defaults().rateLimit());
  }

  /**
   * A POST without key begun under {@code unsafeMethods: always}: its 503 is retried, and during
   * the retry's wait the file is reloaded to {@code never}. The retry goes out (judged when the 503
   * came), on the kept-alive connection, which the server resets once it read the POST. OkHttp
   * would send it again by itself on a new connection, a retry the rule now in force refuses: the
   * server must get the POST twice, and the application the reset. Before, the guard judged by the
   * call's own policy ({@code always}, an attempt left): OkHttp resent, the server got the POST a
   * third time and the application its 200. Without the reload, OkHttp's resend is made as before
   * (the control).
   */
  @ParameterizedTest(name = "reload {0}, enqueue {1}, network interceptor {2}")
  @MethodSource("ways")
  void aReloadToNeverDuringTheRetryWaitKeepsOkHttpFromResendingThePost(
      boolean reload, boolean enqueue, boolean network) throws Exception {
    AtomicReference<RetryEngine> engineRef = new AtomicReference<>();
    Policy never = unsafe(UnsafeMethods.NEVER);
    RetryEngine engine =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                r -> r.maxAttempts(3).unsafeMethods(UnsafeMethods.ALWAYS),
                Policy.defaults().budget(),
                CircuitBreakerPolicy.builder().enabled(false).build(),
                Policy.defaults().rateLimit())
            .listener(
                new RetryListener() {
                  @Override
                  public void onRetry(RetryEvent e) {
                    if (reload) {
                      // told as the retry's wait begins
                      engineRef.get().reconfigure(Mode.ENFORCE, (m, h, p, path) -> never);
                    }
                  }
                })
            .build();
    engineRef.set(engine);
    AsyncRetrier retrier = new AsyncRetrier(engine);
    OkHttpClient.Builder b = new OkHttpClient.Builder().addInterceptor(retrier.interceptor());
    if (network) {
      b.addNetworkInterceptor(retrier.interceptor().networkInterceptor());
    }
    OkHttpClient client = b.build();
    clients.add(client);
    server.enqueue(status(503), reset(), ok("charged again"));
    Request post =
        new Request.Builder()
            .url(server.url("/v1/charges"))
            .post(RequestBody.create(JSON, "{}"))
            .build();

    String got;
    try (Response r = call(client, enqueue ? retrier : null, post)) {
      got = r.code() + " " + r.body().string();
    } catch (IOException e) {
      got = "failed";
    }

    if (reload) {
      assertThat(server.requestCount()).as("POSTs the server read").isEqualTo(2);
      assertThat(got).isEqualTo("failed");
    } else {
      assertThat(server.requestCount()).as("POSTs the server read").isEqualTo(3);
      assertThat(got).isEqualTo("200 charged again");
    }
  }

  /** {@code execute} when {@code retrier} is null, else the library's {@code enqueue}. */
  private static Response call(OkHttpClient client, AsyncRetrier retrier, Request request)
      throws Exception {
    Call call = client.newCall(request);
    if (retrier == null) {
      return call.execute();
    }
    CompletableFuture<Response> f = new CompletableFuture<>();
    retrier.enqueue(
        call,
        new Callback() {
          @Override
          public void onFailure(Call c, IOException e) {
            f.completeExceptionally(e);
          }

          @Override
          public void onResponse(Call c, Response r) {
            f.complete(r);
          }
        });
    try {
      return f.get(20, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw (Exception) e.getCause();
    }
  }
}
