package dev.retryagent.apache4;

import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.internal.Discards;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import org.apache.http.HttpEntity;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.entity.BasicHttpEntity;
import org.apache.http.impl.EnglishReasonPhraseCatalog;
import org.apache.http.message.BasicHttpResponse;

/**
 * A copy of a retried response, released before a retry's wait that then ended past the call's
 * deadline ({@link ResponseAccess#copyToGiveBack}): the status line (protocol version, status,
 * reason), headers, locale and whole body, detached from the connection, which the call ends with
 * as if not retried. Its entity is as HttpClient's own: one stream, not repeatable, with the
 * original's length, type, encoding and chunking. Made only for a response released for a retry.
 */
final class GivenBackResponse extends BasicHttpResponse implements CloseableHttpResponse {
  private GivenBackResponse(CloseableHttpResponse response) {
    super(response.getStatusLine(), EnglishReasonPhraseCatalog.INSTANCE, response.getLocale());
  }

  /**
   * The copy of {@code response}, or null when its body is over {@link
   * ResponseAccess#GIVE_BACK_LIMIT} bytes, or not all there ({@link Discards#readWhole}: with a
   * length, as far as it has arrived; else within a grace, its connection closed once it is over).
   * Reads the body: bytes the release reads anyway. One of no length is done with then, read to its
   * end or its connection closed, and taken off {@code response}: the release that follows has none
   * to read, and gives it no grace of its own.
   */
  @SuppressWarnings("deprecation") // the params, as the response had them
  static CloseableHttpResponse of(CloseableHttpResponse response) throws IOException {
    HttpEntity entity = response.getEntity();
    BasicHttpEntity body = null;
    if (entity != null) {
      HttpEntity raw = RawBody.of(entity);
      byte[] bytes =
          Discards.readWhole(
              entity.getContentLength(),
              entity::getContent,
              raw == null ? null : raw::getContent,
              ResponseAccess.GIVE_BACK_LIMIT,
              () -> RawBody.abort(entity),
              () -> response.setEntity(null)); // done with: nothing left to release
      if (bytes == null) {
        return null; // longer: released as before, and nothing kept
      }
      body = new BasicHttpEntity();
      body.setContent(new ByteArrayInputStream(bytes));
      body.setContentLength(entity.getContentLength());
      body.setContentType(entity.getContentType());
      body.setContentEncoding(entity.getContentEncoding());
      body.setChunked(entity.isChunked());
    }
    GivenBackResponse copy = new GivenBackResponse(response);
    copy.setHeaders(response.getAllHeaders());
    copy.setParams(response.getParams());
    copy.setEntity(body);
    return copy;
  }

  /** Nothing to release: the connection went back (or was closed) as the original was released. */
  @Override
  public void close() {
    // as HttpClient's response after its body was read to its end
  }
}
