package dev.retryagent.okhttp;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.EventListener;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A WebSocket's handshake call, enqueued through an {@link AsyncRetrier} as the agent enqueues it
 * (OkHttp's {@code RealWebSocket.connect} calls {@code enqueue}). Runs on OkHttp 3.12 too (the
 * {@code okhttp312} test run), where the handshake's callback reads the connection to upgrade from
 * the call it is handed ({@code Internal.instance.streamAllocation(call).connection()}).
 */
class WebSocketHandshakeTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
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

  @Test
  void aRetriedHandshakeHandsItsCallbackACallThatHoldsTheConnectionOfTheResponse()
      throws Exception {
    // OkHttp 3.12: the retried handshake's response came from a clone, and the callback was
    // handed the original call, whose StreamAllocation was the first attempt's, released when
    // its 503 was closed: RealWebSocket read a null connection (a NullPointerException on the
    // dispatcher thread), and the application's WebSocketListener never heard of the socket.
    AsyncRetrier retrier =
        new AsyncRetrier(
            TestEngines.engine(
                time, Mode.ENFORCE, b -> b, CircuitBreakerPolicy.defaults(), events));
    AtomicInteger okHttpCalls = new AtomicInteger();
    client =
        new OkHttpClient.Builder()
            .eventListener(
                new EventListener() {
                  @Override
                  public void callStart(Call call) {
                    okHttpCalls.incrementAndGet();
                  }
                })
            .addInterceptor(retrier.interceptor())
            .build();
    server.enqueue(status(503), ok("upgraded"));
    Request handshake =
        new Request.Builder()
            .url(server.url("/socket"))
            .header("Upgrade", "websocket")
            .header("Connection", "Upgrade")
            .build();
    Call call = client.newCall(handshake);
    CompletableFuture<String> heard = new CompletableFuture<>();

    retrier.enqueue(
        call,
        new Callback() {
          @Override
          public void onFailure(Call c, IOException e) {
            heard.complete(e.toString());
          }

          @Override
          public void onResponse(Call c, Response response) throws IOException {
            try (Response r = response) {
              String connection = holdsItsConnection(c) ? "" : " (no connection)";
              heard.complete(r.code() + " " + r.body().string() + connection);
            }
          }

          /** What RealWebSocket reads on OkHttp before 3.14, before the body is read. */
          private boolean holdsItsConnection(Call c) {
            if (!CALLS_HOLD_THEIR_STREAMS) {
              return true;
            }
            try {
              Class<?> internalType = Class.forName("okhttp3.internal.Internal");
              Object internal = internalType.getField("instance").get(null);
              Object streams =
                  internalType.getMethod("streamAllocation", Call.class).invoke(internal, c);
              return streams.getClass().getMethod("connection").invoke(streams) != null;
            } catch (ReflectiveOperationException e) {
              throw new AssertionError(e);
            }
          }
        },
        client.dispatcher());

    assertThat(heard.get(10, TimeUnit.SECONDS)).isEqualTo("200 upgraded");
    assertThat(server.requestCount()).isEqualTo(2);
    // Where the call holds its streams, the retry runs inside it (one OkHttp call); elsewhere it
    // is a clone, which holds no dispatcher thread while it waits.
    assertThat(okHttpCalls).hasValue(CALLS_HOLD_THEIR_STREAMS ? 1 : 2);
  }

  /** OkHttp before 3.14: a call holds a {@code StreamAllocation}. */
  private static final boolean CALLS_HOLD_THEIR_STREAMS =
      exists("okhttp3.internal.connection.StreamAllocation");

  private static boolean exists(String name) {
    try {
      Class.forName(name, false, OkHttpClient.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }
}
