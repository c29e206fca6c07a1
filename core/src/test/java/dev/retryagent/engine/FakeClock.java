package dev.retryagent.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A clock that moves only when a test (or a test double acting for it) says so. Monotonic time
 * starts at an arbitrary large value so no code can rely on it starting at zero; the wall clock
 * moves with it.
 */
final class FakeClock implements Clock {
  static final long START_NANOS = 7_000_000_000_000L;
  static final Instant WALL_START = Instant.parse("2024-03-10T12:00:00Z");

  private final AtomicLong nanos;
  private final long startNanos;

  FakeClock() {
    this(START_NANOS);
  }

  FakeClock(long startNanos) {
    this.startNanos = startNanos;
    this.nanos = new AtomicLong(startNanos);
  }

  @Override
  public long nanoTime() {
    return nanos.get();
  }

  @Override
  public long wallMillis() {
    return WALL_START.toEpochMilli() + Math.floorDiv(nanos.get() - startNanos, 1_000_000L);
  }

  void advance(long deltaNanos) {
    if (deltaNanos < 0) {
      throw new IllegalArgumentException("time never goes back: " + deltaNanos);
    }
    nanos.addAndGet(deltaNanos);
  }

  void advance(Duration delta) {
    advance(delta.toNanos());
  }

  /** Moves to {@code atNanos} if that is later than now. */
  void advanceTo(long atNanos) {
    nanos.accumulateAndGet(atNanos, Math::max);
  }

  /** Nanoseconds since the clock was made. */
  long elapsed() {
    return nanos.get() - startNanos;
  }

  Instant wallNow() {
    return Instant.ofEpochMilli(wallMillis());
  }
}
