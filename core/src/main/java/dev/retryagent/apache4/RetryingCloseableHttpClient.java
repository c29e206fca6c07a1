package dev.retryagent.apache4;

import dev.retryagent.engine.RetryEngine;
import java.io.IOException;
import java.util.Objects;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.protocol.HttpContext;

/**
 * An Apache HttpClient 4.5 client with retries, around any {@code CloseableHttpClient}: HttpClient
 * 4.5 has no public way to add a handler to a client's execution chain, so the retries wrap the
 * client. Every {@code execute} overload, those with a {@code ResponseHandler} included, goes
 * through {@link #doExecute}, and each attempt through the wrapped client's own {@code execute}.
 *
 * <pre>{@code
 * CloseableHttpClient client =
 *     RetryingCloseableHttpClient.wrap(HttpClients.createDefault(), engine);
 * }</pre>
 *
 * <p>Behaviour as {@link ApacheRetrying4} describes; closing it closes the wrapped client.
 */
public final class RetryingCloseableHttpClient extends CloseableHttpClient {
  private final CloseableHttpClient client;
  private final ApacheRetrying4 retrying;

  private RetryingCloseableHttpClient(CloseableHttpClient client, RetryEngine engine) {
    this.client = Objects.requireNonNull(client, "client");
    this.retrying = new ApacheRetrying4(engine);
  }

  /** {@code client} with retries from {@code engine}. */
  public static CloseableHttpClient wrap(CloseableHttpClient client, RetryEngine engine) {
    return new RetryingCloseableHttpClient(client, engine);
  }

  @Override
  protected CloseableHttpResponse doExecute(
      HttpHost target, HttpRequest request, HttpContext context) throws IOException {
    return retrying.execute(client::execute, target, request, context);
  }

  @Override
  public void close() throws IOException {
    client.close();
  }

  @Override
  @Deprecated
  @SuppressWarnings("deprecation")
  public org.apache.http.params.HttpParams getParams() {
    return client.getParams();
  }

  @Override
  @Deprecated
  @SuppressWarnings("deprecation")
  public org.apache.http.conn.ClientConnectionManager getConnectionManager() {
    return client.getConnectionManager();
  }
}
