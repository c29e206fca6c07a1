package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The production scheduler: one timer thread hands due tasks to daemon workers. */
class SharedSchedulerTest {
  @Test
  void aDueTaskRunsOnAWorkerNeitherOnTheCallerNorOnTheTimer() {
    AtomicReference<Thread> ranOn = new AtomicReference<>();
    Scheduler.shared().schedule(() -> ranOn.set(Thread.currentThread()), 0);
    await().atMost(Duration.ofSeconds(5)).until(() -> ranOn.get() != null);
    assertThat(ranOn.get()).isNotSameAs(Thread.currentThread());
    assertThat(ranOn.get().getName()).startsWith("retry-agent-async-");
    assertThat(ranOn.get().isDaemon()).isTrue();
  }

  @Test
  void aCancelledTaskNeverRuns() {
    AtomicBoolean ran = new AtomicBoolean();
    Scheduler.Cancellable c = Scheduler.shared().schedule(() -> ran.set(true), 3_600_000_000_000L);
    assertThat(c.cancel()).isTrue();
    AtomicBoolean marker = new AtomicBoolean();
    Scheduler.shared().schedule(() -> marker.set(true), 0);
    await().atMost(Duration.ofSeconds(5)).untilTrue(marker);
    assertThat(ran).isFalse();
  }
}
