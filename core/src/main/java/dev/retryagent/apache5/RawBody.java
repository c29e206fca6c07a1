package dev.retryagent.apache5;

import dev.retryagent.internal.Discards;
import dev.retryagent.internal.Unwrapping;
import java.lang.reflect.Field;
import org.apache.hc.client5.http.entity.DecompressingEntity;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.http.io.entity.HttpEntityWrapper;

/**
 * What the release of a retried response reads to keep its connection: the body as it came.
 *
 * <p>HttpClient's {@code ContentCompressionExec} replaces a gzip, deflate or brotli entity with a
 * decompressing one ({@link DecompressingEntity}; from 5.6 {@code
 * org.apache.hc.client5.http.entity.compress.DecompressingEntity}), whose stream ends at the gzip
 * trailer: the connection's stream under it never reaches its end, which is what gives the
 * connection back to the pool, so the response's close closed it and the retry opened another. The
 * entity it wraps (HttpClient's own, with that end) is read instead: within {@link Discards#LIMIT}
 * bytes as they came, not decoded ones (a small body may inflate past the limit), and nothing is
 * decoded for a body nobody reads.
 */
final class RawBody {
  private static final String DECOMPRESSING_5_6 =
      "org.apache.hc.client5.http.entity.compress.DecompressingEntity";
  // Private, and HttpCore 5 has no getter.
  private static final Field WRAPPED =
      Unwrapping.field(HttpEntityWrapper.class, "wrappedEntity", HttpEntity.class);

  private RawBody() {}

  /** The body as it came, or null when there is none to read. */
  static HttpEntity of(HttpEntity entity) {
    if (entity == null || !entity.isStreaming()) {
      return null;
    }
    return Unwrapping.innermost(entity, HttpEntity.class, WRAPPED, RawBody::decompressing);
  }

  /**
   * Releases a retried response ({@link Discards#release}): its body as it came, read as far as it
   * has arrived when its length is known. Not a decoded one's: the decoder of the copy for a late
   * wait may have read part of it, and what remains cannot be told from what has arrived (read to
   * its end within the grace, as a chunked one and one with no length are: {@link Discards.Grace}).
   * {@code closeUnread} closes the connection unread, also from another thread than the one reading
   * (the grace's).
   */
  static void release(HttpEntity entity, java.io.Closeable closeUnread, java.io.Closeable close) {
    HttpEntity raw = of(entity);
    Discards.release(
        raw == null ? null : raw::getContent,
        raw != null && raw == entity ? raw.getContentLength() : -1, // none: no body (HEAD, 204)
        closeUnread,
        close);
  }

  /**
   * Only decompressing layers: HttpClient's {@code ResponseEntityProxy}, a wrapper too, gives the
   * connection back at the end of its stream.
   */
  private static boolean decompressing(Object e) {
    return e instanceof DecompressingEntity
        || (e instanceof HttpEntityWrapper && e.getClass().getName().equals(DECOMPRESSING_5_6));
  }
}
