package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.AsyncRetryLoop;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.testing.FakeRequest;
import dev.retryagent.testing.FakeTime;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The gauges read from the engine while an asynchronous retry waits. */
class EngineGaugesTest {
  @Test
  void aPendingAsyncRetryShowsInPrometheusAndJmxUntilItRuns() throws Exception {
    List<Runnable> held = new CopyOnWriteArrayList<>();
    Scheduler holding =
        (task, delayNanos) -> {
          held.add(task);
          return () -> held.remove(task);
        };
    FakeTime time = new FakeTime();
    RetryMetrics metrics = new RetryMetrics();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(holding)
            .random(() -> 0.5)
            .policy(Rig.policy("llm"))
            .listener(metrics)
            .build();
    JmxMetrics jmx = new JmxMetrics(metrics, engine, null, "dev.retryagent.gauges");
    jmx.register();
    try {
      CompletableFuture<Rig.Resp> result =
          AsyncRetryLoop.execute(
              engine,
              engine.newCall(FakeRequest.get("api.example.com", "/v1/x")),
              (attempt, timeout) ->
                  CompletableFuture.completedFuture(new Rig.Resp(attempt == 1 ? 503 : 200, null)),
              Rig.ACCESS);

      assertThat(held).hasSize(1);
      assertThat(PrometheusText.render(metrics, engine).lines())
          .contains("retryagent_pending_async_retries 1");
      assertThat(
              ManagementFactory.getPlatformMBeanServer()
                  .getAttribute(
                      JmxMetrics.engineName("dev.retryagent.gauges"), "PendingAsyncRetries"))
          .isEqualTo(1);

      held.remove(0).run();

      assertThat(result.get(10, TimeUnit.SECONDS).status).isEqualTo(200);
      assertThat(PrometheusText.render(metrics, engine).lines())
          .contains("retryagent_pending_async_retries 0");
      assertThat(metrics.route("llm").retries()).isEqualTo(1);
    } finally {
      jmx.unregister();
    }
  }
}
