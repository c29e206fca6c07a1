package dev.retryagent.internal;

import dev.retryagent.engine.Scheduler;
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

  /**
   * How long a retried body is read with reads that may wait, before its connection is closed under
   * them: a body whose end cannot be told from what has arrived (Apache HttpClient classic:
   * chunked, with no length, or one HttpClient decodes; {@link Grace}). A body that has arrived is
   * read well within it; one the server holds is not waited for. Also the least java.net.http waits
   * for one.
   */
  public static final long GRACE_NANOS = 250_000_000L;

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
   * the limit). A body of a known length is read only as far as it has arrived, never waited for
   * ({@link #readArrivedToEnd}): null when not all of it is there; its end then read gives the
   * connection back. One of no known length (below 0) is done with here ({@link #readWithinGrace}),
   * also when a read fails, and {@code doneWith} then takes it off the response: the release has
   * nothing more of it to read. Does not close the stream.
   *
   * @param raw the body as it came ({@code content} itself, or what a decoder of it reads), for a
   *     body of no known length
   */
  public static byte[] readWhole(
      long contentLength,
      Content content,
      Content raw,
      int limit,
      Closeable abort,
      Runnable doneWith)
      throws IOException {
    if (contentLength > limit) {
      return null;
    }
    if (contentLength < 0) {
      try {
        return readWithinGrace(content, raw, limit, abort);
      } finally {
        doneWith.run();
      }
    }
    InputStream in = content.open();
    if (in == null) {
      return new byte[0];
    }
    byte[] bytes = new byte[(int) contentLength];
    int total = 0;
    for (int ready = in.available(); total < bytes.length; ready = in.available()) {
      int n = ready <= 0 ? -1 : in.read(bytes, total, Math.min(ready, bytes.length - total));
      if (n < 0) {
        return null; // not all there yet (or shorter than its length): not waited for
      }
      total += n;
    }
    return in.read() < 0 ? bytes : null;
  }

  /**
   * A body of no known length, copied within one {@link Grace}: its bytes ({@code content}) when it
   * ends within {@code limit}, else null; then the rest of it as it came ({@code raw}), as the
   * release would read it, to its end within {@link #LIMIT}. Either that end gave the connection
   * back, or {@code abort} closed it (more remains, the grace is over, or a read failed): the body
   * is done with, and the caller gives the release none to read. The release read it again within a
   * grace of its own, so a body the server held after more than {@code limit} bytes (or after a
   * decoded one's end) kept the retry waiting for two graces, not one. Null when the grace ran out:
   * the end the read came to may be the abort's.
   */
  private static byte[] readWithinGrace(Content content, Content raw, int limit, Closeable abort)
      throws IOException {
    Grace grace = Grace.start(abort);
    byte[] bytes = null;
    boolean ended = false;
    try {
      InputStream in = content.open();
      bytes = in == null ? new byte[0] : readUpTo(in, limit);
      ended = readRest(raw);
    } finally {
      if (!grace.end()) {
        bytes = null; // not all there in time: its connection closed under the read
      }
      if (!ended) {
        closeQuietly(abort); // also when a read failed: nothing is left for the release
      }
    }
    return bytes;
  }

  /**
   * The rest of a body as it came, read to its end within {@link #LIMIT} (true); false when more
   * remains or the read fails. Its stream may refuse a read once its end was read (HttpClient 4.5
   * closes a chunked one there): the copy's read, with the end, gave the connection back already.
   */
  private static boolean readRest(Content raw) {
    try {
      InputStream rest = raw == null ? null : raw.open();
      return rest == null || readToEnd(rest);
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** {@code in} read to its end when that comes within {@code limit} bytes, else null. */
  private static byte[] readUpTo(InputStream in, int limit) throws IOException {
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

  /**
   * Reads what has arrived of a body of {@code contentLength} bytes (Apache HttpClient's), never
   * waiting for more: true when its end was read within {@link #LIMIT} bytes, false when not all of
   * it is there, or more than the limit is, and the caller closes the connection rather than read
   * on. Its end is read once all its declared bytes are: HttpClient's stream of a known length
   * answers that read at once, and that end gives the connection back. A body with no length
   * ({@code contentLength} below 0: chunked, or ending with its connection) is read to its end as
   * by {@link #readToEnd}: where its end is cannot be told from what has arrived ({@link #release}
   * reads it within a {@link Grace}). Read to its end, a body the server held kept the retry
   * waiting as long as the server held it (with HttpClient's default socket timeout, none), where
   * the application without the agent, closing the response unread, had it at its head. Does not
   * close {@code in}.
   */
  public static boolean readArrivedToEnd(InputStream in, long contentLength) throws IOException {
    if (contentLength < 0) {
      return readToEnd(in);
    }
    byte[] buffer = new byte[4096];
    long total = 0;
    for (int ready = in.available(); ready > 0 || total >= contentLength; ready = in.available()) {
      // All of it read: the end's read does not wait.
      int n = in.read(buffer, 0, ready > 0 ? Math.min(ready, buffer.length) : buffer.length);
      if (n < 0) {
        return true;
      }
      total += n;
      if (total > LIMIT) {
        return false;
      }
    }
    return false;
  }

  /** A retried response's body, opened only to be read ({@link #release}). */
  public interface Content {
    /** The body's stream, or null when it has none to read. */
    InputStream open() throws IOException;
  }

  /**
   * Lets go of a retried response whose client reads its body from a stream (Apache HttpClient):
   * {@code content} (null: no body) of {@code contentLength} bytes (below 0: not known) read to its
   * end within {@link #LIMIT}, as far as it has arrived ({@link #readArrivedToEnd}), gives the
   * connection back to the pool for the next attempt; when more remains, or the read fails, {@code
   * closeUnread} closes the connection first, because the stream's close, as the response's, would
   * read the rest (a 1 GB or endless error body, or one the server holds, before the retry). A body
   * of no known length is read within a {@link Grace}: once it is over {@code closeUnread} closes
   * the connection under the read, from the grace's thread, as for a body not all there. {@code
   * close} then releases the response. Neither close throws.
   */
  public static void release(
      Content content, long contentLength, Closeable closeUnread, Closeable close) {
    boolean whole;
    Grace grace = null;
    try {
      InputStream in = content == null ? null : content.open();
      if (in != null && contentLength < 0) {
        grace = Grace.start(closeUnread);
      }
      whole = in == null || readArrivedToEnd(in, contentLength);
    } catch (IOException | RuntimeException e) {
      whole = false;
    }
    if (grace != null && !grace.end()) {
      whole = false; // the end a body with no length came to may be the abort's
    }
    if (!whole) {
      // Also after a copy that read the whole body (readWhole): its end gave the connection back
      // already, which this close then leaves as it is.
      closeQuietly(closeUnread);
    }
    closeQuietly(close);
  }

  /**
   * A bound on reads of a retried body that may wait: one whose end cannot be told from what has
   * arrived (chunked, with no length, or decoded by the client; the copy's or the release's reads).
   * Read to its end, such a body the server held (its head there, the rest not) kept the retry
   * waiting as long as the server held it, bounded only by the client's socket timeout (Apache
   * HttpClient's default: none), where the application without the agent, closing the response
   * unread, had it at its head. So once {@link #GRACE_NANOS} are over, {@code abort} closes the
   * connection under the read, which then fails (or ends), and {@link #end} says so: the body is
   * let go as one past the limit is. A body that has arrived is read well before that and keeps its
   * connection.
   *
   * <p>Ended first, the grace never closes anything: the read gave the connection back to the pool,
   * where the retry may lease it again (HttpClient 5.x's exec runtime is the call's, for every
   * attempt). The check and the close are under one lock for that. The task runs on our shared
   * scheduler ({@link Scheduler#shared}), whose threads inherit nothing from the application's,
   * whatever scheduler the call's engine has: the grace bounds a read from the network, in real
   * time as the client's own network timeouts are, not a wait of the engine's. An engine's may be a
   * library user's test scheduler driven by hand, which left a held body read up to the socket
   * timeout (HttpClient's default: none) unless the test ran the grace. One that refuses (the JVM
   * ending) leaves the read as before, bounded by the socket timeout alone. Given once per retried
   * response: a copy of a body with no length reads the rest too, within its grace ({@link
   * #readWithinGrace}), and leaves the release nothing to read. Made only on a retry's path.
   */
  public static final class Grace implements Runnable {
    private final Closeable abort;
    private boolean ended;
    private boolean over;
    private Scheduler.Cancellable task;

    /**
     * Where graces are scheduled when not on {@link Scheduler#shared()}: set by tests only, to
     * count the graces a call starts (one per retried body of no known length, never two) on a
     * scheduler that hands them on to the shared one; null otherwise. Read once per grace, on a
     * retry's path only, as {@code UrlExchange.lookSchedulerForTests} is.
     */
    static volatile Scheduler schedulerForTests;

    private Grace(Closeable abort) {
      this.abort = abort;
    }

    /** A grace from now, whose end closes the connection through {@code abort}. */
    public static Grace start(Closeable abort) {
      Grace grace = new Grace(abort);
      try {
        Scheduler forTests = schedulerForTests;
        Scheduler.Cancellable task =
            (forTests != null ? forTests : Scheduler.shared()).schedule(grace, GRACE_NANOS);
        synchronized (grace) {
          grace.task = task;
        }
      } catch (RuntimeException refused) {
        // No thread to be had: read as before the grace.
      }
      return grace;
    }

    /** The grace is over: the read not ended by now has its connection closed under it. */
    @Override
    public synchronized void run() {
      if (!ended) {
        over = true;
        closeQuietly(abort);
      }
    }

    /** Ends the grace, which closes nothing after: true when the read ended within it. */
    public boolean end() {
      Scheduler.Cancellable t;
      synchronized (this) {
        ended = true;
        t = task;
      }
      if (t != null) {
        t.cancel();
      }
      return !over;
    }
  }

  private static void closeQuietly(Closeable c) {
    try {
      c.close();
    } catch (IOException | RuntimeException ignored) {
      // nothing more to release
    }
  }
}
