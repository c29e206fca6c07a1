package dev.retryagent.demo.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.retryagent.demo.server.FaultPlan.Fault;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FaultPlanTest {
  private static final int KEYS = 20_000;

  private static Map<Fault, Double> rates(FaultPlan plan, int attempt) {
    Map<Fault, Double> counts = new EnumMap<>(Fault.class);
    for (Fault f : Fault.values()) {
      counts.put(f, 0.0);
    }
    for (int k = 0; k < KEYS; k++) {
      counts.merge(
          plan.decide("/v1/summarise article-" + k + "-summarise", attempt), 1.0, Double::sum);
    }
    counts.replaceAll((f, n) -> n / KEYS);
    return counts;
  }

  @Test
  void honoursTheConfiguredProbabilitiesForASeed() {
    // 20,000 draws: one standard deviation is at most 0.0035, so 0.015 is over four.
    for (long seed : new long[] {1, 42, 987_654_321}) {
      Map<Fault, Double> r = rates(new FaultPlan(seed, 0.3, 0.1, 0.05), 1);

      assertThat(r.get(Fault.RATE_LIMIT)).isCloseTo(0.30, within(0.015));
      assertThat(r.get(Fault.SERVER_ERROR)).isCloseTo(0.10, within(0.015));
      assertThat(r.get(Fault.RESET)).isCloseTo(0.05, within(0.015));
      assertThat(r.get(Fault.NONE)).isCloseTo(0.55, within(0.015));
    }
  }

  @Test
  void laterAttemptsDrawAfreshWithTheSameProbabilities() {
    FaultPlan plan = new FaultPlan(7, 0.3, 0.1, 0.05);
    int bothFailed = 0;
    int firstFailed = 0;
    for (int k = 0; k < KEYS; k++) {
      String key = "k" + k;
      if (plan.decide(key, 1) != Fault.NONE) {
        firstFailed++;
        if (plan.decide(key, 2) != Fault.NONE) {
          bothFailed++;
        }
      }
    }

    assertThat(rates(plan, 2).get(Fault.NONE)).isCloseTo(0.55, within(0.015));
    assertThat((double) bothFailed / firstFailed).isCloseTo(0.45, within(0.02)); // independent
  }

  @Test
  void theSameSeedGivesTheSamePatternAndAnotherSeedAnother() {
    FaultPlan a = new FaultPlan(42, 0.3, 0.1, 0.05);
    FaultPlan again = new FaultPlan(42, 0.3, 0.1, 0.05);
    FaultPlan other = new FaultPlan(43, 0.3, 0.1, 0.05);
    int differ = 0;
    for (int k = 0; k < 1000; k++) {
      for (int attempt = 1; attempt <= 3; attempt++) {
        assertThat(again.decide("key" + k, attempt)).isEqualTo(a.decide("key" + k, attempt));
        differ += other.decide("key" + k, attempt) != a.decide("key" + k, attempt) ? 1 : 0;
      }
    }

    assertThat(differ).isGreaterThan(1000); // ~60% of 3000 draws differ between seeds
  }

  @Test
  void zeroProbabilitiesNeverFailAndOneAlwaysDoes() {
    FaultPlan none = new FaultPlan(1, 0, 0, 0);
    FaultPlan resets = new FaultPlan(1, 0, 0, 1);
    for (int k = 0; k < 1000; k++) {
      assertThat(none.decide("k" + k, 1)).isEqualTo(Fault.NONE);
      assertThat(resets.decide("k" + k, 1)).isEqualTo(Fault.RESET);
    }
  }

  @Test
  void rejectsProbabilitiesOutOfRangeOrAddingUpToMoreThanOne() {
    assertThatThrownBy(() -> new FaultPlan(1, -0.1, 0, 0)).hasMessageContaining("rateLimit");
    assertThatThrownBy(() -> new FaultPlan(1, 0, 1.5, 0)).hasMessageContaining("serverErrors");
    assertThatThrownBy(() -> new FaultPlan(1, 0, 0, Double.NaN)).hasMessageContaining("resets");
    assertThatThrownBy(() -> new FaultPlan(1, 0.6, 0.3, 0.2)).hasMessageContaining("at most 1");
  }
}
