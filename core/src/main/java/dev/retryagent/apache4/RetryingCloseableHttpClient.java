package dev.retryagent.apache4;

import dev.retryagent.engine.RetryEngine;
import java.io.IOException;
import java.util.Objects;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClientBuilder;
import org.apache.http.protocol.HttpContext;

/**
 * An Apache HttpClient 4.5 client with retries, around any {@code CloseableHttpClient}: HttpClient
 * 4.5 has no public way to add a handler to a client's execution chain, so the retries wrap the
 * client. Every {@code execute} overload, those with a {@code ResponseHandler} included, goes
 * through {@link #doExecute}, and each attempt through the wrapped client's own {@code execute}.
 *
 * <pre>{@code
 * CloseableHttpClient client =
 *     RetryingCloseableHttpClient.wrap(HttpClients.custom(), engine);
 * }</pre>
 *
 * <p>Given the builder, it also governs HttpClient's own retry handler (which resends a GET up to 3
 * times after an I/O failure): a failure the policy retries is retried by us, never resent by
 * HttpClient, so {@code maxAttempts} bounds what the server sees. Given a client already built,
 * HttpClient's resends are counted as attempts but not governed.
 *
 * <p>Behaviour as {@link ApacheRetrying4} describes; closing it closes the wrapped client.
 * Thread-safe, as the client it wraps.
 */
public final class RetryingCloseableHttpClient extends CloseableHttpClient {
  private final CloseableHttpClient client;
  private final ApacheRetrying4 retrying;
  private final DirectTransport transport;

  private RetryingCloseableHttpClient(CloseableHttpClient client, RetryEngine engine) {
    this.client = Objects.requireNonNull(client, "client");
    this.retrying = new ApacheRetrying4(engine);
    this.transport = new DirectTransport(client);
  }

  /** {@code client} with retries from {@code engine}. */
  public static CloseableHttpClient wrap(CloseableHttpClient client, RetryEngine engine) {
    return new RetryingCloseableHttpClient(client, engine);
  }

  /**
   * The client {@code builder} builds, with retries from {@code engine}, and the retry handler the
   * builder has now (the application's own, or HttpClient's default) governed by each call: see
   * {@link ApacheRetrying4#governRetries}. When the builder's handler cannot be read it is left as
   * it is, and its resends are counted, never governed.
   */
  public static CloseableHttpClient wrap(HttpClientBuilder builder, RetryEngine engine) {
    GovernedRetryHandler.govern(builder);
    return wrap(builder.build(), engine);
  }

  @Override
  protected CloseableHttpResponse doExecute(
      HttpHost target, HttpRequest request, HttpContext context) throws IOException {
    return retrying.execute(transport, target, request, context);
  }

  /**
   * Each attempt is the wrapped client's own {@code execute}.
   *
   * <p>A class of its own, holding the wrapped client in a field of its own: the retry agent, when
   * it runs in the same JVM, recognises the application's copy of this class and sends {@link
   * #execute} straight to {@code client} past its own HttpClient hook, so that a call is retried by
   * the library alone, not by both (each of the library's attempts would otherwise be retried by
   * the agent too). Keep the class's name and the field's name and type.
   */
  private static final class DirectTransport implements ApacheRetrying4.Transport {
    private final CloseableHttpClient client;

    DirectTransport(CloseableHttpClient client) {
      this.client = client;
    }

    @Override
    public CloseableHttpResponse execute(HttpHost target, HttpRequest request, HttpContext context)
        throws IOException {
      return client.execute(target, request, context);
    }

    @Override
    public CloseableHttpClient client() {
      return client;
    }
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
