package dev.retryagent.internal;

/**
 * How many retried bodies' graces ({@link Discards.Grace}) started, for tests in other packages:
 * the grace runs on the shared scheduler, which a test does not replace, so a test counts them
 * here, before and after its call (tests of a class run one at a time).
 */
public final class Graces {
  private Graces() {}

  /** Graces started in this JVM so far. */
  public static long started() {
    return Discards.Grace.STARTED.get();
  }
}
