package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** When the exporters start after the first call ({@link AgentRuntime#pauseAfterFirstUse}). */
class ExportersStartTest {
  @Test
  void aSecondAfterTheFirstCallButNeverPastTheDelayAfterStartUp() {
    // the default delay (10 s): a call at 200 ms starts them at 1.2 s, one at 9.5 s at 10 s
    assertThat(AgentRuntime.pauseAfterFirstUse(200, 10_000)).isEqualTo(1_000);
    assertThat(AgentRuntime.pauseAfterFirstUse(9_500, 10_000)).isEqualTo(500);
    assertThat(AgentRuntime.pauseAfterFirstUse(10_000, 10_000)).isZero();
    assertThat(AgentRuntime.pauseAfterFirstUse(12_000, 10_000)).isZero();
    // retryagent.exporters.delayMillis=0 (the integration tests): at once, call or not
    assertThat(AgentRuntime.pauseAfterFirstUse(0, 0)).isZero();
    assertThat(AgentRuntime.pauseAfterFirstUse(300, 0)).isZero();
  }
}
