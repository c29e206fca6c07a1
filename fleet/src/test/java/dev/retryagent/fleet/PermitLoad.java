package dev.retryagent.fleet;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;

/**
 * An application's threads using one limiter: each acquires, waits what it is told (as the engine
 * would before sending), uses the permit, and acquires again, until the time is up.
 *
 * <p>Redis times a permit by its own clock, at some instant of the round trip; the load records
 * that instant's bounds: {@link Permit#early} (the call's start plus the wait) is never after it,
 * {@link Permit#late} (the call's return plus the wait) never before. A permit counted in a window
 * only when both bounds fall inside it was certainly timed by Redis inside it, however slow the
 * machine, so checks on these counts need no allowance for scheduling.
 */
final class PermitLoad {
  /** One permit: the bounds of Redis's time for it, and when it was used. */
  static final class Permit {
    final long early;
    final long late;
    final long used;

    Permit(long early, long late, long used) {
      this.early = early;
      this.late = late;
      this.used = used;
    }
  }

  final List<Permit> permits = new CopyOnWriteArrayList<>();
  final List<Throwable> errors = new CopyOnWriteArrayList<>();
  final AtomicInteger refused = new AtomicInteger();
  private final List<Thread> threads = new ArrayList<>();

  /**
   * Threads on {@code limiter} until {@code endNanos} ({@link System#nanoTime()}); {@code onUse}
   * runs for each permit used (e.g. a request to a counting server).
   */
  PermitLoad(
      String name,
      FleetRateLimiter limiter,
      int threads,
      long maxWaitNanos,
      long endNanos,
      LongConsumer onUse) {
    for (int i = 0; i < threads; i++) {
      Thread t =
          new Thread(
              () -> {
                while (System.nanoTime() - endNanos < 0) {
                  try {
                    long start = System.nanoTime();
                    // No deadline near: a loaded machine's slow round trip is not cut short.
                    long wait = limiter.reserve(start, maxWaitNanos, Long.MAX_VALUE / 4);
                    long back = System.nanoTime();
                    if (wait == FleetRateLimiter.REJECTED) {
                      refused.incrementAndGet();
                      LockSupport.parkNanos(1_000_000);
                      continue;
                    }
                    long at = back + wait;
                    while (System.nanoTime() - at < 0) {
                      LockSupport.parkNanos(at - System.nanoTime());
                    }
                    long now = System.nanoTime();
                    permits.add(new Permit(start + wait, at, now));
                    onUse.accept(now);
                  } catch (Throwable e) {
                    errors.add(e);
                    return;
                  }
                }
              },
              name + "-" + i);
      this.threads.add(t);
    }
  }

  PermitLoad start() {
    threads.forEach(Thread::start);
    return this;
  }

  void join(long millis) throws InterruptedException {
    for (Thread t : threads) {
      t.join(millis);
    }
  }

  /** The most permits certainly timed by Redis inside one window of {@code windowNanos}. */
  static int maxInAnyWindow(List<Permit> permits, long windowNanos) {
    List<Permit> sorted = new ArrayList<>(permits);
    sorted.sort(Comparator.comparingLong(p -> p.early));
    int best = 0;
    for (int i = 0; i < sorted.size(); i++) {
      best = Math.max(best, countWithin(sorted, sorted.get(i).early, windowNanos));
    }
    return best;
  }

  /** Permits certainly timed by Redis in {@code [from, from + windowNanos)}. */
  static int countWithin(List<Permit> permits, long from, long windowNanos) {
    int n = 0;
    for (Permit p : permits) {
      if (p.early - from >= 0 && p.late - (from + windowNanos) < 0) {
        n++;
      }
    }
    return n;
  }

  /**
   * The most permits used (by this JVM's clock, after waiting) in any window: what a server sees.
   */
  static int maxUsedInAnyWindow(List<Long> used, long windowNanos) {
    List<Long> sorted = new ArrayList<>(used);
    sorted.sort(Comparator.naturalOrder());
    int best = 0;
    int first = 0;
    for (int last = 0; last < sorted.size(); last++) {
      while (sorted.get(last) - sorted.get(first) >= windowNanos) {
        first++;
      }
      best = Math.max(best, last - first + 1);
    }
    return best;
  }

  /** From the earliest {@link Permit#early} to the latest {@link Permit#late}: covers them all. */
  static long span(List<Permit> permits) {
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    for (Permit p : permits) {
      min = Math.min(min, p.early);
      max = Math.max(max, p.late);
    }
    return max - min;
  }
}
