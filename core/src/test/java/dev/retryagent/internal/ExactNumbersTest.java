package dev.retryagent.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link Units} reads durations, sizes, ratios and numbers without {@code BigDecimal} where it can
 * ({@link Syntax#wholeProduct}, {@code Double.parseDouble}); here every answer is held to the one
 * {@code BigDecimal} gives, as the code did before: the same value, or the same refusal. Generated
 * inputs (seeded: {@code -Dexact.seed}, {@code -Dexact.inputs}) and the edges: 18 and 19 digits,
 * fractions that are and are not whole, the largest duration, {@code Long.MAX_VALUE} bytes.
 */
class ExactNumbersTest {
  private static final long SEED = Long.getLong("exact.seed", 20261202L);
  private static final int INPUTS = Integer.getInteger("exact.inputs", 200_000);
  private static final long[] MULTIPLIERS = {
    1,
    1_000,
    1_000_000,
    1_000_000_000,
    60_000_000_000L,
    3_600_000_000_000L,
    86_400_000_000_000L,
    1L << 10,
    1L << 20,
    1L << 30,
    7,
    3
  };
  private static final String[] UNITS = {"ns", "us", "ms", "s", "m", "h", "d"};

  /** What BigDecimal says number * multiplier is when whole and at most Long.MAX_VALUE, else -1. */
  private static long reference(String number, long multiplier) {
    BigDecimal p = new BigDecimal(number).multiply(BigDecimal.valueOf(multiplier));
    BigDecimal whole = p.stripTrailingZeros();
    if (whole.scale() > 0 || whole.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
      return -1;
    }
    return whole.longValueExact();
  }

  private static int digitsOn(String number, boolean before) {
    int dot = number.indexOf('.');
    return before ? (dot < 0 ? number.length() : dot) : (dot < 0 ? 0 : number.length() - dot - 1);
  }

  private static void agrees(String number, long multiplier) {
    long ours = Syntax.wholeProduct(number, multiplier);
    long theirs = reference(number, multiplier);
    String what = number + " x " + multiplier;
    if (ours >= 0) {
      assertThat(ours).as(what).isEqualTo(theirs);
    } else if (digitsOn(number, true) <= 18 && digitsOn(number, false) <= 18) {
      // -1 means "ask BigDecimal"; within 18 digits a side it must only say so when not whole.
      assertThat(theirs).as(what).isEqualTo(-1);
    }
  }

  private static String number(Random r) {
    StringBuilder b = new StringBuilder();
    int whole = r.nextInt(4) == 0 ? r.nextInt(21) : r.nextInt(5);
    for (int i = 0; i < whole; i++) {
      b.append((char) ('0' + r.nextInt(10)));
    }
    if (whole == 0 || r.nextBoolean()) {
      b.append('.');
      int fraction = 1 + (r.nextInt(4) == 0 ? r.nextInt(20) : r.nextInt(4));
      for (int i = 0; i < fraction; i++) {
        // Many trailing zeros: the fractions that are whole once multiplied.
        b.append(r.nextInt(3) == 0 ? (char) ('0' + r.nextInt(10)) : '0');
      }
    }
    return b.toString();
  }

  @Test
  void wholeProductIsBigDecimalsProductWheneverItAnswers() {
    Random r = new Random(SEED);
    for (int i = 0; i < INPUTS; i++) {
      agrees(number(r), MULTIPLIERS[r.nextInt(MULTIPLIERS.length)]);
    }
    for (String edge :
        List.of(
            "999999999999999999", // 18 digits
            "9999999999999999999", // 19: BigDecimal's
            "9223372036854775807",
            "9223372036.854775807",
            ".000000001",
            ".0000000001",
            "0.5",
            "1.000000000000000000",
            "0000000000000000001",
            "0")) {
      for (long m : MULTIPLIERS) {
        agrees(edge, m);
      }
    }
  }

  /** The old parseDuration's arithmetic: the sum in BigDecimal, checked after each part. */
  private static Object referenceDuration(List<String> numbers, List<String> units) {
    BigDecimal max = BigDecimal.valueOf(Units.MAX_DURATION.toNanos());
    BigDecimal nanos = BigDecimal.ZERO;
    long[] unitNanos = {
      1, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000L, 3_600_000_000_000L, 86_400_000_000_000L
    };
    for (int k = 0; k < numbers.size(); k++) {
      long unit = unitNanos[List.of(UNITS).indexOf(units.get(k))];
      nanos = nanos.add(new BigDecimal(numbers.get(k)).multiply(BigDecimal.valueOf(unit)));
      if (nanos.compareTo(max) > 0) {
        return "allowed at most";
      }
    }
    BigDecimal whole = nanos.stripTrailingZeros();
    return whole.scale() > 0 ? "whole nanoseconds" : Duration.ofNanos(whole.longValueExact());
  }

  @Test
  void durationsReadAsTheirBigDecimalSum() {
    Random r = new Random(SEED + 1);
    for (int i = 0; i < INPUTS / 4; i++) {
      List<String> numbers = new ArrayList<>();
      List<String> units = new ArrayList<>();
      StringBuilder text = new StringBuilder();
      int parts = 1 + r.nextInt(3);
      for (int k = 0; k < parts; k++) {
        String n = number(r);
        String u = UNITS[r.nextInt(UNITS.length)];
        numbers.add(n);
        units.add(u);
        text.append(n).append(r.nextInt(4) == 0 ? " " : "").append(u);
      }
      Object expected = referenceDuration(numbers, units);
      String s = text.toString();
      if (expected instanceof Duration) {
        assertThat(Units.parseDuration(s)).as(s).isEqualTo(expected);
      } else {
        assertThat(catchThrowable(() -> Units.parseDuration(s)))
            .as(s)
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining((String) expected);
      }
    }
    assertThat(Units.parseDuration("10000d")).isEqualTo(Units.MAX_DURATION);
    assertThat(Units.parseDuration("9999d24h")).isEqualTo(Units.MAX_DURATION);
    assertThat(catchThrowable(() -> Units.parseDuration("9999d24h1ns")))
        .hasMessageContaining("allowed at most");
    assertThat(Units.parseDuration("0.5ns0.5ns")).isEqualTo(Duration.ofNanos(1));
    assertThat(Units.parseDuration("1.5s 250ms")).isEqualTo(Duration.ofMillis(1750));
  }

  @Test
  void sizesReadAsBigDecimalReadsThem() {
    Random r = new Random(SEED + 2);
    String[] units = {"", "B", "KiB", "MiB", "GiB"};
    long[] multipliers = {1, 1, 1L << 10, 1L << 20, 1L << 30};
    for (int i = 0; i < INPUTS / 4; i++) {
      int u = r.nextInt(units.length);
      String n = number(r);
      if (n.startsWith(".")) {
        n = "0" + n; // sizes need a digit first
      }
      String s = n + units[u];
      long expected = reference(n, multipliers[u]);
      if (expected >= 0) {
        assertThat(Units.parseSize(s)).as(s).isEqualTo(expected);
      } else {
        assertThat(catchThrowable(() -> Units.parseSize(s)))
            .as(s)
            .isInstanceOf(IllegalArgumentException.class);
      }
    }
    assertThat(Units.parseSize(Long.toString(Long.MAX_VALUE))).isEqualTo(Long.MAX_VALUE);
    assertThat(catchThrowable(() -> Units.parseSize("9223372036854775808")))
        .hasMessageContaining("far smaller");
    assertThat(catchThrowable(() -> Units.parseSize("0.5"))).hasMessageContaining("whole number");
  }

  @Test
  void ratiosAndNumbersAreBigDecimalsDoubles() {
    Random r = new Random(SEED + 3);
    for (int i = 0; i < INPUTS / 4; i++) {
      String n = number(r);
      double d = new BigDecimal(n).doubleValue();
      assertThat(Units.parseNumber(n)).as(n).isEqualTo(d);
      assertThat(Units.parseRatio(n)).as(n).isEqualTo(d);
      assertThat(Units.parseRatio(n + "%"))
          .as(n + "%")
          .isEqualTo(new BigDecimal(n).movePointLeft(2).doubleValue());
      assertThat(Units.parseNumber("-" + n))
          .as("-" + n)
          .isEqualTo(new BigDecimal("-" + n).doubleValue());
    }
    // BigDecimal has no negative zero: neither has what we read.
    assertThat(Double.doubleToRawLongBits(Units.parseNumber("-0"))).isEqualTo(0L);
    assertThat(Double.doubleToRawLongBits(Units.parseNumber("-0.000"))).isEqualTo(0L);
    assertThat(Units.parseNumber("1_000.5")).isEqualTo(1000.5);
    assertThat(Units.parseNumber("+2")).isEqualTo(2.0);
  }
}
