package dev.retryagent.internal;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Collection;
import java.util.Locale;

/**
 * The configuration's way of writing values, both ways: durations ({@code 250ms}, {@code 2s},
 * {@code 1m}, {@code 1h}, ISO-8601 {@code PT2S}), ratios ({@code 50%} or {@code 0.5}), sizes
 * ({@code 512}, {@code 64KiB}, {@code 1MiB}), whole and decimal numbers, lists. The loader parses
 * with it; problem messages, {@code explain} and the log lines format with it, so a value reads the
 * same everywhere (syntax: docs/configuration.md).
 *
 * <p>Every parser throws {@link IllegalArgumentException} whose message completes the sentence
 * "found X; ..." by saying what is allowed. The exact formatters produce text the parsers read back
 * to the same value; {@link #formatRounded} is for measured times, which it rounds.
 */
public final class Units {
  /** Longest duration any parser accepts; keys have tighter bounds. Far below Long nanos. */
  static final Duration MAX_DURATION = Duration.ofDays(10_000);

  /**
   * How a message about a duration beyond {@link #MAX_DURATION} begins: a key with tighter bounds
   * says its own instead.
   */
  public static final String TOO_LONG = "allowed at most ";

  static final String DURATION_EXAMPLES = "a duration such as 250ms, 2s, 1m, 1h or PT2S";
  static final String RATIO_EXAMPLES = "a ratio such as 50% or 0.5";
  static final String SIZE_EXAMPLES = "a size such as 512, 64KiB or 1MiB";

  private static final long NANOS_PER_MICRO = 1_000L;
  private static final long NANOS_PER_MILLI = 1_000_000L;
  private static final long NANOS_PER_SECOND = 1_000_000_000L;
  private static final long NANOS_PER_MINUTE = 60 * NANOS_PER_SECOND;
  private static final long NANOS_PER_HOUR = 60 * NANOS_PER_MINUTE;
  private static final long NANOS_PER_DAY = 24 * NANOS_PER_HOUR;

  /** Units from the largest down, as the formatter uses them. */
  private static final String[] UNIT_NAMES = {"d", "h", "m", "s", "ms", "us", "ns"};

  private static final long[] UNIT_NANOS = {
    NANOS_PER_DAY,
    NANOS_PER_HOUR,
    NANOS_PER_MINUTE,
    NANOS_PER_SECOND,
    NANOS_PER_MILLI,
    NANOS_PER_MICRO,
    1
  };

  private Units() {}

  // ---------------------------------------------------------------- durations

  /**
   * Parses a duration: one or more {@code <number><unit>} parts ({@code 1m30s}, {@code 1.5s}) with
   * units {@code ns, us, ms, s, m, h, d}, or ISO-8601 ({@code PT2S}, {@code P1DT2H}). A bare number
   * is rejected with a hint, because {@code timeout: 5} is ambiguous.
   */
  public static Duration parseDuration(String text) {
    String s = text.trim();
    if (s.isEmpty()) {
      throw new IllegalArgumentException("allowed " + DURATION_EXAMPLES);
    }
    if (s.charAt(0) == '-') {
      throw new IllegalArgumentException("allowed " + DURATION_EXAMPLES + " (not negative)");
    }
    if (s.charAt(0) == 'P' || s.charAt(0) == 'p') {
      return parseIsoDuration(s);
    }
    if (Syntax.isDecimal(s)) {
      throw new IllegalArgumentException(
          "a duration needs a unit: did you mean " + s + "s or " + s + "ms?");
    }
    long exact = 0; // the whole nanoseconds so far, while every part was whole (Syntax)
    BigDecimal nanos = null; // the sum from the first part that was not, on
    int i = 0;
    int n = s.length();
    while (i < n) {
      int numberStart = i;
      while (i < n && (isDigit(s.charAt(i)) || s.charAt(i) == '.')) {
        i++;
      }
      String number = s.substring(numberStart, i);
      if (number.isEmpty() || !Syntax.isDecimal(number)) {
        throw new IllegalArgumentException("allowed " + DURATION_EXAMPLES);
      }
      while (i < n && s.charAt(i) == ' ') {
        i++;
      }
      int unitStart = i;
      while (i < n && Character.isLetter(s.charAt(i))) {
        i++;
      }
      String unit = s.substring(unitStart, i);
      long unitNanos = unitNanos(unit);
      if (unitNanos < 0) {
        throw new IllegalArgumentException(
            (unit.isEmpty() ? "a duration needs a unit after " + number : "unknown unit " + unit)
                + "; allowed units are ns, us, ms, s, m, h, d (e.g. 250ms, 1m30s) or ISO-8601"
                + " such as PT2S");
      }
      while (i < n && s.charAt(i) == ' ') {
        i++;
      }
      long part = nanos == null ? Syntax.wholeProduct(number, unitNanos) : -1;
      if (part >= 0 && part <= MAX_DURATION.toNanos() - exact) {
        exact += part;
        continue;
      }
      if (nanos == null) {
        nanos = BigDecimal.valueOf(exact);
      }
      nanos = nanos.add(new BigDecimal(number).multiply(BigDecimal.valueOf(unitNanos)));
      if (nanos.compareTo(BigDecimal.valueOf(MAX_DURATION.toNanos())) > 0) {
        throw new IllegalArgumentException(TOO_LONG + formatDuration(MAX_DURATION));
      }
    }
    if (nanos == null) {
      return Duration.ofNanos(exact);
    }
    BigDecimal whole = nanos.stripTrailingZeros();
    if (whole.scale() > 0) {
      throw new IllegalArgumentException("allowed " + DURATION_EXAMPLES + " (whole nanoseconds)");
    }
    return Duration.ofNanos(whole.longValueExact());
  }

