package dev.retryagent.okhttp;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Which OkHttp keeps an {@code InterruptedException} its callback throws from its thread. */
class OkHttpCallbacksTest {
  @Test
  void okHttpKeepsAnInterruptFromItsCallbackFrom52On() {
    assertThat(OkHttpCallbacks.keepsInterrupts("5.2.0")).isTrue();
    assertThat(OkHttpCallbacks.keepsInterrupts("5.3.0-SNAPSHOT")).isTrue();
    assertThat(OkHttpCallbacks.keepsInterrupts("5.10.1")).isTrue();
    assertThat(OkHttpCallbacks.keepsInterrupts("6.0.0")).isTrue();
    assertThat(OkHttpCallbacks.keepsInterrupts("5.1.0")).isFalse();
    assertThat(OkHttpCallbacks.keepsInterrupts("5.0.0-alpha.16")).isFalse();
    assertThat(OkHttpCallbacks.keepsInterrupts("4.12.0")).isFalse();
    assertThat(OkHttpCallbacks.keepsInterrupts("x")).isFalse();
    assertThat(OkHttpCallbacks.keepsInterrupts(null)).isFalse();
  }

  @Test
  void theVersionUnderTestIsReadAsItIs() {
    String version = System.getProperty("expected.okhttp", "3.14.9");
    assertThat(OkHttpCallbacks.KEEP_INTERRUPTS)
        .isEqualTo(
            version.startsWith("5.") && !version.startsWith("5.0") && !version.startsWith("5.1."));
  }
}
