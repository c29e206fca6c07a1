package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class RateLimitedExceptionTest {
  private static final String HOST = "https://api.example.com:443";

  private static long ms(long millis) {
    return TimeUnit.MILLISECONDS.toNanos(millis);
  }

  @Test
  void aPauseThatOutlastsTheDeadlineIsTheReasonWhateverMaxWaitIs() {
    // It said "no permit within maxWait 0ms (host paused after 429 for another 10000ms)": a
    // maxWait that played no part (it is counted from the pause's end), and no word of the
    // deadline.
    assertThat(RateLimitedException.noPermit(HOST, ms(9_000), 0, ms(10_000)))
        .hasMessage(
            "retry-agent: rate limit for https://api.example.com:443: the host is paused after 429"
                + " for another 10000ms, past the call's deadline (9000ms left)");
  }

  @Test
  void aPermitThatWouldComeAfterThePauseButPastTheDeadlineNamesTheDeadline() {
    // 5 s of pause, then up to 2 s for a permit, with 6 s left: the deadline refused it.
    assertThat(RateLimitedException.noPermit(HOST, ms(6_000), ms(2_000), ms(5_000)))
        .hasMessage(
            "retry-agent: rate limit for https://api.example.com:443: no permit before the call's"
                + " deadline (6000ms left) (host paused after 429 for another 5000ms)");
  }

  @Test
  void aPermitThatMaxWaitRefusedNamesMaxWait() {
    assertThat(RateLimitedException.noPermit(HOST, ms(30_000), ms(2_000), ms(5_000)))
        .hasMessage(
            "retry-agent: rate limit for https://api.example.com:443: no permit within maxWait"
                + " 2000ms (host paused after 429 for another 5000ms)");
    assertThat(RateLimitedException.noPermit(HOST, ms(30_000), ms(2_000), 0))
        .hasMessage(
            "retry-agent: rate limit for https://api.example.com:443: no permit within maxWait"
                + " 2000ms");
    assertThat(RateLimitedException.noPermit(HOST, ms(1_000), ms(2_000), 0))
        .hasMessage(
            "retry-agent: rate limit for https://api.example.com:443: no permit before the call's"
                + " deadline (1000ms left)");
  }
}
