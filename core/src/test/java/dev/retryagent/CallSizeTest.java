package dev.retryagent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.testing.ShallowSize;
import org.junit.jupiter.api.Test;

/**
 * Issue 13's budget: at most 128 B per call over the plain client, through the decorators and the
 * agent. The objects of ours each call makes are one per client, the engine's call and its request
 * view together ({@code SelfViewCall}); their sizes are measured with {@code AllocSitesRun}
 * (docs/BENCHMARKS.md) and kept here, so that a field more in the engine's call or a view fails the
 * build rather than the next measurement.
 */
class CallSizeTest {
  private static long size(String className) throws ClassNotFoundException {
    return ShallowSize.of(Class.forName(className));
  }

  @Test
  void anOkHttpCallIsOneObjectOfAtMost72Bytes() throws ClassNotFoundException {
    // OkHttp itself takes 56 B for any application interceptor (a chain copy, a longer list).
    assertThat(size("dev.retryagent.okhttp.SyncOkCall")).isLessThanOrEqualTo(72);
  }

  @Test
  void aJavaNetHttpCallIsOneObjectOfAtMost80Bytes() throws ClassNotFoundException {
    // Through the agent, 16 B more: the transport that sends each attempt on the caller's client.
    // (104 B until the attempt header, the method, scheme, host and port were read when asked.)
    assertThat(size("dev.retryagent.internal.jdk.JdkRequest")).isLessThanOrEqualTo(80);
  }

  @Test
  void theModelCountsWhatTheRunsMeasured() throws ClassNotFoundException {
    // AllocSitesRun (docs/BENCHMARKS.md, issue 13): an enqueued OkHttp call's view 32 B, the
    // engine's call of a separate view 64 B, a java.net.http call 80 B.
    assertThat(size("dev.retryagent.internal.jdk.JdkRequest")).isEqualTo(80);
    assertThat(size("dev.retryagent.okhttp.OkRequest")).isEqualTo(32);
    assertThat(size("dev.retryagent.engine.ViewedCall")).isEqualTo(64);
  }
}
