package dev.retryagent.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.Clock;
import dev.retryagent.engine.Sleeper;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class WaitsTest {
  private static final long MS = 1_000_000L;

  /** A clock the test moves, and a sleeper on it that oversleeps each wait by {@code late}. */
  private static final class LateSleeper implements Clock, Sleeper {
    final AtomicLong now = new AtomicLong(5_000 * MS);
    final List<Long> asked = new ArrayList<>();
    final long late;

    LateSleeper(long late) {
      this.late = late;
    }

    @Override
    public long nanoTime() {
      return now.get();
    }

    @Override
    public long wallMillis() {
      return now.get() / MS;
    }

    @Override
    public void sleep(long nanos) {
      asked.add(nanos);
      now.addAndGet(nanos + late);
    }
  }

  @Test
  void aSlicedWaitDoesNotAddEachSlicesOversleepToTheDelay() throws InterruptedException {
    // A real sleep ends a little late (timer slack, a loaded or throttled machine: ~0.1 ms on
    // Linux, up to a timer tick of ~15 ms on Windows). A 30 s wait in 50 ms slices added it 600
    // times, and a retry timed to start just before the deadline started after it, with a 1 ms
    // timeout for an attempt already on the wire.
    LateSleeper time = new LateSleeper(5 * MS);
    long start = time.nanoTime();

    Waits.untilCancelled(time, time, () -> false).sleep(1_000 * MS);

    assertThat(time.nanoTime() - start).isLessThanOrEqualTo(1_000 * MS + 5 * MS);
    assertThat(time.asked).allMatch(n -> n > 0 && n <= Waits.CANCEL_POLL_NANOS);
  }

  @Test
  void aSleeperWhoseClockDoesNotMoveStillEndsAfterTheWholeWait() throws InterruptedException {
    // A test's sleeper need not move the clock it is given: the slices still add up to the wait.
    LateSleeper time = new LateSleeper(0);
    Clock frozen =
        new Clock() {
          @Override
          public long nanoTime() {
            return 0;
          }

          @Override
          public long wallMillis() {
            return 0;
          }
        };

    Waits.untilCancelled(time, frozen, () -> false).sleep(120 * MS);

    assertThat(time.asked).containsExactly(50 * MS, 50 * MS, 20 * MS);
  }

  @Test
  void aCancelEndsTheWaitAtTheNextSlice() throws InterruptedException {
    LateSleeper time = new LateSleeper(0);
    Waits.untilCancelled(time, time, () -> time.asked.size() == 2).sleep(1_000 * MS);
    assertThat(time.asked).hasSize(2);
  }
}
