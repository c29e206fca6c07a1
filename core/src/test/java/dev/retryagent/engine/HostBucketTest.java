package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.internal.engine.RateLimiter;
import dev.retryagent.policy.RateLimitPolicy;
import org.junit.jupiter.api.Test;

class HostBucketTest {
  private final HostBucket bucket =
      new HostBucket(new RateLimiter(RateLimitPolicy.builder().enabled(true).build(), 0), 1, 30);

  @Test
  void theBoundIsTheLongestOfTheLatestConfigurationsRoutes() {
    bucket.usedBy(1, 60);
    bucket.usedBy(1, 10);
    assertThat(bucket.pauseBoundNanos()).isEqualTo(60);

    // A reload lowers retryAfter.max: the old configuration's routes no longer count.
    bucket.usedBy(2, 20);
    assertThat(bucket.pauseBoundNanos()).isEqualTo(20);
    bucket.usedBy(1, 60); // a call that started before the reload makes its state late
    assertThat(bucket.pauseBoundNanos()).isEqualTo(20);
  }
}
