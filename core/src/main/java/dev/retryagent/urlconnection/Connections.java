package dev.retryagent.urlconnection;

import dev.retryagent.internal.Discards;
import dev.retryagent.internal.TimeoutMillis;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;

/** What the exchange does with the JDK's connections, apart from the engine's steps. */
final class Connections {
  private Connections() {}

  /** The status line's code, which the JDK parsed already; -1 when none arrived. */
  static int statusOf(HttpURLConnection c) {
    try {
      return c.getResponseCode();
    } catch (IOException | RuntimeException e) {
      return -1; // a transport failure before the status line
    }
  }

  /**
   * Releases a response that will not reach the application without waiting for its body: what has
   * arrived of it is read (up to {@link Discards#LIMIT}) and the JDK's own close of the stream lets
   * go of the rest, as for an application that closes a body it did not read (the connection back
   * to the JDK's keep-alive cache when the end was read; a rest still coming skipped by the JDK's
   * keep-alive cleaner or its connection closed, never waited for). A body declared or read longer
   * than the limit has its connection closed (so has one whose body cannot be read). Read to its
   * end, a body the server still held kept the retry waiting, with the JDK's default read timeout
   * for ever, where the application without the agent had the response at its head.
   */
  static void discard(HttpURLConnection c, int status, Throwable failure) {
    if (c == null) {
      return;
    }
    if (status < 0) {
      c.disconnect();
      return;
    }
    try (InputStream in = failure == null ? c.getInputStream() : c.getErrorStream()) {
      if (in == null) {
        // getInputStream() threw and there is no error stream (below 400, e.g. a redirect whose
        // Location the JDK could not follow): the JDK still holds the connection, its body
        // unread, which nothing else would ever close.
        c.disconnect();
        return;
      }
      // The length only once the JDK has the response (a stream to read): asked of a connection
      // whose Expect was refused, JDK 17 sends the request again to answer it.
      if (c.getContentLengthLong() > Discards.LIMIT || !Discards.readArrived(in)) {
        c.disconnect();
      }
    } catch (IOException | RuntimeException e) {
      c.disconnect();
    }
  }

  /**
   * The timeout an attempt gets, or -1 to leave the connection's own unset.
   *
   * @param applicationMillis the application's timeout, -1 when it set none: a fresh connection
   *     then keeps the JDK's default (the system property {@code jdkDefault}, which the JDK applies
   *     only to a connection whose timeout was never set; an explicit 0 would mean none at all)
   * @param attemptNanos the attempt's share ({@code -1}: none)
   */
  static int attemptTimeout(int applicationMillis, String jdkDefault, long attemptNanos) {
    if (applicationMillis >= 0) {
      return TimeoutMillis.shorter(applicationMillis, attemptNanos);
    }
    if (attemptNanos < 0) {
      return -1;
    }
    // As the JDK reads it (sun.net.NetworkClient): a value of 0 or less is no default.
    int jdk = Integer.getInteger(jdkDefault, 0);
    return TimeoutMillis.shorter(Math.max(0, jdk), attemptNanos);
  }

  /**
   * Whether the JDK holds {@code c} connected: its request properties are refused then, the one
   * state it tells (read in JDK 17 and 25). Costs an exception for a connected one: asked only of
   * an attempt that failed without a response.
   */
  static boolean connected(HttpURLConnection c) {
    if (c == null) {
      return false;
    }
    try {
      c.getRequestProperties();
      return false;
    } catch (IllegalStateException e) {
      return true;
    }
  }

  static IOException rethrow(Throwable e) {
    if (e instanceof IOException) {
      return (IOException) e;
    }
    if (e instanceof RuntimeException) {
      throw (RuntimeException) e;
    }
    throw (Error) e;
  }

  /** Writes the held body, if any, to a fresh attempt (in its streaming mode, if any). */
  static void writeBody(HttpURLConnection c, RequestBody body) throws IOException {
    if (body != null) {
      try (OutputStream out = c.getOutputStream()) {
        out.write(body.bytes());
      }
    }
  }
}
