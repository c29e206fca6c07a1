package dev.retryagent.testing;

import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The source of an application's request entity that fails with a given exception of its own after
 * its first 16 bytes (a disk, another server's stream): the application's failure, never the
 * connection's. Counts the streams opened, one per write of an entity that reads a fresh one.
 */
public final class FailingSource {
  private final AtomicInteger opened = new AtomicInteger();

  /** A new stream that fails with {@code failure}. */
  public InputStream open(IOException failure) {
    opened.incrementAndGet();
    return new InputStream() {
      private int read;

      @Override
      public int read() throws IOException {
        if (read == 16) {
          throw failure;
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