  private static Duration parseIsoDuration(String s) {
    Duration d;
    try {
      d = Duration.parse(s);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException(
          "allowed an ISO-8601 duration of days, hours, minutes and seconds such as PT2S or"
              + " P1DT12H (no months or years), or "
              + DURATION_EXAMPLES);
    }
    if (d.isNegative()) {
      throw new IllegalArgumentException("allowed " + DURATION_EXAMPLES + " (not negative)");
    }
    if (d.compareTo(MAX_DURATION) > 0) {
      throw new IllegalArgumentException(TOO_LONG + formatDuration(MAX_DURATION));
    }
    return d;
  }

  private static long unitNanos(String unit) {
    for (int u = 0; u < UNIT_NAMES.length; u++) {
      if (UNIT_NAMES[u].equals(unit)) {
        return UNIT_NANOS[u];
      }
    }
    return "µs".equals(unit) ? NANOS_PER_MICRO : -1;
  }

  /**
   * Exactly, in the shortest compound form: {@code 1m30s}, {@code 250ms}, {@code 0s}; {@code none}
   * for null (a key that is not set).
   */
  public static String formatDuration(Duration d) {
    if (d == null) {
      return "none";
    }
    if (d.isZero()) {
      return "0s";
    }
    long n = d.toNanos();
    StringBuilder out = new StringBuilder();
    for (int u = 0; u < UNIT_NAMES.length; u++) {
      long q = n / UNIT_NANOS[u];
      if (q > 0) {
        out.append(q).append(UNIT_NAMES[u]);
        n -= q * UNIT_NANOS[u];
      }
    }
    return out.toString();
  }

  /**
   * Rounded for a human reader: {@code 117ms}, {@code 2.5s}, {@code 30s}, {@code 1m30s}, {@code
   * 2h5m}. For measured times (a jittered delay, an elapsed time), which {@link #formatDuration}
   * would show to the nanosecond; negative counts as zero.
   */
  public static String formatRounded(long nanos) {
    long ms = Math.max(0, nanos) / NANOS_PER_MILLI;
    if (ms < 1000) {
      return ms + "ms";
    }
    if (ms < 60_000) {
      long tenths = ms / 100;
      return tenths % 10 == 0 ? tenths / 10 + "s" : tenths / 10 + "." + tenths % 10 + "s";
    }
    long s = ms / 1000;
    if (s < 3600) {
      return s / 60 + "m" + (s % 60 == 0 ? "" : s % 60 + "s");
    }
    long m = s / 60;
    return m / 60 + "h" + (m % 60 == 0 ? "" : m % 60 + "m");
  }

  /** {@link #formatRounded} of a number of milliseconds. */
  public static String formatRoundedMillis(long millis) {
    return formatRounded(millis * NANOS_PER_MILLI);
  }

  // ---------------------------------------------------------------- ratios

  /** Parses {@code 50%}, {@code 12.5%}, {@code 0.5} or {@code 1}. Never negative. */
  public static double parseRatio(String text) {
    String s = text.trim();
    boolean percent = s.endsWith("%");
    String number = percent ? s.substring(0, s.length() - 1).trim() : s;
    if (number.startsWith("-")) {
      throw new IllegalArgumentException("allowed " + RATIO_EXAMPLES + " (not negative)");
    }
    if (!Syntax.isDecimal(number)) {
      throw new IllegalArgumentException("allowed " + RATIO_EXAMPLES);
    }
    // Correctly rounded, as BigDecimal's doubleValue() is, without BigDecimal (see Syntax).
    return Double.parseDouble(percent ? number + "E-2" : number);
  }

  /** As a percentage that {@link #parseRatio} reads back exactly, e.g. {@code 12.5%}. */
  public static String formatRatio(double ratio) {
    return BigDecimal.valueOf(ratio).movePointRight(2).stripTrailingZeros().toPlainString() + "%";
  }

  // ---------------------------------------------------------------- sizes

