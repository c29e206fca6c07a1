package dev.retryagent.okhttp;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.testing.EventLines;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A call its caller cancels while its first attempt waits for the rate limit's permit: nothing is
 * sent, the call ends at 0 attempts, its permit back, the caller getting plain OkHttp's "Canceled".
 * (The same case for the other clients: their FirstPermitGiveUpTest, ApacheAbortTest,
 * AsyncRetryExecHandlerTest.)
 */
class FirstPermitGiveUpTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final EventLines events = new EventLines();
  private final List<String> told = events.lines;
  private final AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
  private AsyncRetrier retrier;
  private OkHttpClient client;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    RetryEngine engine = TestEngines.onePermitASecond(time, duringTheWait, events);
    retrier = new AsyncRetrier(engine);
    client = new OkHttpClient.Builder().addInterceptor(retrier.interceptor()).build();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
    client.dispatcher().executorService().shutdown();
    client.connectionPool().evictAll();
  }

  private Request get(String path) {
    return new Request.Builder().url(server.url(path)).build();
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aCallCancelledWhileItsFirstAttemptWaitsForItsPermitIsToldAsARefusedFirstAttempt(
      boolean enqueued) throws Exception {
    server.enqueue(ok("takes the only permit"), ok("after the give-up"), ok("never"));
    long first = time.nanoTime();
    client.newCall(get("/first")).execute().close();
    told.clear();
    Call call = client.newCall(get("/second"));
    duringTheWait.set(call::cancel);

    Throwable withAgent;
    if (enqueued) {
      CompletableFuture<Throwable> heard = new CompletableFuture<>();
      retrier.enqueue(
          call,
          new Callback() {
            @Override
            public void onFailure(Call c, IOException e) {
              heard.complete(e);
            }

            @Override
            public void onResponse(Call c, Response r) {
              r.close();
              heard.complete(null);
            }
          },
          client.dispatcher());
      withAgent = heard.get(10, TimeUnit.SECONDS);
    } else {
      withAgent = catchThrowable(call::execute);
    }

    Call plain = new OkHttpClient().newCall(get("/plain"));
    plain.cancel();
    Throwable without = catchThrowable(plain::execute);
    assertThat(withAgent).isExactlyInstanceOf(without.getClass()).hasMessage(without.getMessage());
    assertThat(server.awaitRequests(1)).as("the first call's request alone").isEqualTo(requests(1));
    // execute() hands the attempt to OkHttp, which refuses it (RetryInterceptor: attemptRefused):
    // attempt 1 told as it starts, the call ended at 0 attempts. enqueue()'s call ends in its own
    // loop (EnqueuedCall) before an attempt starts: 0 attempts, none told.
    if (enqueued) {
      assertThat(told)
          .containsExactly("RATE_LIMITED 0", "GIVE_UP 0 CANCELLED", "CALL_COMPLETE 0 CANCELLED");
    } else {
      assertThat(told)
          .containsExactly(
              "RATE_LIMITED 0", "ATTEMPT 1", "GIVE_UP 0 CANCELLED", "CALL_COMPLETE 0 CANCELLED");
    }
    // The permit reserved for the given-up call (due 1 s after the first call's) went back: the
    // next call's is due then, not 1 s later behind the given-up call's.
    try (Response r = client.newCall(get("/next")).execute()) {
      assertThat(r.body().string()).isEqualTo("after the give-up");
    }
    assertThat(time.nanoTime() - first).isEqualTo(TimeUnit.SECONDS.toNanos(1));
  }
}
