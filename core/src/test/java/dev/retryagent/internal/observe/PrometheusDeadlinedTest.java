package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.Scheduler;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The Prometheus endpoint's executor ({@link PrometheusServer.Deadlined}) with exchanges of the
 * test's own: each stands for the JDK server's exchange, which reads its request and then calls the
 * handler ({@code answering()}). No deadline ever passes (a scheduler that never runs its tasks).
 */
class PrometheusDeadlinedTest {
  private static final Scheduler NEVER = (task, delayNanos) -> () -> true;

  private final PrometheusServer.Deadlined serving =
      new PrometheusServer.Deadlined(TimeUnit.SECONDS.toNanos(10), NEVER);

  @AfterEach
  void shutdown() {
    serving.shutdownNow();
  }

  @Test
  void anErrorAnExchangeThrowsLeavesItsThreadServing() throws Exception {
    // The JDK server's Exchange.run rethrows an Error of the handler (a scrape's OutOfMemoryError):
    // one per serving thread left no thread to serve, and later exchanges (connections) hung open.
    for (int i = 0; i < PrometheusServer.Deadlined.SERVING_THREADS; i++) {
      CountDownLatch thrown = new CountDownLatch(1);
      serving.execute(
          () -> {
            thrown.countDown();
            throw new TestError();
          });
      assertThat(thrown.await(10, TimeUnit.SECONDS)).isTrue();
    }
    CountDownLatch ran = new CountDownLatch(1);
    serving.execute(ran::countDown);
    assertThat(ran.await(10, TimeUnit.SECONDS)).as("an exchange after the errors runs").isTrue();
  }

  @Test
  void anExchangeWhoseDeadlineTheSchedulerRefusesIsStillServed() throws Exception {
    PrometheusServer.Deadlined refused =
        new PrometheusServer.Deadlined(
            1,
            (task, delayNanos) -> {
              throw new IllegalStateException("the test's scheduler refuses");
            });
    try {
      CountDownLatch ran = new CountDownLatch(2);
      refused.execute(ran::countDown);
      refused.execute(ran::countDown);
      assertThat(ran.await(10, TimeUnit.SECONDS)).as("both exchanges run").isTrue();
    } finally {
      refused.shutdownNow();
    }
  }

  @Test
  void aScrapeThatReadItsRequestAsANewerComesIsNotCut() throws Exception {
    // Three scrapes at once (a Prometheus HA pair and a curl): the third came while the first two
    // had read their requests but not yet reached the handler, and took the older one's thread as a
    // stalled reader's: its interrupt closed the channel at the response's first write.
    CountDownLatch read = new CountDownLatch(2);
    CountDownLatch handlerReached = new CountDownLatch(1);
    AtomicBoolean[] interruptedAnswering = {new AtomicBoolean(), new AtomicBoolean()};
    CountDownLatch answered = new CountDownLatch(2);
    for (int i = 0; i < 2; i++) {
      AtomicBoolean interrupted = interruptedAnswering[i];
      serving.execute(
          () -> {
            read.countDown(); // its request read whole
            awaitQuietly(handlerReached);
            serving.answering();
            interrupted.set(Thread.currentThread().isInterrupted());
            answered.countDown();
          });
    }
    assertThat(read.await(10, TimeUnit.SECONDS)).isTrue();
    CountDownLatch third = new CountDownLatch(1);
    serving.execute(third::countDown);
    handlerReached.countDown();

    assertThat(answered.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(interruptedAnswering[0].get()).as("the first scrape answers").isFalse();
    assertThat(interruptedAnswering[1].get()).as("the second scrape answers").isFalse();
    assertThat(third.await(10, TimeUnit.SECONDS)).as("the third is served after").isTrue();
  }

  @Test
  void aTakenBackExchangeWhoseDeadlinePassedAsWellStaysCut() throws Exception {
    // Taking back a taken-back exchange that reaches its handler must not outlive its deadline: it
    // would then hold its thread with no deadline at all (a client that reads no response).
    List<Runnable> deadlines = new CopyOnWriteArrayList<>();
    PrometheusServer.Deadlined timed =
        new PrometheusServer.Deadlined(
            1,
            (task, delayNanos) -> {
              deadlines.add(task);
              return () -> false;
            });
    try {
      CountDownLatch read = new CountDownLatch(2);
      CountDownLatch handlerReached = new CountDownLatch(1);
      AtomicInteger interruptedAnswering = new AtomicInteger();
      CountDownLatch answered = new CountDownLatch(2);
      for (int i = 0; i < 2; i++) {
        timed.execute(
            () -> {
              read.countDown();
              awaitQuietly(handlerReached);
              timed.answering();
              if (Thread.currentThread().isInterrupted()) {
                interruptedAnswering.incrementAndGet();
              }
              answered.countDown();
            });
      }
      assertThat(read.await(10, TimeUnit.SECONDS)).isTrue();
      timed.execute(() -> {}); // takes back the older one's thread
      await().atMost(Duration.ofSeconds(10)).until(() -> deadlines.size() == 2);
      for (Runnable deadline : deadlines) {
        deadline.run(); // both deadlines pass
      }
      handlerReached.countDown();

      assertThat(answered.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(interruptedAnswering.get()).as("both past their deadline").isEqualTo(2);
    } finally {
      timed.shutdownNow();
    }
  }

  @Test
  void anExchangeWhoseThreadCannotStartIsRefusedAndNotCounted() throws Exception {
    // "unable to create native thread": the thread was counted as serving and the exchange left
    // waiting, never run nor closed; the JDK server closes the connection when execute throws.
    AtomicBoolean failNext = new AtomicBoolean(true);
    PrometheusServer.Deadlined starved =
        new PrometheusServer.Deadlined(
            TimeUnit.SECONDS.toNanos(10),
            NEVER,
            r -> {
              if (failNext.getAndSet(false)) {
                throw new OutOfMemoryError("unable to create native thread (the test's)");
              }
              Thread t = new Thread(r, "test-prometheus-serving");
              t.setDaemon(true);
              return t;
            });
    CountDownLatch release = new CountDownLatch(1);
    try {
      AtomicBoolean refusedRan = new AtomicBoolean();
      assertThatThrownBy(() -> starved.execute(() -> refusedRan.set(true)))
          .isInstanceOf(RejectedExecutionException.class);
      // Both threads can still start: two exchanges answer at once.
      CountDownLatch both = new CountDownLatch(2);
      for (int i = 0; i < PrometheusServer.Deadlined.SERVING_THREADS; i++) {
        starved.execute(
            () -> {
              starved.answering();
              both.countDown();
              awaitQuietly(release);
            });
      }
      assertThat(both.await(10, TimeUnit.SECONDS)).as("two exchanges served at once").isTrue();
      release.countDown();
      CountDownLatch after = new CountDownLatch(1);
      starved.execute(after::countDown);
      assertThat(after.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(refusedRan).as("the refused exchange is never run").isFalse();
    } finally {
      release.countDown();
      starved.shutdownNow();
    }
  }

  /** Waits as an exchange reading its request would, unmoved by an interrupt (the flag kept). */
  private static void awaitQuietly(CountDownLatch latch) {
    boolean interrupted = false;
    while (true) {
      try {
        latch.await();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private static final class TestError extends Error {
    TestError() {
      super("thrown by the test's exchange", null, false, false);
    }
  }
}
