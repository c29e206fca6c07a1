package dev.retryagent.internal.apache;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;

/**
 * Tells the application's failure from the connection's while HttpClient has the application's
 * request entity write itself ({@code HttpEntity.writeTo(OutputStream)}): the entity is handed a
 * stream over the connection's that notes any failure of the connection's. An exception out of
 * {@code writeTo} after none did is the application's own (its source failed: a disk, another
 * server's stream, its own bug), not the host's, and is noted in the attempt's {@link ExchangeLog}
 * ({@link ExchangeLog#applicationFailed}). Once the connection failed, whatever {@code writeTo}
 * throws is the connection's (an application may wrap the failure in one of its own).
 */
public final class BodyWrites {
  private BodyWrites() {}

  /** An entity's own {@code writeTo}: what the wrappers of HttpClient 4.5 and 5.x hand on to. */
  public interface Write {
    void writeTo(OutputStream out) throws IOException;
  }

  /**
   * Has the application's entity write itself ({@code entity}, its own {@code writeTo}) to a stream
   * over the connection's {@code out}, the body framed with {@code length} (-1: none, or chunked).
   * What the entity throws while the connection's stream did not fail is noted in {@code log} as
   * the application's ({@link ExchangeLog#applicationFailed}), with whether the client ends a
   * chunked body it began all the same ({@code endsChunkedBody}: HttpCore 5 closes the stream in
   * any case, HttpCore 4.4 leaves it cut); so is an entity that returns having written less than
   * {@code length} ({@link ExchangeLog#shortBody}): HttpCore sends what it wrote, raises nothing,
   * and the server waits for the rest, so the failure that ends the exchange (the client's read
   * timeout, the server's giving up) is of the application's making. One that wrote more is cut at
   * its length by HttpCore: the request is whole.
   */
  public static void writeTo(
      Write entity, OutputStream out, long length, boolean endsChunkedBody, ExchangeLog log)
      throws IOException {
    Guarded guarded = new Guarded(out);
    try {
      entity.writeTo(guarded);
    } catch (IOException | RuntimeException e) {
      if (!guarded.failed && log != null) {
        log.applicationFailed(e, length < 0 && endsChunkedBody);
      }
      throw e;
    }
    if (length >= 0 && guarded.written < length && !guarded.failed && log != null) {
      log.shortBody();
    }
  }

  /** The connection's stream, noting whether it failed. Not thread-safe, as the stream is not. */
  private static final class Guarded extends FilterOutputStream {
    private boolean failed;
    private long written; // the bytes the entity wrote, as it gave them

    Guarded(OutputStream out) {
      super(out);
    }

    @Override
    public void write(int b) throws IOException {
      written++;
      try {
        out.write(b);
      } catch (IOException | RuntimeException e) {
        failed = true;
        throw e;
      }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      // FilterOutputStream would write byte by byte.
      written += len;
      try {
        out.write(b, off, len);
      } catch (IOException | RuntimeException e) {
        failed = true;
        throw e;
      }
    }

    @Override
    public void flush() throws IOException {
      try {
        out.flush();
      } catch (IOException | RuntimeException e) {
        failed = true;
        throw e;
      }
    }

    @Override
    public void close() throws IOException {
      // FilterOutputStream's close flushes first and would hide which of the two failed.
      try {
        out.close();
      } catch (IOException | RuntimeException e) {
        failed = true;
        throw e;
      }
    }
  }
}
