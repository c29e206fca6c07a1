package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeRequest;
import org.junit.jupiter.api.Test;

class OffModeTest {
  @Test
  void offPassesEveryCallThroughAndKeepsNoState() {
    EngineFixture f = EngineFixture.of(TestPolicy.create().build(), Mode.OFF);
    RetryCall call = f.newCall(FakeRequest.get());
    assertThat(call.passThrough()).isTrue();
    assertThat(f.engine.trackedTargets()).isZero();
    assertThat(f.listener.events()).isEmpty();
  }

  @Test
  void enforceAndObserveDoNotPassThrough() {
    assertThat(
            EngineFixture.of(TestPolicy.create().build(), Mode.ENFORCE)
                .newCall(FakeRequest.get())
                .passThrough())
        .isFalse();
    assertThat(
            EngineFixture.of(TestPolicy.create().build(), Mode.OBSERVE)
                .newCall(FakeRequest.get())
                .passThrough())
        .isFalse();
  }

  @Test
  void reconfiguringToOffAppliesToTheNextCall() {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    RetryCall before = f.newCall(FakeRequest.get());
    f.engine.reconfigure(Mode.OFF, PolicyResolver.always(TestPolicy.create().build()));
    assertThat(before.passThrough()).isFalse();
    assertThat(f.newCall(FakeRequest.get()).passThrough()).isTrue();
    assertThat(f.engine.mode()).isEqualTo(Mode.OFF);
  }
}
