package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The production scheduler: two daemon threads wait for due tasks and run them. */
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
  void manyWaitingTasksShareTwoThreadsAndABlockedTaskHoldsNoOther() {
    Scheduler fresh = new SharedScheduler();
    CountDownLatch release = new CountDownLatch(1);
    Set<Thread> threads = ConcurrentHashMap.newKeySet();
    AtomicInteger ran = new AtomicInteger();
    fresh.schedule(
        () -> {
          threads.add(Thread.currentThread());
          try {
            release.await(10, TimeUnit.SECONDS); // a slow name resolution, say
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        },
        0);
    for (int i = 0; i < 1000; i++) {
      fresh.schedule(
          () -> {
            threads.add(Thread.currentThread());
            ran.incrementAndGet();
          },
          i * 10_000L);
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> ran.get() == 1000);
    release.countDown();
    assertThat(threads).hasSizeLessThanOrEqualTo(SharedScheduler.THREADS);
    assertThat(threads).allSatisfy(t -> assertThat(t.getName()).startsWith("retry-agent-async-"));
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

  @Test
  void aTaskThatThrowsStopsNoOtherTask() {
    Scheduler fresh = new SharedScheduler();
    AtomicInteger ran = new AtomicInteger();
    for (int i = 0; i < 4; i++) {
      fresh.schedule(
          () -> {
            throw new IllegalStateException("a bug in a task");
          },
          0);
    }
    for (int i = 0; i < 4; i++) {
      fresh.schedule(ran::incrementAndGet, 1_000_000L);
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> ran.get() == 4);
  }

  @Test
  void itsThreadsDoNotKeepTheSchedulingThreadsContextClassLoader() throws Exception {
    ClassLoader webApp = new java.net.URLClassLoader(new java.net.URL[0], null);
    Scheduler fresh = new SharedScheduler();
    AtomicReference<ClassLoader> seen = new AtomicReference<>();
    Thread scheduling =
        new Thread(
            () -> {
              // Its first task makes its timer thread from this thread, and the timer its workers.
              for (int i = 0; i < 4; i++) {
                fresh.schedule(() -> seen.compareAndSet(null, contextLoaderUnlessItIs(webApp)), 0);
              }
            });
    scheduling.setContextClassLoader(webApp);
    scheduling.start();
    scheduling.join();

    await().atMost(Duration.ofSeconds(5)).until(() -> seen.get() != null);
    assertThat(seen.get()).isNotSameAs(webApp);
  }

  // The pool's worker cannot start ("unable to create native thread"): the pool throws that Error
  // from schedule after it queued the task. Callers take a throw as a refusal and go on without
  // the task (run it themselves, end the call, use another thread), so a task reported refused
  // must never run, and a task that runs must not be reported refused.

  @Test
  void aTaskReportedRefusedBecauseNoWorkerCouldStartNeverRuns() throws Exception {
    SharedScheduler fresh = new SharedScheduler(failingAt(1, null));
    AtomicBoolean refusedRan = new AtomicBoolean();
    Throwable thrown = catchThrowable(() -> fresh.schedule(() -> refusedRan.set(true), 0));
    assertThat(thrown).as("no worker: refused").isNotNull();
    // The next task's worker, the pool's only one, takes the tasks in their order: a task still
    // queued before it would run first.
    CountDownLatch next = new CountDownLatch(1);
    fresh.schedule(next::countDown, 0);
    assertThat(next.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(refusedRan).as("the refused task ran").isFalse();
    // A refusal the callers' catch of RuntimeException hears, not the worker's Error.
    assertThat(thrown).isInstanceOf(RejectedExecutionException.class);
  }

  @Test
  void aTaskQueuedWhileAWorkerIsThereIsNotReportedRefusedAndRunsOnce() throws Exception {
    SharedScheduler fresh = new SharedScheduler(failingAt(2, null));
    CountDownLatch first = new CountDownLatch(1);
    fresh.schedule(first::countDown, 0); // the first worker, which stays while tasks wait
    assertThat(first.await(10, TimeUnit.SECONDS)).isTrue();
    AtomicInteger runs = new AtomicInteger();
    // Due in 1 ms: still queued as the second worker fails to start (the reload watcher's next
    // look, scheduled from the pool's own thread, is such a task).
    Throwable thrown = catchThrowable(() -> fresh.schedule(runs::incrementAndGet, 1_000_000L));
    assertThat(thrown).as("reported refused").isNull();
    await().atMost(Duration.ofSeconds(10)).until(() -> runs.get() == 1);
  }

  /**
   * The task is still running when the next worker's start fails (held there until the schedule
   * returned): the pool's own cancel(false) succeeds on a task under way, and the task was reported
   * refused while it ran (a caller went on without it: it ran twice). Before, the task returned as
   * it let the failing start go, and only a worker descheduled between the two (CI's load) saw it.
   */
  @Test
  void aTaskAWorkerTookAsTheNextWorkerFailedIsNotReportedRefused() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    SharedScheduler fresh = new SharedScheduler(failingAt(2, started));
    CountDownLatch first = new CountDownLatch(1);
    fresh.schedule(first::countDown, 0);
    assertThat(first.await(10, TimeUnit.SECONDS)).isTrue();
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch scheduleReturned = new CountDownLatch(1);
    CountDownLatch ended = new CountDownLatch(1);
    Throwable thrown =
        catchThrowable(
            () ->
                fresh.schedule(
                    () -> {
                      runs.incrementAndGet();
                      started.countDown();
                      try {
                        scheduleReturned.await(10, TimeUnit.SECONDS);
                      } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                      }
                      ended.countDown();
                    },
                    0));
    scheduleReturned.countDown();
    assertThat(thrown).as("reported refused").isNull();
    assertThat(ended.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(runs).hasValue(1);
  }

  /** "True when it will not run": a task under way is not withdrawn by a cancel, and runs whole. */
  @Test
  void aCancelOfATaskUnderWayIsFalseAndItRunsWhole() throws Exception {
    SharedScheduler fresh = new SharedScheduler();
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch cancelled = new CountDownLatch(1);
    AtomicInteger ended = new AtomicInteger();
    Scheduler.Cancellable c =
        fresh.schedule(
            () -> {
              started.countDown();
              try {
                cancelled.await(10, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              ended.incrementAndGet();
            },
            0);
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    boolean withdrawn = c.cancel();
    cancelled.countDown();
    assertThat(withdrawn).as("cancel() of a task under way").isFalse();
    await().atMost(Duration.ofSeconds(10)).until(() -> ended.get() == 1);
    assertThat(c.cancel()).as("cancel() of a task that ran").isFalse();
  }

  /** A task cancelled while it waits never runs, and a second cancel says it did nothing more. */
  @Test
  void aCancelOfAWaitingTaskIsTrueAndItNeverRuns() throws Exception {
    SharedScheduler fresh = new SharedScheduler();
    AtomicInteger runs = new AtomicInteger();
    Scheduler.Cancellable c =
        fresh.schedule(runs::incrementAndGet, TimeUnit.MILLISECONDS.toNanos(50));
    assertThat(c.cancel()).isTrue();
    assertThat(c.cancel()).as("a second cancel").isFalse();
    CountDownLatch later = new CountDownLatch(1);
    fresh.schedule(later::countDown, TimeUnit.MILLISECONDS.toNanos(100));
    assertThat(later.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(runs).hasValue(0);
  }

  @Test
  void aTaskQueuedWhileAnotherSchedulesWorkerIsFailingToStartIsReportedRefusedNotLeftWaiting()
      throws Exception {
    // Two schedules at once, neither worker's thread able to start (Thread.start throws, as the
    // JVM out of native threads does). The first one's worker is the pool's (its poolSize counts
    // it) while its start is failing: the second, failing too, took it for a running worker and
    // reported its task scheduled; the first's then failed, and the second's task waited in the
    // queue with no worker, for the next schedule, maybe for good.
    assumeTrue(
        Runtime.version().feature() < 21, "the pool starts its threads itself before JDK 21");
    CountDownLatch firstStarting = new CountDownLatch(1);
    CountDownLatch firstFails = new CountDownLatch(1);
    AtomicInteger made = new AtomicInteger();
    ThreadFactory threads =
        r -> {
          int n = made.incrementAndGet();
          Thread t =
              new Thread(r, "retry-agent-async-test-" + n) {
                @Override
                public synchronized void start() {
                  if (n == 1) {
                    firstStarting.countDown();
                    awaitQuietly(firstFails);
                  }
                  if (n <= 2) {
                    throw new OutOfMemoryError("unable to create native thread (the test's)");
                  }
                  super.start();
                }
              };
          t.setDaemon(true);
          return t;
        };
    SharedScheduler fresh = new SharedScheduler(threads);
    AtomicReference<Throwable> firstThrown = new AtomicReference<>();
    Thread first =
        new Thread(() -> firstThrown.set(catchThrowable(() -> fresh.schedule(() -> {}, 0))));
    first.start();
    assertThat(firstStarting.await(10, TimeUnit.SECONDS)).isTrue();
    AtomicBoolean secondRan = new AtomicBoolean();

    Throwable secondThrown = catchThrowable(() -> fresh.schedule(() -> secondRan.set(true), 0));
    firstFails.countDown();
    first.join(10_000);

    assertThat(firstThrown.get()).isInstanceOf(RejectedExecutionException.class);
    assertThat(secondThrown)
        .as("no worker ran: refused")
        .isInstanceOf(RejectedExecutionException.class);
    CountDownLatch next = new CountDownLatch(1);
    fresh.schedule(next::countDown, 0); // its worker starts: a task left queued would run first
    assertThat(next.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(secondRan).as("the refused task ran").isFalse();
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      assertThat(latch.await(10, TimeUnit.SECONDS)).isTrue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Threads as the pool's, but the {@code failing}-th made fails as the JVM out of native threads
   * does, once {@code first} (when given) is counted down: the queued task is then on a worker.
   */
  private static ThreadFactory failingAt(int failing, CountDownLatch first) {
    AtomicInteger made = new AtomicInteger();
    return r -> {
      if (made.incrementAndGet() == failing) {
        if (first != null) {
          try {
            assertThat(first.await(10, TimeUnit.SECONDS)).as("the task taken").isTrue();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        throw new OutOfMemoryError("unable to create native thread (the test's)");
      }
      Thread t = new Thread(r, "retry-agent-async-test-" + made.get());
      t.setDaemon(true);
      return t;
    };
  }

  private static ClassLoader contextLoaderUnlessItIs(ClassLoader webApp) {
    ClassLoader l = Thread.currentThread().getContextClassLoader();
    return l == null ? ClassLoader.getPlatformClassLoader() : l;
  }
}
