package dev.retryagent.jdk;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.testing.EventLines;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A java.net.http call its caller gives up (shutdownNow, a cancelled future) while its first
 * attempt waits for the rate limit's permit: nothing is sent, the call is told as a first attempt
 * the client refused (attempt 1 starting, then ended at 0 attempts), its permit back, the caller
 * getting what the plain client gives for that give-up.
 */
class FirstPermitGiveUpTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final EventLines events = new EventLines();
  private final AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
  private RetryEngine engine;
  private long first; // when the first call took the only permit
  private HttpClient client;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    engine = TestEngines.onePermitASecond(time, duringTheWait, events);
    client =
        RetryingHttpClient.wrap(
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(), engine);
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  private HttpRequest get(String path) {
    return HttpRequest.newBuilder(URI.create(server.url(path))).build();
  }

  private static void shutdownNow(HttpClient c) {
    try {
      HttpClient.class.getMethod("shutdownNow").invoke(c);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError(e);
    }
  }

  /** The first call takes the only permit: the next one's first attempt waits 1 s for its own. */
  private void takeTheOnlyPermit() throws Exception {
    server.enqueue(ok("takes the only permit"));
    first = time.nanoTime();
    client.send(get("/first"), HttpResponse.BodyHandlers.ofString());
    events.lines.clear();
  }

  private void assertToldAsARefusedFirstAttempt() {
    assertTold("RATE_LIMITED 0", "ATTEMPT 1", "GIVE_UP 0 CANCELLED", "CALL_COMPLETE 0 CANCELLED");
  }

  private void assertTold(String... lines) {
    assertThat(server.requestCount()).as("the first call's request alone").isEqualTo(1);
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> events.lines.stream().anyMatch(l -> l.startsWith("CALL_COMPLETE")));
    assertThat(events.lines).containsExactly(lines);
  }

  /** The caller got what the plain client gives for a send after its shutdownNow(). */
  private void assertAsThePlainClientAfterShutdownNow(Throwable withAgent) {
    HttpClient plain = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    shutdownNow(plain);
    Throwable without =
        catchThrowable(() -> plain.send(get("/plain"), HttpResponse.BodyHandlers.ofString()));
    assertThat(withAgent).isInstanceOf(ExecutionException.class);
    assertThat(withAgent.getCause())
        .isExactlyInstanceOf(without.getClass())
        .hasMessage(without.getMessage());
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aClientShutDownWhileTheFirstAttemptWaitsForItsPermit(boolean async) throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.shutdownNow() is Java 21's");
    takeTheOnlyPermit();
    CompletableFuture<HttpResponse<String>> f;
    if (async) {
      time.holdTasks();
      f = client.sendAsync(get("/second"), HttpResponse.BodyHandlers.ofString());
      await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
      shutdownNow(client);
      time.runHeldTasks();
    } else {
      duringTheWait.set(() -> shutdownNow(client));
      f =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return client.send(get("/second"), HttpResponse.BodyHandlers.ofString());
                } catch (IOException | InterruptedException e) {
                  throw new CompletionException(e);
                }
              });
    }
    Throwable withAgent = catchThrowable(() -> f.get(10, TimeUnit.SECONDS));

    assertAsThePlainClientAfterShutdownNow(withAgent);
    assertToldAsARefusedFirstAttempt();
    assertThePermitWentBack();
  }

  /**
   * The application's {@code shutdownNow()} sets the agent's flag (no call retries, the permit's
   * wait ends at once) a moment before the JDK's own {@code shutdownNow()} runs: here the decorated
   * client's, held until the first attempt was either sent or refused. An attempt started in that
   * moment went out and the JDK then aborted it, but the loop took its failure for the client's
   * refusal: ATTEMPT 1 told, then 0 attempts and its permit back, for a request the host got.
   * Refused by the agent instead, as a retry is then, nothing goes out.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aFirstAttemptStartedBeforeTheJdksOwnShutdownNowRanIsNotSent(boolean async) throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.shutdownNow() is Java 21's");
    AtomicReference<CompletableFuture<?>> call = new AtomicReference<>();
    CountDownLatch shutting = new CountDownLatch(1);
    SlowShutdown slow =
        new SlowShutdown(
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(),
            shutting,
            () -> server.requestCount() > 1 || (call.get() != null && call.get().isDone()));
    client = RetryingHttpClient.wrap(slow, engine);
    takeTheOnlyPermit();
    server.enqueue(ok("never asked").delay(10_000));
    Thread shutter = new Thread(() -> shutdownNow(client), "shutter");
    CompletableFuture<HttpResponse<String>> f;
    if (async) {
      time.holdTasks();
      f = client.sendAsync(get("/second"), HttpResponse.BodyHandlers.ofString());
      call.set(f);
      await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);
      shutter.start();
      assertThat(shutting.await(10, TimeUnit.SECONDS)).isTrue();
      time.runHeldTasks();
    } else {
      duringTheWait.set(
          () -> {
            shutter.start();
            try {
              assertThat(shutting.await(10, TimeUnit.SECONDS)).isTrue();
            } catch (InterruptedException e) {
              throw new AssertionError(e);
            }
          });
      f = new CompletableFuture<>();
      call.set(f);
      CompletableFuture<HttpResponse<String>> sync = f;
      new Thread(
              () -> {
                try {
                  sync.complete(client.send(get("/second"), HttpResponse.BodyHandlers.ofString()));
                } catch (IOException | InterruptedException | RuntimeException e) {
                  sync.completeExceptionally(e);
                }
              },
              "caller")
          .start();
    }
    Throwable withAgent = catchThrowable(() -> f.get(20, TimeUnit.SECONDS));
    shutter.join(20_000);
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> events.lines.stream().anyMatch(l -> l.startsWith("CALL_COMPLETE")));
    // What went out, and what the events told of it.
    assertThat(server.requestCount() + " requests, " + events.lines)
        .isEqualTo(
            "1 requests, [RATE_LIMITED 0, ATTEMPT 1, GIVE_UP 0 CANCELLED, CALL_COMPLETE 0"
                + " CANCELLED]");

    assertAsThePlainClientAfterShutdownNow(withAgent);
    assertToldAsARefusedFirstAttempt();
  }

  /** The application's client around the JDK's, whose shutdownNow() runs once {@code until}. */
  private static final class SlowShutdown extends DelegatingHttpClient {
    private final CountDownLatch shutting;
    private final java.util.concurrent.Callable<Boolean> until;

    SlowShutdown(
        HttpClient real, CountDownLatch shutting, java.util.concurrent.Callable<Boolean> until) {
      super(real);
      this.shutting = shutting;
      this.until = until;
    }

    public void shutdownNow() {
      shutting.countDown();
      await().atMost(Duration.ofSeconds(10)).until(until);
      FirstPermitGiveUpTest.shutdownNow(real);
    }
  }

  @Test
  void aFutureCancelledWhileTheFirstAttemptWaitsForItsPermit() throws Exception {
    takeTheOnlyPermit();
    time.holdTasks();
    CompletableFuture<HttpResponse<String>> f =
        client.sendAsync(get("/second"), HttpResponse.BodyHandlers.ofString());
    await().atMost(Duration.ofSeconds(10)).until(() -> time.heldTasks() == 1);

    f.cancel(true);
    time.runHeldTasks();

    assertThat(f.isCancelled()).isTrue();
    // The loop's own cancel ends the call before an attempt starts (AsyncRetryLoop.cancel): 0
    // attempts, none told.
    assertTold("RATE_LIMITED 0", "GIVE_UP 0 CANCELLED", "CALL_COMPLETE 0 CANCELLED");
    assertThePermitWentBack();
  }

  /**
   * The permit reserved for the given-up call (due 1 s after the first call's) went back: the next
   * call's is due then, not 1 s later behind the given-up call's.
   */
  private void assertThePermitWentBack() throws Exception {
    server.enqueue(ok("after the give-up"));
    HttpClient next =
        RetryingHttpClient.wrap(
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(), engine);
    assertThat(next.send(get("/next"), HttpResponse.BodyHandlers.ofString()).body())
        .isEqualTo("after the give-up");
    assertThat(time.nanoTime() - first).isEqualTo(TimeUnit.SECONDS.toNanos(1));
  }
}
