package dev.retryagent.apache4;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.TestEngines;
import java.util.ArrayList;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClients;
import org.junit.jupiter.api.Test;

/** What {@link ApacheRetrying4} does before a call's first attempt, beside HttpClient's own. */
class ApacheRetrying4Test {
  private final RetryEngine engine =
      TestEngines.engine(
          new FakeTime(), Mode.ENFORCE, r -> r, CircuitBreakerPolicy.defaults(), new ArrayList<>());

  @Test
  void aNullRequestFailsAsHttpClientFailsIt() throws Exception {
    // HttpClient's doExecute says "HTTP request may not be null" (IllegalArgumentException); the
    // agent, which takes doExecute over, threw its own NullPointerException("request") instead.
    HttpHost host = new HttpHost("127.0.0.1", 9); // nothing is sent
    Throwable plain;
    try (CloseableHttpClient c = HttpClients.createDefault()) {
      plain = catchThrowable(() -> c.execute(host, (HttpRequest) null));
    }
    assertThat(plain).isInstanceOf(IllegalArgumentException.class);

    try (CloseableHttpClient c = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine)) {
      Throwable ours = catchThrowable(() -> c.execute(host, (HttpRequest) null));
      assertThat(ours).isExactlyInstanceOf(plain.getClass()).hasMessage(plain.getMessage());
    }
  }
}
