package dev.retryagent.jdk;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code obtrudeValue} and {@code obtrudeException} on {@code sendAsync}'s future and on the stages
 * that depend on it: the JDK's are {@code MinimalFuture}s, which refuse both with an {@link
 * UnsupportedOperationException}; with the agent too. (Before, the caller's future took the value:
 * the call's end was skipped, its retry's wait went on, and the retry was sent.)
 */
class ObtrudeTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final HttpClient real =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  private HttpRequest get() {
    return HttpRequest.newBuilder(URI.create(server.url("/v1/items"))).build();
  }

  private HttpClient ours(HttpClient client) {
    return RetryingHttpClient.wrap(
        client,
        TestEngines.engine(time, Mode.ENFORCE, b -> b, CircuitBreakerPolicy.defaults(), events));
  }

  /** What each obtrude does on {@code f} and on two stages depending on it, in order. */
  private static List<String> obtrudes(CompletableFuture<HttpResponse<String>> f) {
    List<String> out = new ArrayList<>();
    out.add(name(catchThrowable(() -> f.obtrudeValue(null))));
    out.add(name(catchThrowable(() -> f.obtrudeException(new IOException("x")))));
    CompletableFuture<HttpResponse<String>> dependent = f.thenApply(r -> r);
    out.add(name(catchThrowable(() -> dependent.obtrudeValue(null))));
    CompletableFuture<Integer> further = dependent.thenApply(r -> 1);
    out.add(name(catchThrowable(() -> further.obtrudeException(new IOException("x")))));
    return out;
  }

  private static String name(Throwable t) {
    return t == null ? "taken" : t.getClass().getSimpleName();
  }

  @Test
  void obtrudeIsRefusedAsOnTheJdksFutureAndTheCallGoesOnToItsRetry() throws Exception {
    server.otherwise(ok("plain"));
    CompletableFuture<HttpResponse<String>> plain =
        real.sendAsync(get(), HttpResponse.BodyHandlers.ofString());
    List<String> jdk = obtrudes(plain);
    assertThat(jdk).containsOnly("UnsupportedOperationException");
    assertThat(plain.get(20, TimeUnit.SECONDS).body()).isEqualTo("plain");

    // Ours, while the call waits for its retry.
    time.holdTasks();
    server.enqueue(status(503), ok("fine"));
    CompletableFuture<HttpResponse<String>> f =
        ours(real).sendAsync(get(), HttpResponse.BodyHandlers.ofString());
    Awaitility.await().until(() -> time.heldTasks() == 1);
    assertThat(obtrudes(f)).isEqualTo(jdk);
    assertThat(f).isNotDone();
    time.runHeldTasks();
    assertThat(f.get(20, TimeUnit.SECONDS).body()).isEqualTo("fine");
    assertThat(obtrudes(f)).isEqualTo(jdk); // and once done
  }

  @Test
  void obtrudeOnTheRefusalOfAClientShutDownIsRefusedAsTheJdksIs() throws Exception {
    assumeTrue(Runtime.version().feature() >= 21, "HttpClient.shutdown() is Java 21's");
    HttpClient own = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpClient.class.getMethod("shutdown").invoke(own);
    List<String> jdk = obtrudes(own.sendAsync(get(), HttpResponse.BodyHandlers.ofString()));
    assertThat(jdk).containsOnly("UnsupportedOperationException");

    HttpClient client = ours(HttpClient.newBuilder().build());
    HttpClient.class.getMethod("shutdown").invoke(client);
    assertThat(obtrudes(client.sendAsync(get(), HttpResponse.BodyHandlers.ofString())))
        .isEqualTo(jdk);
  }
}
