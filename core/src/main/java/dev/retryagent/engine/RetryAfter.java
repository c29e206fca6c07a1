package dev.retryagent.engine;

import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoField;
import java.util.Locale;

/**
 * Reads the {@code Retry-After} header (RFC 9110 section 10.2.3): delta-seconds or an HTTP-date. A
 * malformed value is ignored, never thrown: servers send all sorts of things, and a bad header must
 * not turn a retryable response into an error.
 */
final class RetryAfter {
  /** Returned when the header is absent or malformed. */
  public static final long NONE = -1;

  /** Longest delay we represent; anything longer is treated as this (and exceeds any max). */
  private static final long MAX_SECONDS = 366L * 24 * 3600;

  // The obsolete formats RFC 9110 says recipients must accept.
  private static final DateTimeFormatter RFC_850 =
      new DateTimeFormatterBuilder()
          .appendPattern("EEEE, dd-MMM-")
          // Two-digit years: RFC 9110 reads them as the most recent matching year.
          .appendValueReduced(ChronoField.YEAR, 2, 2, 1970)
          .appendPattern(" HH:mm:ss zzz")
          .toFormatter(Locale.US);
  private static final DateTimeFormatter ASCTIME =
      DateTimeFormatter.ofPattern("EEE MMM d HH:mm:ss yyyy", Locale.US).withZone(ZoneOffset.UTC);

  private RetryAfter() {}

  /**
   * The delay the header asks for, in nanoseconds, or {@link #NONE}. An HTTP-date in the past means
   * 0.
   *
   * @param nowWallMillis the current wall-clock time, for HTTP-dates
   */
  public static long parseNanos(String value, long nowWallMillis) {
    if (value == null) {
      return NONE;
    }
    String v = value.trim();
    if (v.isEmpty()) {
      return NONE;
    }
    if (isDigits(v)) {
      // Leading zeros do not make the number longer: "000000000000005" is 5 seconds.
      int first = 0;
      while (first < v.length() - 1 && v.charAt(first) == '0') {
        first++;
      }
      String digits = v.substring(first);
      long seconds =
          digits.length() > 12 ? MAX_SECONDS : Math.min(Long.parseLong(digits), MAX_SECONDS);
      return seconds * 1_000_000_000L;
    }
    long epochMillis = parseHttpDate(v);
    if (epochMillis == Long.MIN_VALUE) {
      return NONE;
    }
    long deltaMillis = Math.min(epochMillis - nowWallMillis, MAX_SECONDS * 1000);
    return Math.max(0, deltaMillis) * 1_000_000L;
  }

  private static boolean isDigits(String v) {
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      if (c < '0' || c > '9') {
        return false;
      }
    }
    return true;
  }

  private static long parseHttpDate(String v) {
    if (v.length() > 64) {
      return Long.MIN_VALUE;
    }
    long t = tryParse(v, DateTimeFormatter.RFC_1123_DATE_TIME);
    if (t == Long.MIN_VALUE) {
      t = tryParse(v, RFC_850);
    }
    if (t == Long.MIN_VALUE) {
      // asctime pads single-digit days with a second space: "Sun Nov  6 08:49:37 1994".
      t = tryParse(v.replace("  ", " "), ASCTIME);
    }
    return t;
  }

  private static long tryParse(String v, DateTimeFormatter format) {
    try {
      return ZonedDateTime.parse(v, format).toInstant().toEpochMilli();
    } catch (DateTimeParseException | ArithmeticException e) {
      return Long.MIN_VALUE;
    }
  }
}
