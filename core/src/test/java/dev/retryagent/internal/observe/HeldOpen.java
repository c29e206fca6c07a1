package dev.retryagent.internal.observe;

import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * A dead-letter file whose opening waits until the test releases it: the lines offered meanwhile
 * queue up, and the writer thread then takes them in one batch. With a disk gate, every write to
 * the file then waits for a permit of it ({@link FailingChannel}).
 */
final class HeldOpen implements DeadLetterWriter.Opener {
  /** Counted down when the writer thread starts opening the file. */
  final CountDownLatch opening = new CountDownLatch(1);

  private final CountDownLatch release = new CountDownLatch(1);
  private final Duration wait;
  private final Semaphore disk; // null: writes go through
  private volatile FailingChannel channel;

  HeldOpen(Duration wait) {
    this(wait, null);
  }

  HeldOpen(Duration wait, Semaphore disk) {
    this.wait = wait;
    this.disk = disk;
  }

  /** Opened at once, every write waiting for a permit of {@code disk}. */
  HeldOpen(Semaphore disk) {
    this(Duration.ZERO, disk);
    release();
  }

  /** The gated channel opened last; null before, or without a gate. */
  FailingChannel channel() {
    return channel;
  }

  /** Lets the opening go on. */
  void release() {
    release.countDown();
  }

  /** True once the writer thread is opening the file, within the wait. */
  boolean awaitOpening() throws InterruptedException {
    return opening.await(wait.toMillis(), TimeUnit.MILLISECONDS);
  }

  @Override
  public FileChannel open(Path path) throws java.io.IOException {
    opening.countDown();
    try {
      release.await(wait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    FileChannel real = DeadLetterWriter.openForAppend(path);
    if (disk == null) {
      return real;
    }
    channel = new FailingChannel(real, Integer.MAX_VALUE, disk);
    return channel;
  }
}
