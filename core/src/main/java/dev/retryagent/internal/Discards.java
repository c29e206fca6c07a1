package dev.retryagent.internal;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;

/**
 * How much of a retried response's body an adapter reads to keep its connection: one bound for
 * every client. A short error body read to its end lets the connection go back to the pool (or the
 * JDK's keep-alive cache) for the retry; past the bound the connection is closed instead, so a
 * retry never waits for, nor downloads, a large or endless body the application would not have read
 * either (it gets the final response only).
 */
public final class Discards {
  /** Bytes of a retried response's body read to keep its connection; past them it is closed. */
  public static final int LIMIT = 64 * 1024;

  private Discards() {}

  /**
   * Reads {@code in} to its end if that comes within {@link #LIMIT} bytes (true); false when more
   * remains, and the caller closes the connection rather than read on. Does not close {@code in}.
   */
  public static boolean readToEnd(InputStream in) throws IOException {
    byte[] buffer = new byte[4096];
    long total = 0;
    for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
      total += n;
      if (total > LIMIT) {
        return false;
      }
    }
    return true;
  }

  /**
   * Reads what has arrived of {@code in} without waiting for more: true when that stays within
   * {@link #LIMIT} bytes (the end of the body, or what was there of it), false past it, and the
   * caller closes the connection rather than read on. For a client whose own close of a body stream
   * never blocks and keeps the connection when the end was read ({@code HttpURLConnection}): a body
   * still coming is then the client's to let go of, where {@link #readToEnd} waited for it as long
   * as the server held it (with the JDK's default read timeout, for ever). Does not close {@code
   * in}.
   */
  public static boolean readArrived(InputStream in) throws IOException {
    byte[] buffer = new byte[4096];
    long total = 0;
    for (int ready = in.available(); ready > 0; ready = in.available()) {
      int n = in.read(buffer, 0, Math.min(ready, buffer.length));
      if (n < 0) {
        return true;
      }
      total += n;
      if (total > LIMIT) {
        return false;
      }
    }
    return true;
  }

  /**
   * The whole body of a retried response, for a copy of it (ResponseAccess's copyToGiveBack): its
   * bytes when it ends within {@code limit}, read before {@link #release} reads what remains; null
   * when it is longer (not read at all when {@code contentLength} says so, else read one byte past
   * the limit). Does not close the stream.
   */
  public static byte[] readWhole(long contentLength, Content content, int limit)
      throws IOException {
    if (contentLength > limit) {
      return null;
    }
    InputStream in = content.open();
    if (in == null) {
      return new byte[0];
    }
    byte[] buffer = new byte[limit + 1];
    int total = 0;
    for (int n = in.read(buffer, 0, buffer.length);
        n >= 0;
        n = in.read(buffer, total, buffer.length - total)) {
      total += n;
      if (total > limit) {
        return null;
      }
    }
    return java.util.Arrays.copyOf(buffer, total);
  }

  /** A retried response's body, opened only to be read ({@link #release}). */
  public interface Content {
    /** The body's stream, or null when it has none to read. */
    InputStream open() throws IOException;
  }

  /**
   * Lets go of a retried response whose client reads its body from a stream (Apache HttpClient):
   * {@code content} (null: no body) read to its end within {@link #LIMIT} gives the connection back
   * to the pool for the next attempt; when more remains, or the read fails, {@code closeUnread}
   * closes the connection first, because the stream's close, as the response's, would read the rest
   * (a 1 GB or endless error body before the retry). {@code close} then releases the response.
   * Neither close throws.
   */
  public static void release(Content content, Closeable closeUnread, Closeable close) {
    boolean whole;
    try {
      InputStream in = content == null ? null : content.open();
      whole = in == null || readToEnd(in);
    } catch (IOException | RuntimeException e) {
      whole = false;
    }
    if (!whole) {
      closeQuietly(closeUnread);
    }
    closeQuietly(close);
  }

  private static void closeQuietly(Closeable c) {
    try {
      c.close();
    } catch (IOException | RuntimeException ignored) {
      // nothing more to release
    }
  }
}
