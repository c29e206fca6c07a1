package dev.retryagent.urlconnection;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;

/**
 * The request body of one call, as the application wrote it through {@code getOutputStream()}, and
 * whether the agent holds all of it to send it again.
 *
 * <ul>
 *   <li>Buffered (no streaming mode): the JDK's own stream keeps the whole body in memory until the
 *       response is asked for, and on JDK 11-25 it is a {@link ByteArrayOutputStream}: the
 *       application gets that very stream and nothing is copied. The body can be sent again when it
 *       is at most {@code replayBodyLimit}.
 *   <li>Streaming ({@code setFixedLengthStreamingMode}, {@code setChunkedStreamingMode}): every
 *       byte goes to the socket as it is written, through a tee that keeps a copy while the body
 *       fits in {@code replayBodyLimit}; a declared length above the limit keeps nothing from the
 *       start.
 * </ul>
 *
 * Written by the application's thread; read by the same thread when the response is asked for.
 */
final class RequestBody {
  private final ByteArrayOutputStream buffered;
  private final Tee tee;
  private final long limit;

  private RequestBody(ByteArrayOutputStream buffered, Tee tee, long limit) {
    this.buffered = buffered;
    this.tee = tee;
    this.limit = limit;
  }

  /**
   * The body the application is about to write to {@code jdkStream}, the stream the JDK's {@code
   * getOutputStream()} returned.
   *
   * @param declaredLength the fixed streaming length, or -1
   * @param writeFailed told of a write to (or the close of) the streamed body that failed, before
   *     the application is
   */
  static RequestBody of(
      OutputStream jdkStream, long declaredLength, long limit, WriteFailed writeFailed) {
    if (jdkStream instanceof ByteArrayOutputStream && declaredLength < 0) {
      return new RequestBody((ByteArrayOutputStream) jdkStream, null, limit);
    }
    return new RequestBody(null, new Tee(jdkStream, declaredLength, limit, writeFailed), limit);
  }

  /**
   * A body passed on to {@code jdkStream} with no copy and no length of the agent's (the JDK's own
   * stream checks the one it took): never sent again, {@code whyNot} said in the log.
   */
  static RequestBody unheld(OutputStream jdkStream, WriteFailed writeFailed, String whyNot) {
    Tee tee = new Tee(jdkStream, -1, 0, writeFailed);
    tee.copy = null;
    tee.whyNot = whyNot;
    return new RequestBody(null, tee, 0);
  }

  /** Told of a failed write to, or close of, a streamed body. */
  interface WriteFailed {
    /**
     * @param wrongLength the application broke the fixed length it declared (wrote more, or closed
     *     with less), which the JDK refuses with an {@code IOException} of its own: the
     *     application's mistake, not the host's failure
     */
    void failed(Throwable e, boolean wrongLength);
  }

  /** What the application writes to: the JDK's buffer itself, or the tee. */
  OutputStream stream() {
    return buffered != null ? buffered : tee;
  }

  /** Whether the body went through the JDK's streaming mode (the tee), not its buffer. */
  boolean streamed() {
    return tee != null;
  }

  /** Null when the whole body is held and can be sent again; else why not, for the log. */
  String whyNotReplayable() {
    if (buffered != null) {
      int size = buffered.size();
      return size <= limit
          ? null
          : "a body of " + size + " B exceeds replayBodyLimit (" + limit + " B)";
    }
    return tee.whyNot();
  }

  /** The bytes the application wrote so far (that the JDK took). */
  long written() {
    return buffered != null ? buffered.size() : tee.written();
  }

  /** The body, to be written to a fresh attempt; only when {@link #whyNotReplayable()} is null. */
  byte[] bytes() {
    return buffered != null ? buffered.toByteArray() : tee.copy();
  }

  /** Passes every byte on and keeps a copy while the body fits in the limit. */
  private static final class Tee extends OutputStream {
    private final OutputStream out;
    private final long declaredLength;
    private final long limit;
    private final WriteFailed writeFailed;
    private ByteArrayOutputStream copy;
    private long written;
    private String whyNot;

    /**
     * The application closed the body: it is whole. A write after that (through the same stream,
     * which a second {@code getOutputStream()} returns, as the JDK's does) gets the JDK's answer
     * ("Stream is closed") and is the application's own misuse: not a failure of the request sent,
     * so the copy is kept and the call goes on.
     */
    private boolean closed;

    Tee(OutputStream out, long declaredLength, long limit, WriteFailed writeFailed) {
      this.out = out;
      this.declaredLength = declaredLength;
      this.limit = limit;
      this.writeFailed = writeFailed;
      if (declaredLength > limit) {
        whyNot =
            "a fixed length of "
                + declaredLength
                + " B exceeds replayBodyLimit ("
                + limit
                + " B), so the body was streamed without a copy";
      } else {
        int initial = (int) Math.min(limit, declaredLength >= 0 ? declaredLength : 512);
        copy = new ByteArrayOutputStream(Math.max(32, initial));
      }
    }

    @Override
    public void write(int b) throws IOException {
      if (closed()) {
        out.write(b);
        return;
      }
      try {
        out.write(b);
      } catch (IOException | RuntimeException e) {
        failed(e, beyondDeclared(1));
        throw e;
      }
      synchronized (this) {
        if (keep(1)) {
          copy.write(b);
        }
      }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (closed()) {
        out.write(b, off, len);
        return;
      }
      try {
        out.write(b, off, len);
      } catch (IOException | RuntimeException e) {
        failed(e, beyondDeclared(len));
        throw e;
      }
      synchronized (this) {
        if (keep(len)) {
          copy.write(b, off, len);
        }
      }
    }

    /** Counts {@code n} more bytes; true while the copy may take them. */
    private boolean keep(int n) {
      written += n;
      if (copy == null) {
        return false;
      }
      if (written > limit) {
        copy = null;
        whyNot =
            "the streamed body exceeded replayBodyLimit (" + limit + " B), so no copy was kept";
        return false;
      }
      return true;
    }

    /** Whether {@code n} more bytes pass the declared length: the JDK refuses them, unsent. */
    private synchronized boolean beyondDeclared(int n) {
      return declaredLength >= 0 && written + n > declaredLength;
    }

    private void failed(Throwable e, boolean wrongLength) {
      synchronized (this) {
        copy = null;
        if (whyNot == null) {
          whyNot = "writing the body failed";
        }
      }
      writeFailed.failed(e, wrongLength);
    }

    @Override
    public void flush() throws IOException {
      out.flush();
    }

    @Override
    public void close() throws IOException {
      boolean first;
      boolean shortOfDeclared;
      synchronized (this) {
        first = !closed;
        closed = true; // the JDK's stream is closed from here on, even when its close throws
        shortOfDeclared = declaredLength >= 0 && written < declaredLength;
      }
      try {
        out.close();
      } catch (IOException | RuntimeException e) {
        // The close writes the last chunk, or checks the fixed length: its failure ends the
        // request as a write's does (the JDK then refuses the response: "Incomplete output
        // stream"). Without this the call stayed open, the breaker's permit held.
        if (first) {
          failed(e, shortOfDeclared);
        }
        throw e;
      }
    }

    private synchronized boolean closed() {
      return closed;
    }

    synchronized long written() {
      return written;
    }

    synchronized String whyNot() {
      return whyNot;
    }

    synchronized byte[] copy() {
      return copy == null ? new byte[0] : copy.toByteArray();
    }
  }
}
