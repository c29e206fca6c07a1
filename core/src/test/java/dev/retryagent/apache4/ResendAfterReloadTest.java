package dev.retryagent.apache4;

import static dev.retryagent.testing.ScriptedHttpServer.Action.closeWithoutResponse;
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
import dev.retryagent.policy.TransportFailure;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.http.client.methods.HttpPost;
import org.apache.http.entity.ContentType;
import org.apache.http.entity.StringEntity;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.DefaultHttpRequestRetryHandler;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.util.EntityUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * HttpClient 4.5's own resend of a request counts as a retry, and a reload during a call's retry
 * wait that makes the rule for requests not safe to repeat stricter applies to each retry of the
 * call (docs/configuration.md, the reload section): so to HttpClient's resend inside the retry's
 * attempt too ({@code RetryCall.clientMayResend}, asked by {@link GovernedRetryHandler}).
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

  private static RetryPolicy.Builder connectOnly(RetryPolicy.Builder r) {
    // a 503 is ours to retry, a dropped connection is not: HttpClient's to resend
    return r.maxAttempts(3).retryOnTransport(EnumSet.of(TransportFailure.CONNECT));
  }

  /**
   * A POST without key begun under {@code unsafeMethods: always}: its 503 is retried, and during
   * the retry's wait the file is reloaded to {@code never}. The retry goes out (judged when the 503
   * came), on the kept-alive connection, which the server closes once it read the POST. HttpClient
   * (its handler resending requests already sent) would send it again by itself, a retry the rule
   * now in force refuses: the server must get the POST twice, the application the failure. Before,
   * the call judged HttpClient's resend by its own policy ({@code always}, an attempt left): the
   * server got the POST a third time and the application its 200. Without the reload, HttpClient's
   * resend is made as before (the control).
   */
  @ParameterizedTest(name = "reload {0}")
  @ValueSource(booleans = {false, true})
  void aReloadToNeverDuringTheRetryWaitKeepsHttpClientFromResendingThePost(boolean reload)
      throws Exception {
    AtomicReference<RetryEngine> engineRef = new AtomicReference<>();
    Policy never =
        new Policy(
            "test",
            connectOnly(RetryPolicy.builder()).unsafeMethods(UnsafeMethods.NEVER).build(),
            Policy.defaults().budget(),
            CircuitBreakerPolicy.builder().enabled(false).build(),
            Policy.defaults().rateLimit());
    RetryEngine engine =
        TestEngines.builder(
                time,
                Mode.ENFORCE,
                r -> connectOnly(r).unsafeMethods(UnsafeMethods.ALWAYS),
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
    client =
        RetryingCloseableHttpClient.wrap(
            HttpClients.custom().setRetryHandler(new DefaultHttpRequestRetryHandler(1, true)),
            engine);
    server.enqueue(status(503), closeWithoutResponse(), ok("charged again"));
    HttpPost post = new HttpPost(server.url("/v1/charges"));
    post.setEntity(new StringEntity("{}", ContentType.APPLICATION_JSON));

    String got;
    try {
      got =
          client.execute(
              post,
              r ->
                  r.getStatusLine().getStatusCode()
                      + " "
                      + (r.getEntity() == null ? "" : EntityUtils.toString(r.getEntity())));
    } catch (IOException e) {
      got = "failed";
    }

    if (reload) {
      assertThat(server.requestCount()).as("POSTs the server read").isEqualTo(2);
      assertThat(got).isEqualTo("failed");
    } else {
      assertThat(server.requestCount()).as("POSTs the server read").isEqualTo(3);
      assertThat(got).isEqualTo("200 charged again");
    }
  }
}
