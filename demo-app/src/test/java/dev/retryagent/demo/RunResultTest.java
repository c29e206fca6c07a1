package dev.retryagent.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class RunResultTest {
  @Test
  void printsTheGroundTruthInExactlyTheDocumentedForm() {
    RunResult r = new RunResult(20, 0, 57, 1, Duration.ofMillis(3_040));

    assertThat(r.outcomeLine()).isEqualTo("Succeeded: 20 | Failed: 0");
    assertThat(r.truthLine())
        .isEqualTo("Provider requests: 57 | Charges created: 1 | Duration: 3.0s");
  }

  @Test
  void roundsTheDurationToTenthsWithADot() {
    assertThat(new RunResult(3, 17, 28, 0, Duration.ofMillis(12_345)).truthLine())
        .isEqualTo("Provider requests: 28 | Charges created: 0 | Duration: 12.3s");
    assertThat(new RunResult(0, 1, 1, 0, Duration.ofMillis(49)).truthLine())
        .endsWith("Duration: 0.0s");
  }

  @Test
  void allGoodMeansNoFailedArticleAndExactlyOneCharge() {
    assertThat(new RunResult(20, 0, 57, 1, Duration.ZERO).allGood()).isTrue();
    assertThat(new RunResult(19, 1, 57, 1, Duration.ZERO).allGood()).isFalse();
    assertThat(new RunResult(20, 0, 57, 0, Duration.ZERO).allGood()).isFalse();
    assertThat(new RunResult(20, 0, 57, 2, Duration.ZERO).allGood()).isFalse();
  }
}
