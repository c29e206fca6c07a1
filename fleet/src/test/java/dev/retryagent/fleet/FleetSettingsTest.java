package dev.retryagent.fleet;

import static dev.retryagent.fleet.TestFleet.limit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.engine.Clock;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class FleetSettingsTest {
  @Test
  void defaultsAreTheDocumentedOnes() {
    FleetSettings s = FleetSettings.builder("redis://h").build();

    assertThat(s.connectTimeout()).isEqualTo(Duration.ofMillis(200));
    assertThat(s.commandTimeout()).isEqualTo(Duration.ofMillis(50));
    assertThat(s.keyPrefix()).isEqualTo("retry-agent");
    assertThat(s.fallbackShare()).isEqualTo(0.25);
    assertThat(s.fallbackPerLiveInstance()).isFalse();
  }

  @Test
  void theShareWithoutRedisIsFixedOrOneOverTheLiveInstancesLastSeen() {
    FleetSettings fixed = FleetSettings.builder("redis://h").fallbackShare(0.4).build();
    FleetSettings perInstance =
        FleetSettings.builder("redis://h").fallbackPerLiveInstance(true).build();

    assertThat(fixed.shareWithout(5)).isEqualTo(0.4);
    assertThat(perInstance.shareWithout(5)).isEqualTo(0.2);
    // Before any count was seen, the configured share.
    assertThat(perInstance.shareWithout(0)).isEqualTo(0.25);
  }

  @Test
  void leasesAreOnePermitBelowAHundredPerSecondAndNeverAboveAQuarterOfTheBurst() {
    FleetSettings auto = FleetSettings.builder("redis://h").build();

    assertThat(auto.leaseFor(limit(50, 50))).isEqualTo(1);
    assertThat(auto.leaseFor(limit(500, 100))).isEqualTo(5);
    assertThat(auto.leaseFor(limit(5_000, 100))).isEqualTo(10);
    assertThat(auto.leaseFor(limit(5_000, 8))).isEqualTo(2);
    assertThat(
            FleetSettings.builder("redis://h").leasePermits(1).build().leaseFor(limit(5_000, 100)))
        .isEqualTo(1);
  }

  @Test
  void durationsAreWholeMillisecondsRoundedUp() {
    FleetSettings s =
        FleetSettings.builder("redis://h").commandTimeout(Duration.ofNanos(1_500_000)).build();

    assertThat(s.commandTimeout()).isEqualTo(Duration.ofMillis(2));
  }

  @Test
  void rejectsValuesOutOfRangeByName() {
    FleetSettings.Builder b = FleetSettings.builder("redis://h");

    assertThatThrownBy(() -> b.fallbackShare(0)).hasMessageContaining("fleet.fallbackShare");
    assertThatThrownBy(() -> b.fallbackShare(1.5)).hasMessageContaining("fleet.fallbackShare");
    assertThatThrownBy(() -> b.commandTimeout(Duration.ZERO))
        .hasMessageContaining("fleet.redis.commandTimeout");
    assertThatThrownBy(() -> b.connectTimeout(Duration.ofMillis(-1)))
        .hasMessageContaining("fleet.redis.connectTimeout");
    assertThatThrownBy(() -> b.keyPrefix("")).hasMessageContaining("fleet.keyPrefix");
    assertThatThrownBy(() -> b.reconnectBackoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
        .hasMessageContaining("max below min");
  }

  @Test
  void theLocalShareKeepsABurstOfAtLeastOne() {
    try (FleetConnection unreachable =
        FleetConnection.start(
            FleetSettings.builder("redis://127.0.0.1:1").build(), Clock.SYSTEM, line -> {})) {
      FleetRateLimiter limiter = unreachable.limiter("r", limit(10, 3), Duration.ofSeconds(1));

      assertThat(limiter.localPolicy(0.25).perSecond()).isEqualTo(2.5);
      assertThat(limiter.localPolicy(0.25).burst()).isEqualTo(1);
      assertThat(limiter.localPolicy(1).burst()).isEqualTo(3);
    }
  }
}
