package dev.retryagent.engine;

/**
 * The engine's only source of time, injected so tests can drive it. {@link #nanoTime()} measures
 * intervals (backoff, deadlines, windows); {@link #wallMillis()} is only used to read HTTP dates in
 * {@code Retry-After} and to print times for humans. Implementations are thread-safe; the default
 * is {@link #SYSTEM}.
 */
public interface Clock {
  /** Monotonic nanoseconds, as {@link System#nanoTime()}. */
  long nanoTime();

  /** Wall-clock milliseconds since the epoch, as {@link System#currentTimeMillis()}. */
  long wallMillis();

  /** The system clock. */
  Clock SYSTEM =
      new Clock() {
        @Override
        public long nanoTime() {
          return System.nanoTime();
        }

        @Override
        public long wallMillis() {
          return System.currentTimeMillis();
        }
      };
}
