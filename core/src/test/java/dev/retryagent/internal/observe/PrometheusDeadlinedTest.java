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
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The Prometheus endpoint's executor ({@link PrometheusServer.Deadlined}) with exchanges of the
 * test's own: each stands for the JDK server's exchange, which reads its request and then calls the
 * handler ({@code answering()}). No deadline ever passes (a scheduler that never runs its tasks).
 */
class PrometheusDeadlinedTest {
  private static final Scheduler NEVER = (task, delayNanos) -> () -> true;
  private static final Scheduler REFUSES =
      (task, delayNanos) -> {
        throw new RejectedExecutionException("the test's scheduler refuses");
      };

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
  void anExchangeWhoseGraceTheSchedulerFailsWithAnErrorIsServedAndLeavesNoStaleEntry()
      throws Exception {
    // A ScheduledThreadPoolExecutor whose worker thread cannot start ("unable to create native
    // thread") throws that Error from schedule after it queued the task. The exchange was skipped
    // (its connection left open unanswered) and stayed counted as running: its queued deadline
    // then interrupted the next exchange on that thread.
    List<Runnable> queued = new CopyOnWriteArrayList<>();
    AtomicInteger calls = new AtomicInteger();
    PrometheusServer.Deadlined failing =
        new PrometheusServer.Deadlined(
            TimeUnit.SECONDS.toNanos(10),
            (task, delayNanos) -> {
              queued.add(task);
              if (calls.incrementAndGet() == 2) { // the first exchange's grace
                throw new OutOfMemoryError("unable to create native thread (the test's)");
              }
              return () -> false;
            });
    CountDownLatch release = new CountDownLatch(1);
    try {
      CountDownLatch ran = new CountDownLatch(1);
      failing.execute(ran::countDown);
      assertThat(ran.await(10, TimeUnit.SECONDS)).as("the exchange runs").isTrue();
      await().atMost(Duration.ofSeconds(10)).until(() -> queued.size() == 2);
      // The next exchanges, on either thread, wait as readers do; the first's tasks then run.
      List<Boolean> interrupted = new CopyOnWriteArrayList<>();
      CountDownLatch reading = new CountDownLatch(PrometheusServer.Deadlined.SERVING_THREADS);
      CountDownLatch done = new CountDownLatch(PrometheusServer.Deadlined.SERVING_THREADS);
      for (int i = 0; i < PrometheusServer.Deadlined.SERVING_THREADS; i++) {
        failing.execute(
            () -> {
              reading.countDown();
              awaitQuietly(release);
              interrupted.add(Thread.interrupted());
              done.countDown();
            });
      }
      assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();
      queued.get(0).run(); // the first exchange's deadline
      queued.get(1).run(); // and its grace, queued though refused
      release.countDown();
      assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(interrupted).as("later exchanges interrupted").containsOnly(false);
    } finally {
      release.countDown();
      failing.shutdownNow();
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
    Timers timers = new Timers();
    PrometheusServer.Deadlined timed =
        new PrometheusServer.Deadlined(TimeUnit.SECONDS.toNanos(10), timers);
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
      timed.execute(() -> {});
      await().atMost(Duration.ofSeconds(10)).until(() -> timers.due.size() == 4);
      timers.pass(PrometheusServer.Deadlined.READ_GRACE_NANOS); // takes back one of them
      timers.pass(TimeUnit.SECONDS.toNanos(10)); // both deadlines pass
      handlerReached.countDown();

      assertThat(answered.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(interruptedAnswering.get()).as("both past their deadline").isEqualTo(2);
    } finally {
      timed.shutdownNow();
    }
  }

  @Test
  void aScrapeWhoseThreadHasNotReadItsRequestYetIsNotTakenBack() throws Exception {
    // Three scrapes at once (a Prometheus HA pair and a curl), each request whole: the third came
    // before the first's thread had read its request, took that thread back as a stalled reader's
    // at once, and the interrupt closed the channel at the read (the JDK server's channel read
    // fails on an interrupted thread): the first scrape was cut. Nothing has been reading for the
    // grace here (this scheduler never runs its tasks), so no thread is taken back.
    CountDownLatch started = new CountDownLatch(2);
    CountDownLatch scheduled = new CountDownLatch(1);
    AtomicInteger interruptedAtRead = new AtomicInteger();
    CountDownLatch answered = new CountDownLatch(2);
    for (int i = 0; i < 2; i++) {
      serving.execute(
          () -> {
            started.countDown();
            awaitQuietly(scheduled); // its thread not run yet: the request waits in the socket
            if (Thread.currentThread().isInterrupted()) {
              interruptedAtRead.incrementAndGet(); // the JDK server's read would close it
            }
            serving.answering();
            answered.countDown();
          });
    }
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    CountDownLatch third = new CountDownLatch(1);
    serving.execute(third::countDown);
    scheduled.countDown();

    assertThat(answered.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(interruptedAtRead.get()).as("scrapes cut at their read").isZero();
    assertThat(third.await(10, TimeUnit.SECONDS)).as("the third is served after").isTrue();
  }

  @Test
  void aScrapeWhoseGraceTheSchedulerRefusesIsNotTakenBackBeforeItReads() throws Exception {
    // A scheduler that refuses the read grace: the exchange was marked stalled at once, on its own
    // thread before it read its request, and with another exchange waiting took its own thread
    // back: the interrupt closed the channel at the read, a scrape whose request had come cut.
    PrometheusServer.Deadlined refusing =
        new PrometheusServer.Deadlined(TimeUnit.SECONDS.toNanos(10), REFUSES);
    List<CountDownLatch> releases = new CopyOnWriteArrayList<>();
    try {
      // Two scrapes answering hold both threads.
      CountDownLatch answering = new CountDownLatch(2);
      for (int i = 0; i < PrometheusServer.Deadlined.SERVING_THREADS; i++) {
        CountDownLatch release = new CountDownLatch(1);
        releases.add(release);
        refusing.execute(
            () -> {
              refusing.answering();
              answering.countDown();
              awaitQuietly(release);
            });
      }
      assertThat(answering.await(10, TimeUnit.SECONDS)).isTrue();
      // Two more wait.
      AtomicInteger interruptedAtRead = new AtomicInteger();
      CountDownLatch answered = new CountDownLatch(2);
      for (int i = 0; i < 2; i++) {
        refusing.execute(
            () -> {
              if (Thread.currentThread().isInterrupted()) {
                interruptedAtRead.incrementAndGet(); // the JDK server's read would close it
              }
              refusing.answering();
              answered.countDown();
            });
      }
      releases.get(0).countDown(); // its thread serves the newer, the older still waiting
      await().atMost(Duration.ofSeconds(10)).until(() -> answered.getCount() < 2);
      releases.get(1).countDown();

      assertThat(answered.await(10, TimeUnit.SECONDS)).as("both served").isTrue();
      assertThat(interruptedAtRead.get()).as("scrapes cut at their read").isZero();
    } finally {
      for (CountDownLatch release : releases) {
        release.countDown();
      }
      refusing.shutdownNow();
    }
  }

  @Test
  void aReaderPastItsGraceIsTakenBackForAnExchangeWaitingOrComing() throws Exception {
    // Stalled clients hold both threads: a scrape that comes is served once the oldest has read
    // past the grace (not after its 10 s deadline), and one that comes later at once.
    Timers timers = new Timers();
    PrometheusServer.Deadlined timed =
        new PrometheusServer.Deadlined(TimeUnit.SECONDS.toNanos(10), timers);
    CountDownLatch never = new CountDownLatch(1);
    try {
      List<Thread> stalled = new CopyOnWriteArrayList<>();
      List<Thread> cut = new CopyOnWriteArrayList<>();
      for (int i = 0; i < 2; i++) {
        timed.execute(
            () -> {
              stalled.add(Thread.currentThread());
              try {
                never.await(); // half a request: the read blocks until interrupted
              } catch (InterruptedException e) {
                cut.add(Thread.currentThread()); // the JDK server closes the connection
              }
            });
        int n = i + 1; // one after the other: the first is the oldest
        await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> stalled.size() == n && timers.due.size() == 2 * n);
      }
      CountDownLatch scrape = new CountDownLatch(1);
      timed.execute(
          () -> {
            timed.answering();
            scrape.countDown();
            awaitQuietly(never); // still answering as the next comes: its thread stays busy
          });
      assertThat(scrape.await(200, TimeUnit.MILLISECONDS)).as("no grace passed yet").isFalse();
      assertThat(cut).isEmpty();

      timers.passFor(stalled.get(0), PrometheusServer.Deadlined.READ_GRACE_NANOS);
      assertThat(scrape.await(10, TimeUnit.SECONDS)).as("served after the grace").isTrue();
      assertThat(cut).as("the oldest taken back").containsExactly(stalled.get(0));

      timers.passFor(stalled.get(1), PrometheusServer.Deadlined.READ_GRACE_NANOS);
      assertThat(cut).as("nothing waits for its thread").hasSize(1);
      CountDownLatch next = new CountDownLatch(1);
      timed.execute(next::countDown);
      assertThat(next.await(10, TimeUnit.SECONDS)).as("a stalled one's thread at once").isTrue();
      assertThat(cut).containsExactly(stalled.get(0), stalled.get(1));
    } finally {
      never.countDown();
      timed.shutdownNow();
    }
  }

  @Test
  void anExchangeComingAsAnotherEndsTakesBackNoReader() throws Exception {
    // A stalled client holds one thread, a scrape the other. The scrape ended; its thread, not
    // yet counted idle (it cancelled its timers, then took the lock twice), let an exchange that
    // came then take back the stalled reader: a connection cut that a thread was there for (a
    // slow scrape's, not a stalled client's, had it not read its request yet). The exchange
    // comes here from inside the ended scrape's timer cancel: the scheduler's seam.
    AtomicReference<Thread> ending = new AtomicReference<>();
    AtomicReference<Runnable> whenEnding = new AtomicReference<>();
    Timers timers =
        new Timers() {
          @Override
          public Cancellable schedule(Runnable task, long delayNanos) {
            super.schedule(task, delayNanos);
            return () -> {
              Runnable hook = whenEnding.get();
              if (Thread.currentThread() == ending.get()
                  && hook != null
                  && whenEnding.compareAndSet(hook, null)) {
                hook.run();
              }
              return false;
            };
          }
        };
    PrometheusServer.Deadlined timed =
        new PrometheusServer.Deadlined(TimeUnit.SECONDS.toNanos(10), timers);
    CountDownLatch never = new CountDownLatch(1);
    CountDownLatch end = new CountDownLatch(1);
    try {
      List<Thread> cut = new CopyOnWriteArrayList<>();
      AtomicReference<Thread> reader = new AtomicReference<>();
      CountDownLatch readerDone = new CountDownLatch(1);
      timed.execute(
          () -> {
            reader.set(Thread.currentThread());
            try {
              never.await(); // half a request
            } catch (InterruptedException e) {
              cut.add(Thread.currentThread());
            } finally {
              readerDone.countDown();
            }
          });
      await().atMost(Duration.ofSeconds(10)).until(() -> timers.due.size() == 2);
      timers.passFor(reader.get(), PrometheusServer.Deadlined.READ_GRACE_NANOS); // stalled
      CountDownLatch answered = new CountDownLatch(1);
      timed.execute(
          () -> {
            timed.answering();
            ending.set(Thread.currentThread());
            answered.countDown();
            awaitQuietly(end);
          });
      assertThat(answered.await(10, TimeUnit.SECONDS)).isTrue();
      CountDownLatch next = new CountDownLatch(1);
      whenEnding.set(() -> timed.execute(next::countDown));
      end.countDown(); // the scrape ends, and the next exchange comes
      assertThat(next.await(10, TimeUnit.SECONDS)).as("the next exchange served").isTrue();
      assertThat(whenEnding.get()).as("came as the scrape ended").isNull();
      never.countDown();
      assertThat(readerDone.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(cut).as("a reader taken back").isEmpty();
    } finally {
      never.countDown();
      end.countDown();
      timed.shutdownNow();
    }
  }

  @Test
  void beyondACrowdWaitingANewerExchangeTakesBackAReaderAtOnce() throws Exception {
    // Clients that keep opening connections with half a request, faster than the grace lets
    // readers go: each is newer than a waiting scrape and served first, which then waited until
    // closed unread (20 a second held back 13 of 15 scrapes). Beyond a crowd waiting, the oldest
    // reader's thread is taken at once, grace or not (this scheduler never runs one).
    assertBeyondACrowdWaitingANewerTakesBackAReader(serving);
  }

  @Test
  void withoutAGraceBeyondACrowdWaitingANewerExchangeStillTakesBackAReader() throws Exception {
    // The grace refused, a reader is never stalled: the crowd rule still takes one's thread.
    PrometheusServer.Deadlined refusing =
        new PrometheusServer.Deadlined(TimeUnit.SECONDS.toNanos(10), REFUSES);
    try {
      assertBeyondACrowdWaitingANewerTakesBackAReader(refusing);
    } finally {
      refusing.shutdownNow();
    }
  }

  private static void assertBeyondACrowdWaitingANewerTakesBackAReader(
      PrometheusServer.Deadlined serving) throws InterruptedException {
    CountDownLatch never = new CountDownLatch(1);
    try {
      List<Thread> cut = new CopyOnWriteArrayList<>();
      CountDownLatch reading = new CountDownLatch(2);
      for (int i = 0; i < 2; i++) {
        serving.execute(
            () -> {
              reading.countDown();
              try {
                never.await(); // half a request
              } catch (InterruptedException e) {
                cut.add(Thread.currentThread());
              }
            });
      }
      assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();
      for (int i = 0; i < PrometheusServer.Deadlined.CROWD; i++) {
        serving.execute(() -> {});
      }
      assertThat(cut).as("a few waiting: no reader taken yet").isEmpty();

      CountDownLatch scrape = new CountDownLatch(1);
      serving.execute(scrape::countDown);
      assertThat(scrape.await(10, TimeUnit.SECONDS)).as("served at once").isTrue();
      assertThat(cut).hasSize(1);
    } finally {
      never.countDown();
    }
  }

  /** Tasks the test runs by hand, by delay and by the thread that scheduled them. */
  private static class Timers implements Scheduler {
    final List<Object[]> due = new CopyOnWriteArrayList<>(); // {thread, delay, task}

    @Override
    public Cancellable schedule(Runnable task, long delayNanos) {
      due.add(new Object[] {Thread.currentThread(), delayNanos, task});
      return () -> false;
    }

    void pass(long delayNanos) {
      passFor(null, delayNanos);
    }

    void passFor(Thread scheduledBy, long delayNanos) {
      for (Object[] t : due) {
        if ((scheduledBy == null || t[0] == scheduledBy) && (long) t[1] == delayNanos) {
          due.remove(t);
          ((Runnable) t[2]).run();
        }
      }
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
