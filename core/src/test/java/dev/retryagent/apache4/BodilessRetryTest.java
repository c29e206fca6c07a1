package dev.retryagent.apache4;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.http.client.methods.HttpHead;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClients;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A retried response with no body (a HEAD's, HttpClient gives it no entity) on HttpClient 4.5
 * classic: released for its retry as any other. Before, the release threw a NullPointerException
 * (RawBody read the length of the entity that was not there), said on the error sink as the agent's
 * internal error at every such retry.
 */
class BodilessRetryTest {
  private final FakeTime time = new FakeTime();
  private final List<String> errors = new CopyOnWriteArrayList<>();
  private ScriptedHttpServer server;

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.close();
    }
  }

  @Test
  void aRetriedHeadIsReleasedWithoutAnInternalError() throws Exception {
    server = new ScriptedHttpServer();
    server.enqueue(status(503), status(503));
    server.otherwise(status(200));
    RetryEngine engine =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                r -> r.maxAttempts(3),
                Policy.defaults().budget(),
                Policy.defaults().circuitBreaker(),
                Policy.defaults().rateLimit())
            .errors(errors::add)
            .build();
    try (CloseableHttpClient c = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine)) {
      int code =
          c.execute(
              new HttpHead(server.url("/items")),
              (org.apache.http.client.ResponseHandler<Integer>)
                  r -> r.getStatusLine().getStatusCode());
      assertThat(code).isEqualTo(200);
    }
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(errors).isEmpty();
  }
}
