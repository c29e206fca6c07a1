package dev.retryagent.jdk;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.EventTypes;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A {@code sendAsync} through the real client whose listener blocks (an application's, stuck on
 * I/O) as the retry is decided on the client's thread: the application's {@code cancel} of the
 * future returns meanwhile, as without the agent, where before it waited for the listener (the
 * call's events were told under its lock, engine/CallEvents).
 */
class SendAsyncBlockingListenerTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final CountDownLatch entered = new CountDownLatch(1);
  private final CountDownLatch release = new CountDownLatch(1);
  private ScriptedHttpServer server;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    release.countDown(); // a failed test leaves no thread blocked
    server.close();
  }

  /** Every call event's type, in order; blocks in {@code onRetry} until {@link #release}. */
  private final EventTypes heard = EventTypes.blockingOnRetry(entered, release);

  @Test
  void aCancelWhileAListenerBlocksOnTheRetryReturnsAndTheEventsFollowInOrder() throws Exception {
    FakeTime time = new FakeTime();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .mode(Mode.ENFORCE)
            .policy(Policy.defaults())
            .listener(heard)
            .build();
    HttpClient client =
        RetryingHttpClient.wrap(
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(), engine);
    server.enqueue(status(503), ok("never"));

    CompletableFuture<HttpResponse<String>> response =
        client.sendAsync(
            HttpRequest.newBuilder(URI.create(server.url("/503"))).build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<Boolean> cancelling =
        CompletableFuture.supplyAsync(() -> response.cancel(true));
    await().atMost(WAIT).until(cancelling::isDone);

    assertThat(cancelling.join()).isTrue();
    assertThat(response).isCancelled();
    release.countDown();
    await().atMost(WAIT).until(() -> heard.types.contains(RetryEvent.Type.CALL_COMPLETE));
    assertThat(heard.types)
        .containsExactly(
            RetryEvent.Type.ATTEMPT,
            RetryEvent.Type.RETRY,
            RetryEvent.Type.GIVE_UP,
            RetryEvent.Type.CALL_COMPLETE);
    assertThat(server.awaitRequests(1)).isEqualTo(requests(1));
    await().atMost(WAIT).until(() -> engine.pendingAsyncRetries() == 0);
  }
}
