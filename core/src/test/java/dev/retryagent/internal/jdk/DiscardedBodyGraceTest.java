package dev.retryagent.internal.jdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Where a retried body's grace ends ({@link DiscardedBody#run}): on our scheduler's threads, which
 * inherit nothing from the application's (AgentThreads). It ran on the JDK's {@code
 * CompletableFuture.delayedExecutor}, whose one thread the JVM's first user makes, keeping that
 * thread's context class loader and inheritable thread-locals for good: a webapp's, when the agent
 * was that first user on a webapp's executor.
 */
class DiscardedBodyGraceTest {
  @Test
  void aHeldBodyIsLetGoOnOneOfOurThreads() {
    AtomicReference<String> cancelledOn = new AtomicReference<>();
    DiscardedBody<Object> body = new DiscardedBody<>(null, null, null, 0);
    body.onSubscribe(
        new Flow.Subscription() {
          @Override
          public void request(long n) {}

          @Override
          public void cancel() {
            cancelledOn.set(Thread.currentThread().getName());
          }
        });
    // No byte, no end: the body is held; its grace (the least, 250 ms) lets it go.
    await().atMost(Duration.ofSeconds(30)).until(() -> cancelledOn.get() != null);
    assertThat(cancelledOn.get()).startsWith("retry-agent-async-");
    assertThat(body.getBody().toCompletableFuture().join()).isNull();
  }
}
