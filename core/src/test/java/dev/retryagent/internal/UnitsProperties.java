package dev.retryagent.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.time.Duration;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.BigRange;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Scale;

class UnitsProperties {

  @Property
  void everyDurationRoundTripsThroughItsCompactForm(
      @ForAll @LongRange(min = 0, max = 10_000L * 86_400_000_000_000L) long nanos) {
    Duration d = Duration.ofNanos(nanos);
    assertThat(Units.parseDuration(Units.formatDuration(d))).isEqualTo(d);
  }

  @Property
  void everyDurationRoundTripsThroughIso8601(
      @ForAll @LongRange(min = 0, max = 10_000L * 86_400_000_000_000L) long nanos) {
    Duration d = Duration.ofNanos(nanos);
    assertThat(Units.parseDuration(d.toString())).isEqualTo(d);
  }

  @Property
  void everyWholeMillisecondCountReadsTheSameInMsAndSeconds(
      @ForAll @LongRange(min = 0, max = 1_000_000_000L) long millis) {
    String seconds = BigDecimal.valueOf(millis).movePointLeft(3).toPlainString() + "s";
    assertThat(Units.parseDuration(millis + "ms")).isEqualTo(Units.parseDuration(seconds));
  }

  @Property
  void everyRatioRoundTripsThroughItsPercentForm(
      @ForAll @DoubleRange(min = 0, max = 10) double ratio) {
    assertThat(Units.parseRatio(Units.formatRatio(ratio))).isEqualTo(ratio);
  }

  @Property
  void aDecimalRatioReadsAsItsPercentDividedByAHundred(
      @ForAll @BigRange(min = "0", max = "1000") @Scale(3) BigDecimal percent) {
    String fraction = percent.movePointLeft(2).toPlainString();
    assertThat(Units.parseRatio(percent.toPlainString() + "%"))
        .isEqualTo(Units.parseRatio(fraction));
  }

  @Property
  void everySizeRoundTripsThroughItsFormattedForm(
      @ForAll @LongRange(min = 0, max = Long.MAX_VALUE) long bytes) {
    assertThat(Units.parseSize(Units.formatSize(bytes))).isEqualTo(bytes);
  }
}
