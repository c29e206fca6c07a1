package dev.retryagent.guarantees;

import static dev.retryagent.testing.ScriptedHttpServer.Action.reset;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.engine.PolicyResolver;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.RefusingPort;
import dev.retryagent.testing.ScriptedHttpServer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A reload during the wait before a POST's retry: the operator who reloads {@code unsafeMethods:
 * always} to {@code never} to stop duplicate charges stops the retries already waiting too (the
 * stricter of the call's rule and the one now in force). Before, the call kept the rule it began
 * with, and the server got the POST again after the reload. The other direction is unchanged: a
 * reload never makes a call under way retry what its own rule refused.
 */
class ReloadDuringRetryTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final AtomicReference<UnsafeMethods> onFirstRetry = new AtomicReference<>();

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  private static PolicyResolver rule(UnsafeMethods unsafe) {
    Policy d = Policy.defaults();
    Policy p =
        new Policy(
            "test",
            RetryPolicy.builder().maxAttempts(3).unsafeMethods(unsafe).build(),
            d.budget(),
            CircuitBreakerPolicy.defaults(),
            d.rateLimit());
    return (method, host, port, path) -> p;
  }

  private RetryEngine engine(UnsafeMethods unsafe) {
    AtomicReference<RetryEngine> self = new AtomicReference<>();
    RetryEngine e =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .mode(Mode.ENFORCE)
            .policies(rule(unsafe))
            .listener(
                new RetryListener() {
                  @Override
                  public void onRetry(RetryEvent event) {
                    events.add(event);
                    // The retry is decided, its wait about to begin: the operator reloads now.
                    UnsafeMethods reload = onFirstRetry.getAndSet(null);
                    if (reload != null) {
                      self.get().reconfigure(Mode.ENFORCE, rule(reload));
                    }
                  }
                })
            .build();
    self.set(e);
    return e;
  }

  private String post(RetryEngine engine, String url) throws Exception {
    HttpClient client = RetryingHttpClient.wrap(HttpClient.newHttpClient(), engine);
    HttpRequest post =
        HttpRequest.newBuilder(URI.create(url))
            .POST(HttpRequest.BodyPublishers.ofString("{}"))
            .build();
    return "" + client.send(post, HttpResponse.BodyHandlers.ofString()).statusCode();
  }

  private long retries() {
    return events.stream().filter(e -> e.type() == RetryEvent.Type.RETRY).count();
  }

  @Test
  void aReloadToNeverDuringThePostsWaitStopsItsRetry() {
    server.otherwise(reset());
    onFirstRetry.set(UnsafeMethods.NEVER);

    assertThatThrownBy(() -> post(engine(UnsafeMethods.ALWAYS), server.url("/charge")))
        .isInstanceOf(IOException.class);

    // Before: three POSTs, the last two after the reload to never.
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(retries()).isEqualTo(1); // the one decided before the reload
  }

  @Test
  void aPostAnswered503IsJudgedByTheRuleNowInForceAtItsNextDecision() throws Exception {
    // A response's retry is judged when the response arrives (it may be released for the retry,
    // so the wait's end does not judge it again): the retry decided before the reload is made, and
    // the next 503 is judged under never and goes back as it came.
    server.otherwise(status(503));
    onFirstRetry.set(UnsafeMethods.NEVER);

    assertThat(post(engine(UnsafeMethods.ALWAYS), server.url("/charge"))).isEqualTo("503");

    // Before: three POSTs.
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(retries()).isEqualTo(1);
  }

  @Test
  void aReloadToAlwaysDuringTheWaitChangesNothing() throws Exception {
    // The reverse: a POST refused on its own connection is retried under if-not-sent, as before;
    // a reload to always during the wait neither adds nor removes an attempt.
    try (RefusingPort refusing = new RefusingPort()) {
      onFirstRetry.set(UnsafeMethods.ALWAYS);
      assertThatThrownBy(() -> post(engine(UnsafeMethods.IF_NOT_SENT), refusing.url("/charge")))
          .isInstanceOf(java.net.ConnectException.class);
      assertThat(retries()).isEqualTo(2);
    }
  }

  @Test
  void aReloadToNeverDuringTheWaitOfAGetChangesNothing() throws Exception {
    server.otherwise(status(503));
    onFirstRetry.set(UnsafeMethods.NEVER);
    HttpClient client =
        RetryingHttpClient.wrap(HttpClient.newHttpClient(), engine(UnsafeMethods.ALWAYS));

    HttpResponse<String> r =
        client.send(
            HttpRequest.newBuilder(URI.create(server.url("/read"))).build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(3);
  }
}
