package dev.retryagent.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class UnitsTest {

  @ParameterizedTest
  @CsvSource({
    "250ms, PT0.25S",
    "2s, PT2S",
    "1m, PT1M",
    "1h, PT1H",
    "1d, PT24H",
    "1m30s, PT1M30S",
    "1.5s, PT1.5S",
    ".5s, PT0.5S",
    "'250 ms', PT0.25S",
    "10us, PT0.00001S",
    "7ns, PT0.000000007S",
    "0s, PT0S",
    "PT2S, PT2S",
    "pt2s, PT2S",
    "P1DT2H, PT26H",
    "PT0.5S, PT0.5S"
  })
  void readsDurationsWithUnitsAndIso8601(String text, String iso) {
    assertThat(Units.parseDuration(text)).isEqualTo(Duration.parse(iso));
  }

  @Test
  void refusesABareNumberAndSuggestsUnits() {
    assertThatThrownBy(() -> Units.parseDuration("5"))
        .hasMessage("a duration needs a unit: did you mean 5s or 5ms?");
    assertThatThrownBy(() -> Units.parseDuration("0.5"))
        .hasMessageContaining("did you mean 0.5s or 0.5ms?");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"", "s", "5x", "5 sec", "-1s", "PT-1S", "P1M", "5S", "1s2", "..5s", "1.2.3s"})
  void refusesMalformedDurations(String text) {
    assertThatThrownBy(() -> Units.parseDuration(text))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void namesTheUnknownUnit() {
    assertThatThrownBy(() -> Units.parseDuration("5sec"))
        .hasMessageStartingWith("unknown unit sec; allowed units are ns, us, ms, s, m, h, d");
  }

  @Test
  void refusesDurationsFinerThanANanosecondOrAbsurdlyLong() {
    assertThatThrownBy(() -> Units.parseDuration("1.5ns"))
        .hasMessageContaining("whole nanoseconds");
    assertThatThrownBy(() -> Units.parseDuration("99999999999999999999d"))
        .hasMessageContaining("at most 10000d");
    assertThatThrownBy(() -> Units.parseDuration("P99999999D")).hasMessageContaining("at most");
  }

  @ParameterizedTest
  @CsvSource({"0, 0s", "1500, 1s500ms", "90000, 1m30s", "86400000, 1d", "250, 250ms"})
  void formatsDurationsCompactly(long millis, String text) {
    assertThat(Units.formatDuration(Duration.ofMillis(millis))).isEqualTo(text);
  }

  @Test
  void formatsAnUnsetDurationAsNone() {
    assertThat(Units.formatDuration(null)).isEqualTo("none");
  }

  @ParameterizedTest
  @CsvSource({
    "0, 0ms",
    "-5, 0ms",
    "117400000, 117ms",
    "2500000000, 2.5s",
    "2549000000, 2.5s",
    "30000000000, 30s",
    "90000000000, 1m30s",
    "120000000000, 2m",
    "7500000000000, 2h5m",
    "7200000000000, 2h"
  })
  void roundsMeasuredTimesForHumans(long nanos, String text) {
    assertThat(Units.formatRounded(nanos)).isEqualTo(text);
    assertThat(Units.formatRoundedMillis(nanos / 1_000_000)).isEqualTo(text);
  }

  @ParameterizedTest
  @CsvSource({
    "50%, 0.5",
    "0.5, 0.5",
    "1, 1.0",
    "100%, 1.0",
    "12.5%, 0.125",
    "7%, 0.07",
    ".2, 0.2",
    "'50 %', 0.5",
    "0, 0.0"
  })
  void readsRatiosAsPercentOrFraction(String text, double expected) {
    assertThat(Units.parseRatio(text)).isEqualTo(expected);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "%", "-5%", "half", "1e-3", "50%%", "0x1"})
  void refusesMalformedRatios(String text) {
    assertThatThrownBy(() -> Units.parseRatio(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("allowed a ratio such as 50% or 0.5");
  }

  @ParameterizedTest
  @CsvSource({
    "512, 512",
    "64KiB, 65536",
    "64kib, 65536",
    "1MiB, 1048576",
    "1GiB, 1073741824",
    "1.5KiB, 1536",
    "100B, 100",
    "'2 MiB', 2097152",
    "0, 0"
  })
  void readsSizesWithBinaryUnits(String text, long bytes) {
    assertThat(Units.parseSize(text)).isEqualTo(bytes);
  }

  @Test
  void refusesAmbiguousDecimalSizeUnitsWithAHint() {
    assertThatThrownBy(() -> Units.parseSize("64KB"))
        .hasMessage(
            "the unit KB is ambiguous (1000 or 1024?): write 64KiB for multiples of 1024, or the"
                + " number of bytes");
    assertThatThrownBy(() -> Units.parseSize("1m")).hasMessageContaining("write 1MiB");
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "-1", "1.1B", "KiB", "5 TiB", "1e3", "99999999999999999999GiB"})
  void refusesMalformedSizes(String text) {
    assertThatThrownBy(() -> Units.parseSize(text)).isInstanceOf(IllegalArgumentException.class);
  }

  @ParameterizedTest
  @CsvSource({
    "65536, 64KiB",
    "1048576, 1MiB",
    "1000, 1000",
    "0, 0",
    "1536, 1536",
    "3221225472, 3GiB"
  })
  void formatsSizesWithTheLargestExactUnit(long bytes, String text) {
    assertThat(Units.formatSize(bytes)).isEqualTo(text);
  }

  @Test
  void readsWholeNumbersWithSignsAndGroupingAndClampsHugeOnes() {
    assertThat(Units.parseWhole("10_000")).isEqualTo(10_000);
    // "_" groups digits; a trailing or doubled one is a typing mistake, not a number.
    assertThatThrownBy(() -> Units.parseWhole("3_")).hasMessage("allowed a whole number");
    assertThatThrownBy(() -> Units.parseWhole("1__0")).hasMessage("allowed a whole number");
    assertThatThrownBy(() -> Units.parseNumber("1_.5"))
        .isInstanceOf(IllegalArgumentException.class);
    // A leading zero is decimal (not YAML 1.1's octal): 010 is ten, as it always was.
    assertThat(Units.parseWhole("010")).isEqualTo(10);
    assertThat(Units.parseWhole("-3")).isEqualTo(-3);
    assertThat(Units.parseWhole("+7")).isEqualTo(7);
    assertThat(Units.parseWhole("99999999999999999999999")).isEqualTo(Long.MAX_VALUE);
    assertThatThrownBy(() -> Units.parseWhole("3.0")).hasMessage("allowed a whole number");
    assertThatThrownBy(() -> Units.parseWhole("0x10")).isInstanceOf(IllegalArgumentException.class);
  }

  @ParameterizedTest
  @CsvSource({"2.0, 2.0", "1.5, 1.5", "50, 50.0", "150, 150", "0.2, 0.2"})
  void formatsDecimalKeysWithAPointBelowOneHundred(double value, String text) {
    assertThat(Units.formatNumber(value)).isEqualTo(text);
  }

  @Test
  void formatsListsJoinedOrNone() {
    assertThat(Units.formatList(List.of("429", "5xx"))).isEqualTo("429, 5xx");
    assertThat(Units.formatList(List.of())).isEqualTo("none");
  }

  @Test
  void readsDecimalsButNotNanInfinityOrExponents() {
    assertThat(Units.parseNumber("1.5")).isEqualTo(1.5);
    assertThat(Units.parseNumber("2")).isEqualTo(2.0);
    assertThat(Units.parseNumber(".5")).isEqualTo(0.5);
    for (String bad : new String[] {"NaN", ".inf", "1e9", "", "1.", "abc"}) {
      assertThatThrownBy(() -> Units.parseNumber(bad)).isInstanceOf(IllegalArgumentException.class);
    }
  }
}
