package dev.retryagent.internal.jdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The state machine of a client's calls in progress and its shutdown, without a client. */
class ClientCallsTest {
  private final ClientCalls calls = new ClientCalls();

  @Test
  void callsComeAndGoWithoutAShutdownToRun() {
    assertThat(calls.enter()).isTrue();
    assertThat(calls.enter()).isTrue();
    assertThat(calls.inProgress()).isEqualTo(2);

    assertThat(calls.exit()).isFalse();
    assertThat(calls.exit()).isFalse();

    assertThat(calls.inProgress()).isZero();
    assertThat(calls.refuses()).isFalse();
  }

  @Test
  void aShutdownWithNoCallInProgressRunsAtOnceAndRefusesWhatComesAfter() {
    assertThat(calls.deferShutdown()).isFalse();

    assertThat(calls.refuses()).isTrue();
    assertThat(calls.enter()).isFalse();
    assertThat(calls.inProgress()).isZero();
  }

  @Test
  void aShutdownWithCallsInProgressIsRunByTheLastToEnd() {
    calls.enter();
    calls.enter();

    assertThat(calls.deferShutdown()).isTrue();
    assertThat(calls.deferShutdown()).as("asked again: still deferred").isTrue();
    assertThat(calls.enter()).isFalse();

    assertThat(calls.exit()).isFalse();
    assertThat(calls.exit()).as("the last call runs the shutdown").isTrue();
    assertThat(calls.shutDownNow()).isFalse();
  }

  @Test
  void shutdownNowRefusesAndStopsRetriesButDefersNothing() {
    calls.enter();

    calls.shutDownNowCalled();

    assertThat(calls.shutDownNow()).isTrue();
    assertThat(calls.enter()).isFalse();
    assertThat(calls.exit()).as("a shutdown is pending: the JDK's is idempotent").isTrue();
  }

  @Test
  void shutdownNowEndsTheWaitsKeptAndNotThoseOver() {
    ClientCalls calls = new ClientCalls();
    java.util.List<String> ended = new java.util.ArrayList<>();
    dev.retryagent.engine.RetryCall.Wait first = () -> ended.add("first");
    dev.retryagent.engine.RetryCall.Wait second = () -> ended.add("second");
    dev.retryagent.engine.RetryCall.Wait throwing =
        () -> {
          throw new IllegalStateException("a bug of that call's");
        };
    assertThat(calls.waitStarts(first)).isTrue();
    assertThat(calls.waitStarts(throwing)).isTrue();
    assertThat(calls.waitStarts(second)).isTrue();
    calls.waitEnds(second);
    calls.waitEnds(throwing);
    calls.waitStarts(throwing); // a later wait of the same call

    calls.shutDownNowCalled();

    assertThat(ended).containsExactly("first");
    assertThat(calls.shutDownNow()).isTrue();
  }

  @Test
  void awaitCallsReturnsWhenTheLastCallEnds() throws Exception {
    calls.enter();
    calls.deferShutdown();
    AtomicInteger shutdownNows = new AtomicInteger();
    CompletableFuture<Void> closing =
        CompletableFuture.runAsync(() -> calls.awaitCalls(shutdownNows::incrementAndGet));

    assertThat(closing).isNotDone();
    assertThat(calls.exit()).isTrue();

    closing.get(10, TimeUnit.SECONDS);
    assertThat(shutdownNows).hasValue(0);
  }

  @Test
  void anInterruptDuringTheWaitRunsShutdownNowOnceAndSetsTheFlagAgain() throws Exception {
    // The shutdownNow given here only counts (the real one ends the wait: shutDownNowCalled).
    calls.enter();
    calls.deferShutdown();
    AtomicInteger shutdownNows = new AtomicInteger();
    CompletableFuture<Boolean> interruptedAfter = new CompletableFuture<>();
    Thread closer =
        new Thread(
            () -> {
              calls.awaitCalls(shutdownNows::incrementAndGet);
              interruptedAfter.complete(Thread.currentThread().isInterrupted());
            },
            "closer");
    closer.start();
    await().until(() -> closer.getState() == Thread.State.WAITING);

    closer.interrupt();
    await().until(() -> shutdownNows.get() == 1);
    await().until(() -> closer.getState() == Thread.State.WAITING);
    closer.interrupt();
    await().until(() -> closer.getState() == Thread.State.WAITING);

    assertThat(interruptedAfter).isNotDone();
    calls.exit();
    assertThat(interruptedAfter.get(10, TimeUnit.SECONDS)).as("the flag set again").isTrue();
    assertThat(shutdownNows).hasValue(1);
  }

  @Test
  void shutdownNowEndsTheWaitOfAClose() throws Exception {
    calls.enter();
    calls.deferShutdown();
    CompletableFuture<Void> closing = CompletableFuture.runAsync(() -> calls.awaitCalls(() -> {}));
    assertThat(closing).isNotDone();

    calls.shutDownNowCalled();

    closing.get(10, TimeUnit.SECONDS);
    assertThat(calls.inProgress()).as("the call still waits for its delay").isEqualTo(1);
  }
}
