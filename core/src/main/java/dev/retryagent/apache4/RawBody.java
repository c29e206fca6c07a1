package dev.retryagent.apache4;

import dev.retryagent.internal.Discards;
import dev.retryagent.internal.Unwrapping;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import org.apache.http.HttpEntity;
import org.apache.http.client.entity.DecompressingEntity;
import org.apache.http.conn.ConnectionReleaseTrigger;
import org.apache.http.entity.HttpEntityWrapper;

/**
 * What the release of a retried response reads to keep its connection: the body as it came.
 *
 * <p>HttpClient's {@code ResponseContentEncoding} replaces a gzip or deflate entity with a {@link
 * DecompressingEntity}, whose stream ends at the gzip trailer: the connection's stream under it
 * never reaches its end, which is what gives the connection back to the pool, so the response's
 * close closed it and the retry opened another. The entity it wraps (HttpClient's own, with that
 * end) is read instead: within {@link Discards#LIMIT} bytes as they came, not decoded ones (a small
 * body may inflate past the limit), and nothing is decoded for a body nobody reads.
 */
final class RawBody {
  // Protected, and HttpCore 4.4 has no getter.
  private static final Field WRAPPED =
      Unwrapping.field(HttpEntityWrapper.class, "wrappedEntity", HttpEntity.class);

  private RawBody() {}

  /** The body as it came, or null when there is none to read. */
  static HttpEntity of(HttpEntity entity) {
    if (entity == null || !entity.isStreaming()) {
      return null;
    }
    return Unwrapping.innermost(
        entity, HttpEntity.class, WRAPPED, e -> e instanceof DecompressingEntity);
  }

  /**
   * Releases a retried response ({@link Discards#release}): its body as it came, read as far as it
   * has arrived when its length is known. Not a decoded one's: the decoder of the copy for a late
   * wait may have read part of it, and what remains cannot be told from what has arrived (read to
   * its end within the grace, as a chunked one and one with no length are: {@link Discards.Grace}).
   * A body not read to its end has its connection closed through {@link #abort}, never read, before
   * {@code close}.
   */
  static void release(HttpEntity entity, java.io.Closeable close) {
    HttpEntity raw = of(entity);
    Discards.release(
        raw == null ? null : raw::getContent,
        raw != null && raw == entity ? raw.getContentLength() : -1, // none: no body (HEAD, 204)
        () -> abort(raw),
        close);
  }

  /**
   * Closes the connection of {@code entity}'s body, from another thread than the one reading it (a
   * {@link Discards.Grace} that is over), without reading: HttpClient's stream of the body aborts
   * it ({@link ConnectionReleaseTrigger#abortConnection}, which closes the connection and gives it
   * back to the manager, not to be used again; a read under it then fails, or ends; on {@code
   * InternalHttpClient} what the response's close does before the body's end). Not the response's
   * close: the deprecated {@code AbstractHttpClient}'s reads the rest of the body, for as long as
   * the server holds it (on the caller's thread, or our scheduler's for a grace that is over).
   */
  static void abort(HttpEntity entity) throws IOException {
    HttpEntity raw = of(entity);
    InputStream in = raw == null ? null : raw.getContent();
    if (in instanceof ConnectionReleaseTrigger) {
      ((ConnectionReleaseTrigger) in).abortConnection();
    }
  }
}
