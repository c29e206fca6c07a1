package dev.retryagent.testing;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A retried response with no body (a HEAD's: the client gives it no entity) is released for its
 * retry as any other, on each client line that extends this. Before, Apache classic's release threw
 * a NullPointerException (RawBody read the length of the entity that was not there), said on the
 * error sink as the agent's internal error at every such retry.
 */
public abstract class BodilessRetryContract {
  private final FakeTime time = new FakeTime();
  private final List<String> errors = new CopyOnWriteArrayList<>();
  private ScriptedHttpServer server;

  /** Sends a HEAD to {@code url} through the client decorated with {@code engine}; its status. */
  protected abstract int head(String url, RetryEngine engine) throws Exception;

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
    assertThat(head(server.url("/items"), engine)).isEqualTo(200);
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(errors).isEmpty();
  }
}
