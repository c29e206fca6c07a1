package dev.retryagent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.internal.apache.ExchangeLog;
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
  void anApacheHttpClient45CallIsOneObjectOfAtMost80Bytes() throws ClassNotFoundException {
    // The call, its view, its attempt, its sleeper and its abort signal in one (thirtieth pass:
    // before, a view 48 B, the engine's call 64 B, its extras 64 B for the abort signal, the
    // attempt lambda 40 B, the signal 16 B and the sleeper 24 B).
    assertThat(size("dev.retryagent.apache4.Call4")).isLessThanOrEqualTo(80);
  }

  @Test
  void anApacheHttpClient5ClassicCallIsOneObjectOfAtMost72Bytes() throws ClassNotFoundException {
    // The call, its view, its attempts, its sleeper and its cancel signal in one (thirtieth pass:
    // before, a view 40 B, the engine's call 64 B, the attempts 32 B, the call's extras 64 B for
    // the cancel signal, the signal 16 B and the sleeper 24 B). HttpClient adds 2 x 16 B for the
    // two chain elements of ours.
    assertThat(size("dev.retryagent.apache5.ClassicCall")).isLessThanOrEqualTo(72);
  }

  @Test
  void anApacheAttemptIsOneObjectThatIsItsExchangeLog() throws ClassNotFoundException {
    // Per attempt, beside what HttpClient makes: the attempt is its exchanges' log (thirtieth
    // pass: before, an attempt of 32 B and a log of 40 B).
    for (String attempt :
        new String[] {
          "dev.retryagent.apache4.ObservingContext",
          "dev.retryagent.apache5.RetryExecHandler$Attempt"
        }) {
      assertThat(Class.forName(attempt)).as(attempt).isAssignableTo(ExchangeLog.class);
    }
    assertThat(size("dev.retryagent.apache4.ObservingContext")).isLessThanOrEqualTo(48);
    // Only an attempt with a bound on its time (perAttemptTimeout, or a retry under the deadline)
    // is the larger BoundedContext: the bound and the RequestConfig it shortened, kept for the
    // attempt's next reads.
    assertThat(size("dev.retryagent.apache4.BoundedContext")).isLessThanOrEqualTo(64);
    assertThat(size("dev.retryagent.apache5.RetryExecHandler$Attempt")).isLessThanOrEqualTo(56);
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
