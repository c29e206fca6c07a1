package dev.retryagent.okhttp;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.RefusingPort;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.FormBody;
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
 * A POST without key that OkHttp follows with a redirect (303: a GET; 307: the POST again, OkHttp 4
 * and 5) whose {@code Location} refuses the connection: OkHttp's {@code ConnectException} alone
 * reads as "never sent", and the call was retried, the server getting the POST three times where
 * OkHttp alone sent it once. Side by side with plain OkHttp, through {@code execute} and the
 * library's {@code enqueue}, with the network interceptor (as the agent's hook tells) and without
 * it (the guarded body tells). The other clients: {@code guarantees.RedirectedUnsafeRequestTest}.
 */
class RedirectedPostTest {
  private static final MediaType JSON = MediaType.parse("application/json");

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final List<OkHttpClient> clients = new ArrayList<>();
  private RefusingPort refusing;
  private String dead;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    refusing = new RefusingPort();
    dead = refusing.url("/gone");
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
    refusing.close();
    for (OkHttpClient c : clients) {
      c.dispatcher().executorService().shutdown();
      c.connectionPool().evictAll();
    }
  }

  static List<Arguments> ways() {
    List<Arguments> all = new ArrayList<>();
    for (int code : new int[] {303, 307}) {
      for (boolean enqueue : new boolean[] {false, true}) {
        for (boolean network : new boolean[] {true, false}) {
          all.add(Arguments.of(code, enqueue, network));
        }
      }
    }
    return all;
  }

  private AsyncRetrier retrier(UnsafeMethods unsafe) {
    return new AsyncRetrier(
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.maxAttempts(3).unsafeMethods(unsafe),
            CircuitBreakerPolicy.defaults(),
            events));
  }

  private OkHttpClient client(AsyncRetrier retrier, boolean network) {
    OkHttpClient.Builder b = new OkHttpClient.Builder();
    if (retrier != null) {
      b.addInterceptor(retrier.interceptor());
      if (network) {
        b.addNetworkInterceptor(retrier.interceptor().networkInterceptor());
      }
    }
    OkHttpClient c = b.build();
    clients.add(c);
    return c;
  }

  /** The requests the server got, then what the application got (status, or failure's class). */
  private List<String> post(OkHttpClient client, AsyncRetrier retrier, String url, String key)
      throws Exception {
    int before = server.requestCount();
    Request.Builder b = new Request.Builder().url(url).post(RequestBody.create(JSON, "{}"));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    String got;
    try (Response r = call(client, retrier, b.build())) {
      got = "" + r.code();
    } catch (IOException e) {
      got = e.getClass().getName();
    }
    List<String> seen =
        server.requests().subList(before, server.requestCount()).stream()
            .map(r -> r.method + " " + r.path)
            .collect(Collectors.toList());
    seen.add(got);
    return seen;
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

  private long retries() {
    return events.stream().filter(e -> e.type() == RetryEvent.Type.RETRY).count();
  }

  @ParameterizedTest(name = "{0}, enqueue {1}, network interceptor {2}")
  @MethodSource("ways")
  void aPostRedirectedToARefusingHostIsNotSentAgain(int code, boolean enqueue, boolean network)
      throws Exception {
    server.otherwise(status(code).header("Location", dead));
    String url = server.url("/pay");
    AsyncRetrier retrier = retrier(UnsafeMethods.IF_NOT_SENT);

    List<String> plain = post(client(null, false), null, url, null);
    List<String> ours = post(client(retrier, network), enqueue ? retrier : null, url, null);

    // OkHttp 3 does not follow a 307 of a POST: the application gets the 307, with us too.
    assertThat(plain.get(0)).isEqualTo("POST /pay");
    assertThat(ours).isEqualTo(plain); // before: POST /pay three times, then ConnectException
    assertThat(retries()).isZero();
  }

  static List<Arguments> codesAndWays() {
    List<Arguments> all = new ArrayList<>();
    for (int code : new int[] {303, 307}) {
      for (boolean enqueue : new boolean[] {false, true}) {
        all.add(Arguments.of(code, enqueue));
      }
    }
    return all;
  }

  /**
   * One interceptor on two clients, the network interceptor on one of them only: a POST of the
   * other, redirected to a host that refuses the connection, ends as with plain OkHttp. Whether the
   * network interceptor tells was decided per interceptor, so the client without it was taken for
   * told: nothing ever told its requests, the hop's ConnectException read as "never sent", and the
   * server got the POST three times.
   */
  @ParameterizedTest(name = "{0}, enqueue {1}")
  @MethodSource("codesAndWays")
  void aPostRedirectedToARefusingHostIsNotSentAgainOnAClientWithoutTheSharedNetworkInterceptor(
      int code, boolean enqueue) throws Exception {
    server.otherwise(status(code).header("Location", dead));
    String url = server.url("/pay");
    AsyncRetrier retrier = retrier(UnsafeMethods.IF_NOT_SENT);
    client(retrier, true); // the network interceptor, handed out for another client
    OkHttpClient without = client(retrier, false);

    List<String> plain = post(client(null, false), null, url, null);
    List<String> ours = post(without, enqueue ? retrier : null, url, null);

    assertThat(ours).isEqualTo(plain); // before: POST /pay three times, then ConnectException
    assertThat(retries()).isZero();
  }

  @ParameterizedTest(name = "enqueue {1}, network interceptor {2}")
  @MethodSource("ways")
  void aPostWhoseOwnConnectionIsRefusedIsStillRetried(int code, boolean enqueue, boolean network)
      throws Exception {
    AsyncRetrier retrier = retrier(UnsafeMethods.IF_NOT_SENT);

    List<String> ours = post(client(retrier, network), enqueue ? retrier : null, dead, null);

    assertThat(ours).containsExactly("java.net.ConnectException");
    assertThat(retries()).isEqualTo(2);
  }

  static List<Arguments> enqueueAndNetwork() {
    List<Arguments> all = new ArrayList<>();
    for (boolean enqueue : new boolean[] {false, true}) {
      for (boolean network : new boolean[] {true, false}) {
        all.add(Arguments.of(enqueue, network));
      }
    }
    return all;
  }

  /**
   * A keyed POST of a {@code FormBody} (under if-idempotency-key, a body that needs no guard)
   * redirected 303 to a host that refuses the connection, while a reload to if-not-sent lands in
   * the attempt (made by a network interceptor of the application's as the POST goes out): the
   * stricter rule judges the hop's connect failure as one after sending, and the POST is not sent
   * again. Without our network interceptor only the body's write tells that a request reached the
   * server, so on such a client the {@code FormBody} is still watched; unwatched, the failure read
   * as "never sent" and the server got the POST three times.
   */
  @ParameterizedTest(name = "enqueue {0}, network interceptor {1}")
  @MethodSource("enqueueAndNetwork")
  void aKeyedFormPostRedirectedToARefusingHostIsNotSentAgainAfterAReloadToIfNotSent(
      boolean enqueue, boolean network) throws Exception {
    server.otherwise(status(303).header("Location", dead));
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.maxAttempts(3).unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY),
            CircuitBreakerPolicy.defaults(),
            events);
    AsyncRetrier retrier = new AsyncRetrier(engine);
    Policy ifNotSent =
        new Policy(
            "reloaded",
            RetryPolicy.builder().maxAttempts(3).unsafeMethods(UnsafeMethods.IF_NOT_SENT).build(),
            Policy.defaults().budget(),
            CircuitBreakerPolicy.defaults(),
            Policy.defaults().rateLimit());
    AtomicBoolean reloaded = new AtomicBoolean();
    OkHttpClient.Builder b =
        new OkHttpClient.Builder()
            .addInterceptor(retrier.interceptor())
            .addNetworkInterceptor(
                chain -> {
                  if (reloaded.compareAndSet(false, true)) {
                    engine.reconfigure(Mode.ENFORCE, (method, host, port, path) -> ifNotSent);
                  }
                  return chain.proceed(chain.request());
                });
    if (network) {
      b.addNetworkInterceptor(retrier.interceptor().networkInterceptor());
    }
    OkHttpClient c = b.build();
    clients.add(c);
    Request post =
        new Request.Builder()
            .url(server.url("/pay"))
            .header("Idempotency-Key", "order-7")
            .post(new FormBody.Builder().add("amount", "42").build())
            .build();

    String got;
    try (Response r = call(c, enqueue ? retrier : null, post)) {
      got = "" + r.code();
    } catch (IOException e) {
      got = e.getClass().getName();
    }

    assertThat(server.requests())
        .extracting(r -> r.method + " " + r.path)
        .containsExactly("POST /pay");
    assertThat(got).isEqualTo("java.net.ConnectException");
    assertThat(retries()).isZero();
  }
}
