package dev.retryagent.engine;

import dev.retryagent.internal.FieldLines;
import java.time.Instant;
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

  /**
   * The obsolete RFC 850 format as last used (null before): its two-digit year is read in the
   * hundred years that end 50 years after now's (RFC 9110 section 5.6.7: a year that appears more
   * than 50 years ahead is the most recent past year with those digits), so it changes with now's
   * year. A fixed pivot (1970..2069) read a date of 2070 on as one of 1970.
   */
  private static volatile Rfc850 rfc850;

  /** asctime without its day name ({@link #parseHttpDate} takes it off). */
  private static final DateTimeFormatter ASCTIME =
      DateTimeFormatter.ofPattern("MMM d HH:mm:ss yyyy", Locale.US).withZone(ZoneOffset.UTC);

  private RetryAfter() {}

  /**
   * The delay the header asks for, in nanoseconds, or {@link #NONE}. An HTTP-date in the past means
   * 0. A header that came in several lines ({@link FieldLines}) asks for the longest delay any of
   * its lines asks for; a line that does not parse is ignored, as it would be alone.
   *
   * @param value the header's value, or the values of its lines ({@link FieldLines})
   * @param nowWallMillis the current wall-clock time, for HTTP-dates
   */
  public static long parseNanos(String value, long nowWallMillis) {
    if (value == null) {
      return NONE;
    }
    int next = value.indexOf(FieldLines.SEPARATOR);
    if (next < 0) {
      return parseLine(value, nowWallMillis);
    }
    // Retry-After is a singleton (RFC 9110 section 10.2.3), and RFC 9110 says nothing of which
    // of several lines counts; the clients read the first (java.net.http, Apache HttpClient) or the
    // last (OkHttp, HttpURLConnection). The longest is the one rule that never sends a retry
    // sooner than any line asked, in whatever order a proxy on the way put its own line, and that
    // a server which asks for more than retryAfter.max sees given up on, on every client.
    long longest = NONE;
    int from = 0;
    while (true) {
      int end = next < 0 ? value.length() : next;
      longest = Math.max(longest, parseLine(value.substring(from, end), nowWallMillis));
      if (next < 0) {
        return longest;
      }
      from = next + 1;
      next = value.indexOf(FieldLines.SEPARATOR, from);
    }
  }

  private static long parseLine(String value, long nowWallMillis) {
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
    long epochMillis = parseHttpDate(v, nowWallMillis);
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

  /**
   * The date without its day name, which is read as words only: the formats' own day-of-week field
   * is checked against the date, and a server that names the wrong day ("Mon, 06 Nov 1994", a
   * Sunday; hand-written dates do) had its header ignored, so the retry went after the backoff
   * alone, sooner than the date asked, and a date past retryAfter.max was not given up on. RFC 9110
   * (section 5.6.7) asks recipients to accept any HTTP-date; the date itself says when.
   */
  private static long parseHttpDate(String v, long nowWallMillis) {
    if (v.length() > 64) {
      return Long.MIN_VALUE;
    }
    int comma = afterDayName(v, ',');
    if (comma > 0) {
      // IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT" or RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT".
      String date = v.substring(comma + 1).trim();
      long t = tryParse(date, DateTimeFormatter.RFC_1123_DATE_TIME);
      return t != Long.MIN_VALUE ? t : tryParse(date, rfc850(nowWallMillis));
    }
    long t = tryParse(v, DateTimeFormatter.RFC_1123_DATE_TIME); // one without a day name
    int space = afterDayName(v, ' ');
    if (t == Long.MIN_VALUE && space > 0) {
      // asctime pads single-digit days with a second space: "Sun Nov  6 08:49:37 1994".
      t = tryParse(v.substring(space + 1).trim().replace("  ", " "), ASCTIME);
    }
    return t;
  }

  /** Where {@code end} follows a leading word of letters (a day's name), or -1. */
  private static int afterDayName(String v, char end) {
    int i = 0;
    while (i < v.length() && Character.isLetter(v.charAt(i))) {
      i++;
    }
    return i > 0 && i < v.length() && v.charAt(i) == end ? i : -1;
  }

  /** The RFC 850 format for a date read at {@code nowWallMillis}. */
  private static DateTimeFormatter rfc850(long nowWallMillis) {
    int firstYear = Instant.ofEpochMilli(nowWallMillis).atOffset(ZoneOffset.UTC).getYear() - 49;
    Rfc850 f = rfc850;
    if (f == null || f.firstYear != firstYear) {
      f = new Rfc850(firstYear);
      rfc850 = f;
    }
    return f.format;
  }

  /**
   * The RFC 850 format, without its day name, whose two-digit years are {@code firstYear} to {@code
   * firstYear + 99}.
   */
  private static final class Rfc850 {
    final int firstYear;
    final DateTimeFormatter format;

    Rfc850(int firstYear) {
      this.firstYear = firstYear;
      this.format =
          new DateTimeFormatterBuilder()
              .appendPattern("dd-MMM-")
              .appendValueReduced(ChronoField.YEAR, 2, 2, firstYear)
              .appendPattern(" HH:mm:ss zzz")
              .toFormatter(Locale.US);
    }
  }

  private static long tryParse(String v, DateTimeFormatter format) {
    try {
      return ZonedDateTime.parse(v, format).toInstant().toEpochMilli();
    } catch (DateTimeParseException | ArithmeticException e) {
      return Long.MIN_VALUE;
    }
  }
}
