package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
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

  private static ClassLoader contextLoaderUnlessItIs(ClassLoader webApp) {
    ClassLoader l = Thread.currentThread().getContextClassLoader();
    return l == null ? ClassLoader.getPlatformClassLoader() : l;
  }
}
