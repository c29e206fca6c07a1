package dev.retryagent.internal.observe;

import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A dead-letter file whose opening waits until the test releases it: the lines offered meanwhile
 * queue up, and the writer thread then takes them in one batch.
 */
final class HeldOpen implements DeadLetterWriter.Opener {
  /** Counted down when the writer thread starts opening the file. */
  final CountDownLatch opening = new CountDownLatch(1);

  private final CountDownLatch release = new CountDownLatch(1);
  private final Duration wait;

  HeldOpen(Duration wait) {
    this.wait = wait;
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
    return DeadLetterWriter.openForAppend(path);
  }
}
