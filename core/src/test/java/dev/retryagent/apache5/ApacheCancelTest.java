package dev.retryagent.apache5;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.io.HttpClientResponseHandler;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code cancel()} of an HttpClient 5 request during an attempt: a real client on a loopback server
 * that answers late; the caller cancels once the server has the request.
 */
class ApacheCancelTest {
  private static final HttpClientResponseHandler<String> BODY =
      r -> EntityUtils.toString(r.getEntity());
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private ScriptedHttpServer server;

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.close();
    }
  }

  private Throwable cancelledCall(CloseableHttpClient client) throws Exception {
    int before = server.requestCount();
    HttpGet get = new HttpGet(server.url("/items"));
    CompletableFuture<Throwable> outcome =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                client.execute(get, BODY);
                return null;
              } catch (Throwable e) {
                return e;
              }
            });
    await().atMost(Duration.ofSeconds(5)).until(() -> server.requestCount() > before);
    get.cancel();
    return outcome.get(5, TimeUnit.SECONDS);
  }

  @Test
  void aCancelDuringAnAttemptFailsAsWithoutUsAndIsNotTheHostsFailureForTheBreaker()
      throws Exception {
    server = new ScriptedHttpServer();
    server.otherwise(status(200).body("ok").delay(3000));
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      plain = cancelledCall(c);
    }
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            r -> r.maxAttempts(3),
            CircuitBreakerPolicy.builder()
                .countWindow(2)
                .minimumCalls(2)
                .openFor(Duration.ofSeconds(100))
                .halfOpenCalls(1)
                .build(),
            events);
    try (CloseableHttpClient c = RetryExecHandler.addTo(HttpClients.custom(), engine).build()) {
      Throwable a = cancelledCall(c);
      Throwable b = cancelledCall(c);
      // HttpClient 5 fails it as "Request aborted" (RequestFailedException), a cancel already.
      assertThat(a).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
      assertThat(b).isExactlyInstanceOf(plain.getClass());
      assertThat(server.requestCount()).isEqualTo(3);
      server.otherwise(status(200).body("ok"));
      assertThat(c.execute(new HttpGet(server.url("/x")), BODY)).isEqualTo("ok");
    }
  }
}
