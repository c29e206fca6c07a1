package dev.retryagent.engine;

import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;

/** Randomness for jitter, injected so tests are repeatable. Implementations are thread-safe. */
public interface RandomSource {
  /** A uniform value in {@code [0, 1)}. */
  double nextDouble();

  /** {@link ThreadLocalRandom}: no contention between threads. */
  RandomSource THREAD_LOCAL = () -> ThreadLocalRandom.current().nextDouble();

  /** A repeatable sequence; synchronised, so meant for tests and single-threaded use. */
  static RandomSource seeded(long seed) {
    Random random = new Random(seed);
    return () -> {
      synchronized (random) {
        return random.nextDouble();
      }
    };
  }
}
