package dev.retryagent.apache5;

import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.internal.Discards;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import org.apache.hc.core5.function.Supplier;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.http.io.entity.AbstractHttpEntity;
import org.apache.hc.core5.http.message.BasicClassicHttpResponse;

/**
 * The body of a copy of a retried response, released before a retry's wait that then ended past the
 * call's deadline ({@link ResponseAccess#copyToGiveBack}): as HttpClient's own entity, one stream,
 * not repeatable, with the original's length, type and encoding strings, chunking and trailers.
 * Made only for a response released for a retry.
 */
final class GivenBackEntity extends AbstractHttpEntity {
  private final InputStream content;
  private final long length;
  private final List<? extends Header> trailers;

  private GivenBackEntity(HttpEntity original, byte[] bytes, List<? extends Header> trailers) {
    super(original.getContentType(), original.getContentEncoding(), original.isChunked());
    this.content = new ByteArrayInputStream(bytes);
    this.length = original.getContentLength();
    this.trailers = trailers;
  }

  /**
   * The copy of {@code response}: its status, reason, protocol version, headers and whole body,
   * detached from the connection; null when its body is over {@link ResponseAccess#GIVE_BACK_LIMIT}
   * bytes, or not all there ({@link Discards#readWhole}: with a length, as far as it has arrived;
   * else within a grace, its connection closed through {@code abort} once it is over). Reads the
   * body: bytes the release reads anyway. One of no length is done with then, read to its end or
   * its connection closed, and taken off {@code response}: the release that follows has none to
   * read, and gives it no grace of its own.
   */
  static ClassicHttpResponse copyOf(ClassicHttpResponse response, java.io.Closeable abort)
      throws IOException {
    HttpEntity entity = response.getEntity();
    GivenBackEntity body = null;
    if (entity != null) {
      HttpEntity raw = RawBody.of(entity);
      byte[] bytes =
          Discards.readWhole(
              entity.getContentLength(),
              entity::getContent,
              raw == null ? null : raw::getContent,
              ResponseAccess.GIVE_BACK_LIMIT,
              abort,
              () -> response.setEntity(null)); // done with: nothing left to release
      if (bytes == null) {
        return null; // longer: released as before, and nothing kept
      }
      // A chunked body's trailers came with its end, which was read.
      Supplier<List<? extends Header>> t = entity.getTrailers();
      body = new GivenBackEntity(entity, bytes, t == null ? null : t.get());
    }
    BasicClassicHttpResponse copy =
        new BasicClassicHttpResponse(response.getCode(), response.getReasonPhrase());
    copy.setVersion(response.getVersion());
    if (response.getLocale() != null) {
      copy.setLocale(response.getLocale()); // null as HttpClient parses one: it refuses a null
    }
    copy.setHeaders(response.getHeaders());
    copy.setEntity(body);
    return copy;
  }

  @Override
  public long getContentLength() {
    return length;
  }

  @Override
  public InputStream getContent() {
    return content;
  }

  @Override
  public boolean isStreaming() {
    return true;
  }

  @Override
  public Supplier<List<? extends Header>> getTrailers() {
    List<? extends Header> t = trailers;
    return t == null ? null : () -> t;
  }

  @Override
  public void close() throws IOException {
    content.close();
  }
}
