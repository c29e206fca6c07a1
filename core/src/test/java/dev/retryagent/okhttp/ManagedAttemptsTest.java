package dev.retryagent.okhttp;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.EventLines;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The interceptor finds an enqueued call's attempt ({@link ManagedAttempts}) whatever the map's
 * aggregate count says. {@code ConcurrentHashMap.isEmpty()} sums counts other threads change as it
 * reads them: while another call's attempt is put on one thread and removed on another (its
 * dispatcher thread, as every attempt's is) it can answer empty for a map that holds the attempt
 * asked for. {@link UndercountingMap} answers so once, deterministically. (The same for what {@link
 * AsyncRetrier} keeps through a retry's wait: AsyncRetrierMapsTest.)
 */
class ManagedAttemptsTest {
  private static final MediaType JSON = MediaType.parse("application/json");

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final EventLines events = new EventLines();
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

  /**
   * The soak's miscount (ok-enqueue: JMX one call and one attempt more than the callbacks heard and
   * the host got, the call failed). Before, the interceptor asked the map's {@code isEmpty()}
   * first; answered empty, it ran the call's first attempt, begun already, as a call of its own,
   * which sent the request and ended (a 503 to a POST without key, not retried): two calls of one
   * attempt each told and counted for one request and one callback.
   */
  @Test
  void aFirstAttemptIsFoundWhileTheMapsCountReadsEmpty() throws Exception {
    RetryEngine engine =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                r -> r,
                Policy.defaults().budget(),
                CircuitBreakerPolicy.defaults(),
                Policy.defaults().rateLimit())
            .listener(events)
            .build();
    UndercountingMap<Call, ManagedAttempts.Attempt> map = new UndercountingMap<>();
    AsyncRetrier retrier =
        new AsyncRetrier(
            engine,
            Call::enqueue,
            new ManagedAttempts(map),
            new ConcurrentHashMap<>(),
            new ConcurrentHashMap<>());
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
    server.enqueue(status(503));
    Request post =
        new Request.Builder()
            .url(server.url("/items"))
            .post(RequestBody.create(JSON, "{\"key\":null}"))
            .build();
    map.readsEmpty.set(1);

    CompletableFuture<String> heard = new CompletableFuture<>();
    AtomicInteger reports = new AtomicInteger();
    retrier.enqueue(
        client.newCall(post),
        new Callback() {
          @Override
          public void onFailure(Call call, IOException e) {
            reports.incrementAndGet();
            heard.complete(e.toString());
          }

          @Override
          public void onResponse(Call call, Response response) {
            reports.incrementAndGet();
            try (Response r = response) {
              heard.complete(String.valueOf(r.code()));
            }
          }
        },
        client.dispatcher());

    assertThat(heard.get(10, TimeUnit.SECONDS)).isEqualTo("503");
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(reports).hasValue(1);
    // Told (and counted) before the callback hears of the call: nothing is left to come.
    List<String> completes =
        events.lines.stream()
            .filter(l -> l.startsWith("CALL_COMPLETE "))
            .collect(Collectors.toList());
    assertThat(completes)
        .as(
            "calls told = callbacks heard; their attempts = requests the host got\n%s",
            events.lines)
        .containsExactly("CALL_COMPLETE 1 NOT_IDEMPOTENT");
  }
}
