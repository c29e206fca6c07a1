package dev.retryagent.okhttp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.testing.ShallowSize;
import org.junit.jupiter.api.Test;

/**
 * Issue 13's budget for a synchronous OkHttp call: at most 128 B per call over the plain client, of
 * which OkHttp itself takes 56 for any application interceptor (a chain copy, a longer list). So
 * our one object per call, the engine's call and its view together, has 72 (measured with {@code
 * AllocSitesRun okhttp}, docs/BENCHMARKS.md). A field more in the engine's call or here breaks it.
 */
class CallSizeTest {
  @Test
  void aSynchronousCallIsOneObjectOfAtMost72Bytes() {
    assertThat(ShallowSize.of(SyncOkCall.class)).isLessThanOrEqualTo(72);
  }

  @Test
  void theModelCountsWhatTheRunsMeasured() throws ClassNotFoundException {
    // AllocSitesRun (docs/BENCHMARKS.md, issue 13's sixth pass): an enqueued call's view 32 B, the
    // engine's call of a separate view 64 B.
    assertThat(ShallowSize.of(OkRequest.class)).isEqualTo(32);
    assertThat(ShallowSize.of(Class.forName("dev.retryagent.engine.ViewedCall"))).isEqualTo(64);
  }
}
