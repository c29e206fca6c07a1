package dev.retryagent.internal.jdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.testing.FakeTime;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The client refusing an attempt that starts after a wait, on the scheduler's thread. */
class JdkRefusalAfterWaitTest {
  @Test
  void aRefusalAfterTheFirstPermitsWaitFailsTheFutureEvenWhileTheCallerIsStillInSendAsync()
      throws Exception {
    // The wait's task runs at once on a thread of its own, racing the caller still inside
    // sendAsync: the loop took that thread for the caller's (a flag, not the thread), threw the
    // refusal out of the scheduler's task, and the caller's future never completed.
    FakeTime time = new FakeTime();
    Scheduler racing =
        (task, delayNanos) -> {
          Thread t = new Thread(task, "racing-scheduler");
          t.setDaemon(true);
          t.start();
          return () -> false;
        };
    JdkTransport refusing =
        new JdkTransport() {
          @Override
          public <T> HttpResponse<T> send(HttpRequest r, HttpResponse.BodyHandler<T> h) {
            throw new UnsupportedOperationException();
          }

          @Override
          public <T> CompletableFuture<HttpResponse<T>> sendAsync(
              HttpRequest r, HttpResponse.BodyHandler<T> h, HttpResponse.PushPromiseHandler<T> p) {
            // As the JDK refuses a request it cannot send (its ProxySelector threw, CONNECT).
            throw new IllegalArgumentException("refused");
          }
        };
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:9/a")).build();
    for (int i = 0; i < 2000; i++) {
      RetryEngine engine =
          RetryEngine.builder()
              .clock(time)
              .sleeper(time)
              .scheduler(racing)
              .mode(Mode.ENFORCE)
              .policy(
                  new Policy(
                      "test",
                      RetryPolicy.builder().build(),
                      Policy.defaults().budget(),
                      CircuitBreakerPolicy.defaults(),
                      RateLimitPolicy.builder()
                          .enabled(true)
                          .perSecond(1)
                          .burst(1)
                          .maxWait(Duration.ofSeconds(5))
                          .build()))
              .build();
      JdkRetrying retrying = new JdkRetrying(engine);
      // The first call takes the one permit (and is refused on the caller's thread).
      catchThrowable(
          () -> retrying.sendAsync(refusing, request, HttpResponse.BodyHandlers.ofString(), null));

      CompletableFuture<HttpResponse<String>> waiting =
          retrying.sendAsync(refusing, request, HttpResponse.BodyHandlers.ofString(), null);

      Throwable t = catchThrowable(() -> waiting.get(5, TimeUnit.SECONDS));
      assertThat(t).as("call %d", i).isInstanceOf(ExecutionException.class);
      assertThat(t.getCause()).isInstanceOf(IllegalArgumentException.class).hasMessage("refused");
    }
  }
}
