package dev.retryagent.okhttp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEvent;
import dev.retryagent.internal.observe.RetryMetrics;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.util.List;
import okhttp3.OkHttpClient;

/**
 * The rig of a test whose first attempts OkHttp refuses (a call cancelled before it ran), side by
 * side with plain OkHttp: the host's bucket holds one permit, so the call after shows whether a
 * refused attempt gave its permit back, and the metrics whether it was counted.
 */
final class RefusedAttempts {
  final RetryMetrics metrics = new RetryMetrics();
  final AsyncRetrier retrier;

  RefusedAttempts(FakeTime time, List<RetryEvent> events) {
    retrier = new AsyncRetrier(TestEngines.rateLimitedTo(1, time, events, metrics));
  }

  /** {@code plain} with our interceptor, and the network interceptor when {@code resends}. */
  OkHttpClient.Builder ours(OkHttpClient.Builder plain, boolean resends) {
    OkHttpClient.Builder b = plain.addInterceptor(retrier.interceptor());
    if (resends) {
      b.addNetworkInterceptor(retrier.interceptor().networkInterceptor());
    }
    return b;
  }

  /**
   * Nothing reached the server, no attempt was counted, and each of the calls ended at attempt 0.
   */
  void assertNothingCounted(ScriptedHttpServer server, List<RetryEvent> events, int calls) {
    assertThat(server.requestCount()).isZero();
    assertThat(attempts()).isZero();
    assertThat(events).hasSize(calls).extracting(RetryEvent::attempt).containsOnly(0);
  }

  /** The attempts counted on the test's route. */
  long attempts() {
    return metrics.route("test").attempts();
  }
}
