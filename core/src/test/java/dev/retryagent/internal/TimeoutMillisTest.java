package dev.retryagent.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class TimeoutMillisTest {
  @Test
  void theApplicationsTimeoutsAreKeptAndBoundedByTheAttempts() {
    assertThat(TimeoutMillis.shorter(0, -1)).isZero();
    assertThat(TimeoutMillis.shorter(-1, -1)).isEqualTo(-1);
    assertThat(TimeoutMillis.shorter(500, -1)).isEqualTo(500);
    assertThat(TimeoutMillis.shorter(0, Duration.ofSeconds(2).toNanos())).isEqualTo(2000);
    assertThat(TimeoutMillis.shorter(-1, Duration.ofSeconds(2).toNanos())).isEqualTo(2000);
    assertThat(TimeoutMillis.shorter(500, Duration.ofSeconds(2).toNanos())).isEqualTo(500);
  }

  @Test
  void aBoundIsRoundedUpToAWholeMillisecondNeverToNone() {
    assertThat(TimeoutMillis.shorter(5000, 1)).isEqualTo(1);
    assertThat(TimeoutMillis.shorter(0, 0)).isEqualTo(1);
    assertThat(TimeoutMillis.shorter(0, 1_000_001)).isEqualTo(2);
    assertThat(TimeoutMillis.shorter(0, Long.MAX_VALUE)).isEqualTo(Integer.MAX_VALUE);
  }
}
