package dev.retryagent.okhttp;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.reset;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.EventListener;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The end of an enqueued call whose retry's wait ended past the deadline (EnqueuedCall's late
 * path), on every OkHttp the adapter supports: OkHttp 3.12 runs these too (the okhttp312
 * execution), where its run of a call catches only an {@code IOException} from an interceptor and
 * tells the callback nothing for anything else. The engine's clock is 40 s late at the retry's
 * wait, past the policy's 10 s deadline, within the call's 30 s callTimeout.
 */
class LateEndAcrossVersionsTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final List<String> errors = new CopyOnWriteArrayList<>();
  private RetryEngine engine;
  private AsyncRetrier retrier;
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

  /** The callback's one report: the thread it came on and what it said. */
  private static final class Heard implements Callback {
    final CompletableFuture<String> outcome = new CompletableFuture<>();
    final AtomicInteger reports = new AtomicInteger();
    volatile String thread;

    @Override
    public void onFailure(Call call, IOException e) {
      reports.incrementAndGet();
      thread = Thread.currentThread().getName();
      outcome.complete(e.getClass().getName() + ": " + e.getMessage());
    }

    @Override
    public void onResponse(Call call, Response response) throws IOException {
      reports.incrementAndGet();
      thread = Thread.currentThread().getName();
      try (Response r = response) {
        outcome.complete(r.code() + " " + r.body().string());
      }
    }

    String await() throws Exception {
      return outcome.get(10, TimeUnit.SECONDS);
    }
  }

  private void configure(RetryListener extra, OkHttpClient.Builder b) {
    RetryEngine.Builder e =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                r -> r.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
                Policy.defaults().budget(),
                CircuitBreakerPolicy.defaults(),
                Policy.defaults().rateLimit())
            .errors(errors::add)
            .listener(TestEngines.recorder(events));
    if (extra != null) {
      e.listener(extra);
    }
    engine = e.build();
    retrier = new AsyncRetrier(engine);
    client =
        b.callTimeout(30, TimeUnit.SECONDS)
            .retryOnConnectionFailure(false)
            .addInterceptor(retrier.interceptor())
            .build();
  }

  /** Enqueues {@code call}; its first attempt fails (or 503s), and its retry's wait ends late. */
  private Heard enqueueAndEndTheWaitLate(Call call) throws Exception {
    time.late(40_000_000_000L);
    time.holdTasks();
    Heard heard = new Heard();
    retrier.enqueue(call, heard, client.dispatcher());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> client.dispatcher().runningCallsCount() == 0);
    time.runHeldTasks();
    return heard;
  }

  private void assertGivenUp(GiveUpReason reason) {
    await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(reason);
  }

  private Request get(String path) {
    return new Request.Builder().url(server.url(path)).build();
  }

  @ParameterizedTest(name = "a failure before the wait: {0}")
  @ValueSource(booleans = {false, true})
  void aLateWaitEndsWithTheOutcomeOfBeforeItGivenUpAtTheDeadline(boolean failed) throws Exception {
    configure(null, new OkHttpClient.Builder());
    server.enqueue(failed ? reset() : status(503).body("busy"));
    server.otherwise(ok("late"));

    Heard heard = enqueueAndEndTheWaitLate(client.newCall(get("/retried")));

    if (failed) {
      assertThat(heard.await()).startsWith("java.net.SocketException: ");
    } else {
      assertThat(heard.await()).isEqualTo("503 busy");
    }
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    assertGivenUp(GiveUpReason.DEADLINE);
  }

  @Test
  void aLateWaitWhoseCloneTheApplicationsListenerRefusesIsNotHeardAsACancel() throws Exception {
    // The application's event listener threw from the callStart of the clone that tells the reset
    // (OkHttp lets it out of enqueue(), 3.12 to 5.x): the call was abandoned (as cancelled) before
    // its late end was decided, which then took it for a cancel: the callback heard "Canceled".
    AtomicInteger starts = new AtomicInteger();
    configure(
        null,
        new OkHttpClient.Builder()
            .eventListener(
                new EventListener() {
                  @Override
                  public void callStart(Call call) {
                    if (starts.incrementAndGet() == 2) {
                      throw new IllegalStateException("the application's listener");
                    }
                  }
                }));
    server.enqueue(reset());
    server.otherwise(ok("late"));

    Call call = client.newCall(get("/retried"));
    Heard heard = enqueueAndEndTheWaitLate(call);

    assertThat(heard.await())
        .isEqualTo("java.io.IOException: retry-agent: could not enqueue a retry");
    assertThat(heard.reports).hasValue(1);
    assertThat(call.isCanceled()).isFalse();
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    assertGivenUp(GiveUpReason.DEADLINE);
  }

  @ParameterizedTest(name = "a failure before the wait: {0}")
  @ValueSource(booleans = {false, true})
  void aListenerThrowingAnErrorAsTheLateEndIsDecidedLeavesTheCallbackHearingItOnce(boolean failed)
      throws Exception {
    // Decided in the clone's run (a failure) or on a dispatcher thread (the 503's copy): an Error
    // let through there left OkHttp 3.12's run of the clone unheard (it catches an IOException
    // only), and the task of the copy on every version.
    configure(
        new RetryListener() {
          @Override
          public void onGiveUp(RetryEvent e) {
            throw new InternalError("a listener's, injected");
          }
        },
        new OkHttpClient.Builder());
    server.enqueue(failed ? reset() : status(503).body("busy"));
    server.otherwise(ok("late"));

    Heard heard = enqueueAndEndTheWaitLate(client.newCall(get("/retried")));

    if (failed) {
      assertThat(heard.await()).startsWith("java.net.SocketException: ");
    } else {
      assertThat(heard.await()).isEqualTo("503 busy");
    }
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(errors).singleElement().asString().contains("after a late retry wait");
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    await().atMost(Duration.ofSeconds(10)).until(() -> retrier.running() == 0);
  }

  @ParameterizedTest(name = "cancelled as the clone is made: {0}")
  @ValueSource(booleans = {false, true})
  void aLateFailureWhoseCloneCannotBeMadeIsToldWhereItIsAsItsCloneWouldHaveToldIt(boolean cancel)
      throws Exception {
    // The application's EventListener.Factory throws for the clone that would tell the reset of
    // before the wait (OkHttp asks it in clone()), after cancelling the call, or not: no clone,
    // the end is told here (attemptCallOrTell), as the clone's run would have told it: the
    // reset, given up at the deadline; "Canceled" after the cancel, given up as cancelled.
    AtomicReference<Call> theCall = new AtomicReference<>();
    AtomicInteger made = new AtomicInteger();
    configure(
        null,
        new OkHttpClient.Builder()
            .eventListenerFactory(
                c -> {
                  if (made.incrementAndGet() > 1) {
                    if (cancel) {
                      theCall.get().cancel();
                    }
                    throw new IllegalStateException("the application's factory, injected");
                  }
                  return EventListener.NONE;
                }));
    server.enqueue(reset());
    server.otherwise(ok("late"));
    Call call = client.newCall(get("/retried"));
    theCall.set(call);

    Heard heard = enqueueAndEndTheWaitLate(call);

    if (cancel) {
      assertThat(heard.await()).isEqualTo("java.io.IOException: Canceled");
    } else {
      assertThat(heard.await()).startsWith("java.net.SocketException: ");
    }
    assertThat(heard.reports).hasValue(1);
    assertThat(made).as("the call, and the clone asked for").hasValue(2);
    assertThat(server.requestCount()).as("nothing more sent").isEqualTo(1);
    assertGivenUp(cancel ? GiveUpReason.CANCELLED : GiveUpReason.DEADLINE);
  }

  @Test
  void aRetriedCallHearsItsRetrysResponseOnAnOkHttpThread() throws Exception {
    // The async path's plain case, on each version: a 503, its retry's 200.
    configure(null, new OkHttpClient.Builder());
    server.enqueue(status(503).body("busy"));
    server.otherwise(ok("retried"));
    Heard heard = new Heard();
    retrier.enqueue(client.newCall(get("/retried")), heard, client.dispatcher());

    assertThat(heard.await()).isEqualTo("200 retried");
    assertThat(heard.thread).startsWith("OkHttp ");
    assertThat(heard.reports).hasValue(1);
    assertThat(server.requestCount()).isEqualTo(2);
  }
}
