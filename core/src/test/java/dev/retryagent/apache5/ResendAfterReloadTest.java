package dev.retryagent.apache5;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hc.client5.http.classic.methods.HttpPost;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.hc.core5.util.TimeValue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * HttpClient 5's own resend of a request counts as a retry, and a reload during a call's retry wait
 * that makes the rule for requests not safe to repeat stricter applies to each retry of the call
 * (docs/configuration.md, the reload section): so to HttpClient's resend inside the retry's attempt
 * too ({@code RetryCall.clientMayResend}).
 */
class ResendAfterReloadTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private CloseableHttpClient client;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    if (client != null) {
      client.close();
    }
    server.close();
  }

  /**
   * A POST without key begun under {@code unsafeMethods: always}, {@code retryOn} statuses 502
   * only: its 502 is retried, and during the retry's wait the file is reloaded to {@code never}.
   * The retry goes out (judged when the 502 came) and gets a 503, which the policy does not retry
   * but HttpClient's strategy resends by itself: a retry the rule now in force refuses. The server
   * must get the POST twice, the application the 503. Before, the call judged HttpClient's resend
   * by its own policy ({@code always}, an attempt left): the server got the POST a third time and
   * the application its 200. Without the reload, HttpClient's resend is made as before (the
   * control).
   */
  @ParameterizedTest(name = "reload {0}")
  @ValueSource(booleans = {false, true})
  void aReloadToNeverDuringTheRetryWaitKeepsHttpClientFromResendingThePost(boolean reload)
      throws Exception {
    AtomicReference<RetryEngine> engineRef = new AtomicReference<>();
    Policy never =
        new Policy(
            "test",
            RetryPolicy.builder()
                .maxAttempts(3)
                .retryOnStatuses(StatusSet.of("502"))
                .unsafeMethods(UnsafeMethods.NEVER)
                .build(),
            Policy.defaults().budget(),
            CircuitBreakerPolicy.builder().enabled(false).build(),
            Policy.defaults().rateLimit());
    RetryEngine engine =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                r ->
                    r.maxAttempts(3)
                        .retryOnStatuses(StatusSet.of("502"))
                        .unsafeMethods(UnsafeMethods.ALWAYS),
                Policy.defaults().budget(),
                CircuitBreakerPolicy.builder().enabled(false).build(),
                Policy.defaults().rateLimit())
            .listener(
                new RetryListener() {
                  @Override
                  public void onRetry(RetryEvent e) {
                    if (reload) {
                      // told as the retry's wait begins
                      engineRef.get().reconfigure(Mode.ENFORCE, (m, h, p, path) -> never);
                    }
                  }
                })
            .build();
    engineRef.set(engine);
    // HttpClient's default strategy (it resends a POST answered 503), without its 1 s wait.
    client =
        RetryExecHandler.addTo(
                HttpClients.custom()
                    .setRetryStrategy(
                        new DefaultHttpRequestRetryStrategy(1, TimeValue.ZERO_MILLISECONDS)),
                engine)
            .build();
    server.enqueue(status(502), status(503), ok("charged again"));
    HttpPost post = new HttpPost(server.url("/v1/charges"));
    post.setEntity(new StringEntity("{}", ContentType.APPLICATION_JSON));

    String got =
        client.execute(
            post,
            r ->
                r.getCode()
                    + " "
                    + (r.getEntity() == null ? "" : EntityUtils.toString(r.getEntity())));

    if (reload) {
      assertThat(server.requestCount()).as("POSTs the server read").isEqualTo(2);
      assertThat(got).startsWith("503");
    } else {
      assertThat(server.requestCount()).as("POSTs the server read").isEqualTo(3);
      assertThat(got).isEqualTo("200 charged again");
    }
  }
}
