package dev.retryagent.apache4;

import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.internal.FieldLines;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.Objects;
import org.apache.http.Header;
import org.apache.http.HttpEntity;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.DefaultHttpRequestRetryHandler;
import org.apache.http.impl.client.HttpClientBuilder;
import org.apache.http.protocol.HttpContext;

/**
 * Runs Apache HttpClient 4.5 calls through a {@link RetryEngine}, each attempt through a {@link
 * Transport} (for a hook or wrapper that makes attempts its own way; applications use {@link
 * RetryingCloseableHttpClient}): a client's own {@code execute(HttpHost, HttpRequest,
 * HttpContext)}, which every other {@code execute} overload (those with a {@code ResponseHandler}
 * included) comes down to. Used by {@link RetryingCloseableHttpClient} (by hand) and by the agent
 * (at {@code doExecute} of the client's own classes). Thread-safe; holds no per-call state.
 *
 * <ul>
 *   <li>Every response it retries is read (its connection goes back to the pool) and closed before
 *       the next attempt; the caller and its {@code ResponseHandler} only see the final one.
 *   <li>A non-repeatable entity ({@code isRepeatable() == false}, e.g. {@code InputStreamEntity})
 *       is never sent twice: once an attempt started to write the request, the call is not retried.
 *   <li>What HttpClient resends by itself inside an attempt ({@code DefaultHttpRequestRetryHandler}
 *       after an I/O failure, a {@code ServiceUnavailableRetryStrategy}) counts as attempts, seen
 *       through the attempt's {@code HttpContext}. A retry handler the builder was given governed
 *       ({@link #governRetries}) asks the call first: a failure the policy retries is then retried
 *       by us, never resent by HttpClient.
 *   <li>{@code abort()} of the request ends the wait between attempts within 50 ms.
 *   <li>Each of an attempt's timeouts (connection request, connect, socket) is the shorter of the
 *       client's own and the policy's bound ({@code perAttemptTimeout}, and for a retry the time
 *       left before {@code deadline}), the application's objects untouched ({@link
 *       BoundedContext}).
 * </ul>
 */
public final class ApacheRetrying4 {
  /** How one attempt is made. */
  @FunctionalInterface
  public interface Transport {
    CloseableHttpResponse execute(HttpHost target, HttpRequest request, HttpContext context)
        throws IOException;

    /**
     * The client each attempt is made on, when there is one; null (the default) when not known.
     * Read only for its connection manager: a connection of HttpClient's {@code
     * BasicHttpClientConnectionManager}, which puts the connection's socket timeout back when it is
     * released, cannot be told by itself from one of a manager of the application's own that does
     * not, so an attempt's bound is set on its socket timeout only when the client names that
     * manager (docs/apache-httpclient.md, Timeouts).
     */
    default CloseableHttpClient client() {
      return null;
    }
  }

  private final RetryEngine engine;

  public ApacheRetrying4(RetryEngine engine) {
    this.engine = Objects.requireNonNull(engine, "engine");
  }

  public RetryEngine engine() {
    return engine;
  }

  /**
   * For a builder just made (the agent's hook, at the end of its constructor): gives it
   * HttpClient's default retry handler ({@code DefaultHttpRequestRetryHandler}), governed by the
   * call in progress: a failure the policy retries is no longer resent by HttpClient, our retry
   * takes its place (docs/apache-httpclient.md). A handler the application sets afterwards replaces
   * it: it then resends as it likes, and its resends are counted (a retry of ours leaves room for
   * them).
   */
  public static HttpClientBuilder governRetries(HttpClientBuilder builder) {
    return builder.setRetryHandler(
        GovernedRetryHandler.around(DefaultHttpRequestRetryHandler.INSTANCE));
  }

  /**
   * Executes {@code request} with retries, as {@code CloseableHttpClient.execute(target, request,
   * context)} would: {@code target} may be null (the client then takes it from the request).
   */
  public CloseableHttpResponse execute(
      Transport transport, HttpHost target, HttpRequest request, HttpContext context)
      throws IOException {
    if (request == null) {
      // HttpClient refuses it as without the agent (IllegalArgumentException).
      return transport.execute(target, null, context);
    }
    Call4 call = engine.begin(new Call4(transport, target, request, context));
    if (call.passThrough()) {
      return transport.execute(target, request, context);
    }
    try {
      return SyncRetryLoop.execute(call, call, call, access);
    } catch (InterruptedException e) {
      // Only the wait can be interrupted, and SyncRetryLoop turns that into InterruptedIOException.
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted");
    } finally {
      call.restore();
    }
  }

  // One per client, not per call.
  private final ResponseAccess<CloseableHttpResponse> access =
      new ResponseAccess<CloseableHttpResponse>() {
        @Override
        public int status(CloseableHttpResponse response) {
          return response.getStatusLine().getStatusCode();
        }

        @Override
        public String header(CloseableHttpResponse response, String name) {
          // Every line (ResponseAccess#header): two scans, no array, for a header sent once.
          Header first = response.getFirstHeader(name);
          if (first == null || first == response.getLastHeader(name)) {
            return first == null ? null : first.getValue();
          }
          String lines = null;
          for (Header h : response.getHeaders(name)) {
            lines = FieldLines.add(lines, h.getValue());
          }
          return lines;
        }

        @Override
        public void discard(CloseableHttpResponse response) {
          // A body not read to its end has its connection closed unread through HttpClient's
          // stream of it (RawBody.abort), then the response is closed, which finds the
          // connection given back or closed already. Not the response's close alone: the
          // deprecated AbstractHttpClient's reads the rest of the body (InternalHttpClient's
          // closes the connection unread). The body as it came, not decoded (RawBody).
          RawBody.release(response.getEntity(), response);
        }

        @Override
        public CloseableHttpResponse copyToGiveBack(CloseableHttpResponse response)
            throws IOException {
          return GivenBackResponse.of(response);
        }

        @Override
        public boolean copyRatherThanKeep(CloseableHttpResponse response) {
          // Kept, it holds the pool's lease (two per route by default); one of unknown length
          // is tried too: over the limit, it is released without a copy.
          HttpEntity entity = response.getEntity();
          return entity == null || entity.getContentLength() <= GIVE_BACK_LIMIT;
        }

        @Override
        public boolean copyLeavesWhole(CloseableHttpResponse response) {
          // The copy reads the body (to its end, or as far as it has arrived): one that makes none
          // has read it away, but for a body declared over the limit, which it does not read.
          HttpEntity entity = response.getEntity();
          return entity == null || entity.getContentLength() > GIVE_BACK_LIMIT;
        }
      };
}
