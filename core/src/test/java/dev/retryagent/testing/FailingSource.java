package dev.retryagent.testing;

import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The source of an application's request entity that fails with a given exception of its own after
 * its first 16 bytes (a disk, another server's stream): the application's failure, never the
 * connection's. Counts the streams opened, one per write of an entity that reads a fresh one.
 */
public final class FailingSource {
  private final AtomicInteger opened = new AtomicInteger();

  /** A new stream that fails with {@code failure}. */
  public InputStream open(IOException failure) {
    return open(() -> failure);
  }

  /**
   * A new stream that fails with an exception {@code failure} makes as it fails (a real source's
   * read makes a new one each time).
   */
  public InputStream open(Supplier<? extends IOException> failure) {
    opened.incrementAndGet();
    return new InputStream() {
      private int read;

      @Override
      public int read() throws IOException {
        if (read == 16) {
          throw failure.get();
        }
        read++;
        return 'a';
      }
    };
  }

  /** Streams opened since the last {@link #reset}. */
  public int opened() {
    return opened.get();
  }

  public void reset() {
    opened.set(0);
  }
}
