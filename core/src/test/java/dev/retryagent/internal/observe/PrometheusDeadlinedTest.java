package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.Scheduler;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
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

  private static final class TestError extends Error {
    TestError() {
      super("thrown by the test's exchange", null, false, false);
    }
  }
}
