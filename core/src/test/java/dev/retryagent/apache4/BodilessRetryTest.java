package dev.retryagent.apache4;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.testing.BodilessRetryContract;
import org.apache.http.client.ResponseHandler;
import org.apache.http.client.methods.HttpHead;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClients;

/** {@link BodilessRetryContract} on HttpClient 4.5 classic. */
class BodilessRetryTest extends BodilessRetryContract {
  @Override
  protected int head(String url, RetryEngine engine) throws Exception {
    try (CloseableHttpClient c = RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine)) {
      return c.execute(
          new HttpHead(url), (ResponseHandler<Integer>) r -> r.getStatusLine().getStatusCode());
    }
  }
}