  /**
   * Parses a byte count with an optional binary unit: {@code B}, {@code KiB}, {@code MiB}, {@code
   * GiB} (any case). {@code KB}, {@code MB}, {@code k}... are refused as ambiguous (1000 or 1024?).
   */
  public static long parseSize(String text) {
    String s = text.trim();
    if (s.startsWith("-")) {
      throw new IllegalArgumentException("allowed " + SIZE_EXAMPLES + " (not negative)");
    }
    int numberEnd = Syntax.sizeNumberEnd(s);
    if (numberEnd < 0) {
      throw new IllegalArgumentException("allowed " + SIZE_EXAMPLES);
    }
    String number = s.substring(0, numberEnd);
    String written = s.substring(Syntax.skipWhitespace(s, numberEnd)); // letters only, or none
    String unit = written.toLowerCase(Locale.ROOT);
    long multiplier;
    switch (unit) {
      case "":
      case "b":
        multiplier = 1;
        break;
      case "kib":
        multiplier = 1L << 10;
        break;
      case "mib":
        multiplier = 1L << 20;
        break;
      case "gib":
        multiplier = 1L << 30;
        break;
      case "k":
      case "kb":
      case "m":
      case "mb":
      case "g":
      case "gb":
        String binary = Character.toUpperCase(unit.charAt(0)) + "iB";
        throw new IllegalArgumentException(
            "the unit "
                + written
                + " is ambiguous (1000 or 1024?): write "
                + number
                + binary
                + " for multiples of 1024, or the number of bytes");
      default:
        throw new IllegalArgumentException(
            "unknown unit " + written + "; allowed " + SIZE_EXAMPLES + " (B, KiB, MiB, GiB)");
    }
    long exact = Syntax.wholeProduct(number, multiplier);
    if (exact >= 0) {
      return exact;
    }
    BigDecimal bytes = new BigDecimal(number).multiply(BigDecimal.valueOf(multiplier));
    BigDecimal whole = bytes.stripTrailingZeros();
    if (whole.scale() > 0) {
      throw new IllegalArgumentException("allowed " + SIZE_EXAMPLES + " (a whole number of bytes)");
    }
    if (whole.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
      throw new IllegalArgumentException("allowed " + SIZE_EXAMPLES + " (far smaller)");
    }
    return whole.longValueExact();
  }

  /** With the largest binary unit that divides it exactly, e.g. {@code 64KiB}, {@code 1000}. */
  public static String formatSize(long bytes) {
    if (bytes != 0 && bytes % (1L << 30) == 0) {
      return bytes / (1L << 30) + "GiB";
    }
    if (bytes != 0 && bytes % (1L << 20) == 0) {
      return bytes / (1L << 20) + "MiB";
    }
    if (bytes != 0 && bytes % (1L << 10) == 0) {
      return bytes / (1L << 10) + "KiB";
    }
    return Long.toString(bytes);
  }

  // ---------------------------------------------------------------- numbers

  /**
   * Parses a whole number, optionally signed, digits optionally grouped with {@code _}. Values
   * beyond the long range come back clamped to it, so range checks still reject them.
   */
  public static long parseWhole(String text) {
    String s = text.trim();
    if (!Syntax.isWhole(s)) {
      throw new IllegalArgumentException("allowed a whole number");
    }
    BigInteger v = new BigInteger(s.replace("_", "").replace("+", ""));
    if (v.bitLength() > 62) {
      return v.signum() > 0 ? Long.MAX_VALUE : Long.MIN_VALUE;
    }
    return v.longValue();
  }

  /** Parses a decimal number such as {@code 2}, {@code 1.5} or {@code .5}; no NaN, no exponent. */
  public static double parseNumber(String text) {
    String s = text.trim();
    if (!Syntax.isNumber(s)) {
      throw new IllegalArgumentException("allowed a number such as 2 or 1.5");
    }
    // Correctly rounded, as BigDecimal's doubleValue() is, without BigDecimal (see Syntax); "+ 0.0"
    // makes -0 the 0.0 BigDecimal, which has no negative zero, gave.
    return Double.parseDouble(s.replace("_", "").replace("+", "")) + 0.0;
  }

  /** True when the text is a whole number as {@link #parseWhole} reads it. */
  public static boolean isWhole(String text) {
    return Syntax.isWhole(text.trim());
  }

  /**
   * A decimal key's value ({@code multiplier}, {@code perSecond}): {@code 2.0}, {@code 1.5}, and
   * whole values from 100 up without the {@code .0} ({@code 150}).
   */
  public static String formatNumber(double v) {
    if (Math.abs(v - Math.rint(v)) < 1e-9 && Math.abs(v) < 1e15) {
      return (long) Math.rint(v) + (v < 100 ? ".0" : "");
    }
    return Double.toString(v);
  }

  // ---------------------------------------------------------------- lists

  /** A list key's items joined by {@code ", "} ({@code 429, 503}), or {@code none} when empty. */
  public static String formatList(Collection<?> items) {
    if (items.isEmpty()) {
      return "none";
    }
    StringBuilder b = new StringBuilder();
    for (Object o : items) {
      b.append(b.length() == 0 ? "" : ", ").append(o);
    }
    return b.toString();
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }
}
