package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeRequest;
import org.junit.jupiter.api.Test;

class ExitSummaryTest {
  @Test
  void oneLinePerRouteWithEveryCountAndTheReasonsThatOccurred() {
    RetryMetrics m = new RetryMetrics();
    Rig llm = new Rig(Rig.policy("llm", b -> b.maxAttempts(2)), m);
    Rig pay =
        new Rig(Rig.policy("payments", b -> b.unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY)), m);
    Rig breaker = new Rig(Rig.breakerPolicy("search", CircuitBreakerPolicy.Scope.HOST), m);

    llm.call(FakeRequest.get("api.example.com", "/v1/x"), 503, 200);
    llm.call(FakeRequest.get("api.example.com", "/v1/x"), 503, 503);
    pay.call(FakeRequest.post("pay.example.com", "/v1/charges"), 503);
    pay.call(FakeRequest.post("pay.example.com", "/v1/charges"), 201);
    for (int i = 0; i < 4; i++) {
      breaker.call(FakeRequest.get("search.example.com", "/q"), 503);
    }
    breaker.call(FakeRequest.get("search.example.com", "/q"));

    assertThat(ExitSummary.lines(m))
        .containsExactly(
            "retry-agent: summary [route=llm] calls=2 succeeded=1 failed=1 retries=2 gave-up=1"
                + " (attempts=1) breaker-opens=0",
            "retry-agent: summary [route=payments] calls=2 succeeded=1 failed=1 retries=0"
                + " gave-up=1 (not-idempotent=1) breaker-opens=0",
            "retry-agent: summary [route=search] calls=5 succeeded=0 failed=5 retries=0 gave-up=5"
                + " (attempts=4, circuit-open=1) breaker-opens=1");
  }

  @Test
  void observeModeShowsWhatItWouldHaveDone() {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Mode.OBSERVE, Rig.policy("llm"), m);

    rig.call(FakeRequest.get("api.example.com", "/v1/x"), 503);

    assertThat(ExitSummary.text(m))
        .isEqualTo(
            "retry-agent: summary [route=llm] calls=1 succeeded=0 failed=1 retries=0"
                + " would-retry=1 gave-up=0 breaker-opens=0");
  }

  @Test
  void withoutCallsItSaysSo() {
    assertThat(ExitSummary.lines(new RetryMetrics()))
        .containsExactly("retry-agent: summary: no calls went through the agent");
  }
}
