package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.engine.Scheduler.Cancellable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The timer of {@code premain}'s one task: the task runs once on a thread of its own, an agent
 * thread, which then ends; a cancelled task never runs and its thread ends at once, not at the due
 * time. No clock is read here: a task due now, or one due in an hour that only a cancel can end.
 */
class StartUpTimerTest {
  private static final long HOUR = TimeUnit.HOURS.toNanos(1);

  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  private final Scheduler timer = StartUpTimer.create();

  @Test
  void aDueTaskRunsOnceOnAnAgentThreadOfItsOwnWhichThenEnds() throws Exception {
    AtomicReference<Thread> ranOn = new AtomicReference<>();
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch ran = new CountDownLatch(1);

    StartUpTimer.OneShot shot =
        (StartUpTimer.OneShot)
            timer.schedule(
                () -> {
                  runs.incrementAndGet();
                  ranOn.set(Thread.currentThread());
                  ran.countDown();
                },
                0);

    assertThat(ran.await(10, TimeUnit.SECONDS)).isTrue();
    Thread thread = ranOn.get();
    assertThat(thread).isSameAs(shot.thread());
    assertThat(thread.getName()).isEqualTo("retry-agent-start");
    assertThat(thread.isDaemon()).as("never keeps the JVM alive").isTrue();
    assertThat(thread.getContextClassLoader()).isSameAs(ClassLoader.getSystemClassLoader());
    thread.join(10_000);
    assertThat(thread.isAlive()).as("the thread ends with its task").isFalse();
    assertThat(runs).hasValue(1);
    assertThat(shot.cancel()).as("too late to cancel a task that ran").isFalse();
  }

  @Test
  void aCancelledTaskNeverRunsAndItsThreadEndsWithoutWaitingForTheDueTime() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    StartUpTimer.OneShot shot = (StartUpTimer.OneShot) timer.schedule(runs::incrementAndGet, HOUR);

    assertThat(shot.cancel()).isTrue();
    shot.thread().join(10_000);

    assertThat(shot.thread().isAlive()).as("ended long before the hour").isFalse();
    assertThat(runs).hasValue(0);
    assertThat(shot.cancel()).as("cancelled once").isFalse();
  }

  @Test
  void aTaskThatThrowsIsReportedInOneLineAndItsThreadEnds() throws Exception {
    Cancellable shot =
        timer.schedule(
            () -> {
              throw new IllegalStateException("exporter refused");
            },
            0);

    Thread thread = ((StartUpTimer.OneShot) shot).thread();
    thread.join(10_000);

    assertThat(thread.isAlive()).isFalse();
    assertThat(stderr.text())
        .contains("retry-agent: the agent's start-up task failed:")
        .contains("exporter refused")
        .doesNotContain("\tat ");
  }

  @Test
  void aTaskThatThrowsIsReportedWithoutTheSecretsItsMessageQuotes() throws Exception {
    // Written through Sanitizer.exception, as every other line of the agent's: before, the
    // exception's toString, its message as given.
    Cancellable shot =
        timer.schedule(
            () -> {
              throw new IllegalStateException(
                  "exporter http://u:canary-pass@h.example/x?token=canary-query refused\n"
                      + "Authorization: Bearer canary-bearer");
            },
            0);

    Thread thread = ((StartUpTimer.OneShot) shot).thread();
    thread.join(10_000);

    assertThat(stderr.text())
        .contains(
            "retry-agent: the agent's start-up task failed: java.lang.IllegalStateException:"
                + " exporter http://h.example/x refused Authorization: <redacted>")
        .doesNotContain("canary");
  }
}
