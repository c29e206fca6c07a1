package dev.retryagent.apache5;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.testing.BodilessRetryContract;
import org.apache.hc.client5.http.classic.methods.HttpHead;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;

/** {@link BodilessRetryContract} on HttpClient 5.x classic. */
class BodilessRetryTest extends BodilessRetryContract {
  @Override
  protected int head(String url, RetryEngine engine) throws Exception {
    try (CloseableHttpClient c = RetryExecHandler.addTo(HttpClients.custom(), engine).build()) {
      return c.execute(new HttpHead(url), r -> r.getCode());
    }
  }
}
