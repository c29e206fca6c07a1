package dev.retryagent.engine;

import java.util.ArrayList;
import java.util.List;

/**
 * A sleeper that never sleeps: it records each wait and advances the fake clock by it. Like a real
 * sleep it is interruptible: a pending interrupt makes it throw and clears the flag.
 */
final class RecordingSleeper implements Sleeper {
  private final FakeClock clock;
  private final List<Long> sleeps = new ArrayList<>();
  private long lateNanos;

  private Runnable duringNextSleep;

  RecordingSleeper(FakeClock clock) {
    this.clock = clock;
  }

  /** Runs {@code r} once, at the start of the next sleep (something that happens meanwhile). */
  synchronized void duringNextSleep(Runnable r) {
    duringNextSleep = r;
  }

  @Override
  public synchronized void sleep(long nanos) throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException("sleep interrupted");
    }
    if (nanos < 0) {
      throw new AssertionError("negative sleep " + nanos);
    }
    sleeps.add(nanos);
    Runnable meanwhile = duringNextSleep;
    duringNextSleep = null;
    if (meanwhile != null) {
      meanwhile.run();
    }
    clock.advance(nanos + lateNanos);
  }

  /** Each sleep from now on ends {@code nanos} late (a JVM paused, a thread scheduled late). */
  synchronized RecordingSleeper late(long nanos) {
    lateNanos = nanos;
    return this;
  }

  synchronized List<Long> sleeps() {
    return new ArrayList<>(sleeps);
  }

  synchronized long total() {
    long sum = 0;
    for (long s : sleeps) {
      sum += s;
    }
    return sum;
  }
}
