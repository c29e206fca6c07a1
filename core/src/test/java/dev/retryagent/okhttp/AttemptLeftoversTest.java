package dev.retryagent.okhttp;

import static dev.retryagent.testing.ScriptedHttpServer.Action.closeWithoutResponse;
import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A call waiting for its retry holds none of its finished attempt's connection search (issue 13:
 * ~370 B of OkHttp's state per waiting call, on the application's call object), and goes on as
 * before. Runs under OkHttp 3.14, 4 and 5 (core's build runs this package under each), whose calls
 * keep that state in three different places: the test looks for it by what it is, not where.
 */
class AttemptLeftoversTest {
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private ScriptedHttpServer server;
  private AsyncRetrier retrier;
  private OkHttpClient client;
  private final List<Call> attempts = new CopyOnWriteArrayList<>();

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    RetryEngine engine =
        TestEngines.engine(time, Mode.ENFORCE, b -> b, CircuitBreakerPolicy.defaults(), events);
    retrier = new AsyncRetrier(engine);
    client =
        new OkHttpClient.Builder()
            .retryOnConnectionFailure(false) // a dropped connection is the agent's to retry
            .addInterceptor(
                chain -> {
                  attempts.add(chain.call());
                  return chain.proceed(chain.request());
                })
            .addInterceptor(retrier.interceptor())
            .build();
    time.holdTasks();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
    client.dispatcher().executorService().shutdown();
    client.connectionPool().evictAll();
  }

  @Test
  void aCallWaitingForItsRetryAfterAStatusHoldsNoneOfItsAttemptsConnectionSearch()
      throws Exception {
    waitsHoldingNoneThenSucceeds(status(503));
    assertThat(attempts).hasSize(2);
    assertThat(connectionSearch(attempts.get(1)))
        .as("the attempt that answered keeps its state, as without the agent")
        .isNotEmpty();
  }

  @Test
  void aCallWaitingForItsRetryAfterATransportFailureHoldsNoneEither() throws Exception {
    waitsHoldingNoneThenSucceeds(closeWithoutResponse());
  }

  /** A call whose first attempt gets {@code first} holds none while it waits, then gets its 200. */
  private void waitsHoldingNoneThenSucceeds(ScriptedHttpServer.Action first) throws Exception {
    server.enqueue(first, ok("done"));
    Call call = client.newCall(new Request.Builder().url(server.url("/items")).build());
    Heard heard = new Heard();

    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    assertThat(connectionSearch(call)).isEmpty();

    time.runHeldTasks();
    assertThat(heard.await()).isEqualTo("200 done");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void aCloneWaitingForTheNextRetryHoldsNoneAndCancelStillReachesTheCall() throws Exception {
    server.enqueue(status(503), status(503), ok("never"));
    Call call = client.newCall(new Request.Builder().url(server.url("/items")).build());
    Heard heard = new Heard();

    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    time.runHeldTasks();
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    assertThat(attempts).hasSize(2);
    assertThat(connectionSearch(attempts.get(1))).isEmpty();
    assertThat(connectionSearch(call)).isEmpty();

    call.cancel();
    retrier.cancel(call);
    time.runHeldTasks();
    assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    assertThat(call.isCanceled()).isTrue();
    assertThat(server.awaitRequests(2)).isEqualTo(requests(2));
  }

  /**
   * What of OkHttp's connection search {@code call} reaches through OkHttp's own objects, two
   * fields deep: an exchange finder (OkHttp 3.14 on the call's transmitter, 4 and 5 on the call), a
   * stream allocation (3.12) or an address.
   */
  private static List<String> connectionSearch(Call call) throws IllegalAccessException {
    List<String> found = new ArrayList<>();
    search(call, 2, found);
    return found;
  }

  private static void search(Object o, int depth, List<String> found)
      throws IllegalAccessException {
    for (Class<?> c = o.getClass(); c != null && c.getName().startsWith("okhttp3."); ) {
      for (Field f : c.getDeclaredFields()) {
        if (Modifier.isStatic(f.getModifiers()) || f.getType().isPrimitive()) {
          continue;
        }
        f.setAccessible(true);
        Object value = f.get(o);
        if (value == null) {
          continue;
        }
        String name = value.getClass().getSimpleName();
        if (name.endsWith("ExchangeFinder")
            || name.equals("StreamAllocation")
            || name.equals("Address")) {
          found.add(c.getSimpleName() + "." + f.getName() + ": " + name);
        } else if (depth > 1) {
          search(value, depth - 1, found);
        }
      }
      c = c.getSuperclass();
    }
  }

  /** The callback's one report. */
  private static final class Heard implements Callback {
    final CompletableFuture<String> outcome = new CompletableFuture<>();

    @Override
    public void onFailure(Call call, IOException e) {
      outcome.complete(e.getClass().getName() + ": " + e.getMessage());
    }

    @Override
    public void onResponse(Call call, Response response) throws IOException {
      try (Response r = response) {
        outcome.complete(r.code() + " " + r.body().string());
      }
    }

    String await() throws Exception {
      return outcome.get(10, TimeUnit.SECONDS);
    }
  }
}
