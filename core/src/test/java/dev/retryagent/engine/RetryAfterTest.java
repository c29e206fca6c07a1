package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RetryAfterTest {
  private static final long S = 1_000_000_000L;
  private static final long MAX_NANOS = 366L * 24 * 3600 * S;

  /** The instant of RFC 9110's examples, 37 seconds before the date they show. */
  private static final long RFC_NOW = Instant.parse("1994-11-06T08:49:00Z").toEpochMilli();

  private static final long NOW = Instant.parse("2024-03-10T12:00:00Z").toEpochMilli();

  @Test
  void readsDeltaSeconds() {
    assertThat(RetryAfter.parseNanos("0", NOW)).isZero();
    assertThat(RetryAfter.parseNanos("1", NOW)).isEqualTo(S);
    assertThat(RetryAfter.parseNanos("120", NOW)).isEqualTo(120 * S);
    assertThat(RetryAfter.parseNanos("  7 ", NOW)).isEqualTo(7 * S);
  }

  @Test
  void aHeaderInSeveralLinesAsksForTheLongestWaitOfAnyLineInAnyOrder() {
    // Adapters give every line, joined by a line feed (FieldLines): one rule for every client.
    assertThat(RetryAfter.parseNanos("2\n7", NOW)).isEqualTo(7 * S);
    assertThat(RetryAfter.parseNanos("7\n2", NOW)).isEqualTo(7 * S);
    assertThat(RetryAfter.parseNanos("1\nSun, 06 Nov 1994 08:49:37 GMT\n3", RFC_NOW))
        .isEqualTo(37 * S);
    // A line that does not parse is ignored, as it would be alone.
    assertThat(RetryAfter.parseNanos("soon\n4", NOW)).isEqualTo(4 * S);
    assertThat(RetryAfter.parseNanos("4\n\n", NOW)).isEqualTo(4 * S);
    assertThat(RetryAfter.parseNanos("soon\nlater", NOW)).isEqualTo(RetryAfter.NONE);
  }

  @Test
  void deltaSecondsWithLeadingZerosMeanTheSameNumber() {
    // RFC 9110: delay-seconds = 1*DIGIT. Fifteen digits of which fourteen are zeros is still 5.
    assertThat(RetryAfter.parseNanos("05", NOW)).isEqualTo(5 * S);
    assertThat(RetryAfter.parseNanos("000000000000005", NOW)).isEqualTo(5 * S);
    assertThat(RetryAfter.parseNanos("000000000000000", NOW)).isZero();
  }

  @Test
  void hugeDeltaSecondsAreCappedNeverOverflowed() {
    assertThat(RetryAfter.parseNanos("31622400", NOW)).isEqualTo(MAX_NANOS); // 366 days
    assertThat(RetryAfter.parseNanos("999999999999", NOW)).isEqualTo(MAX_NANOS);
    assertThat(RetryAfter.parseNanos("9223372036854775807", NOW)).isEqualTo(MAX_NANOS);
    assertThat(RetryAfter.parseNanos("99999999999999999999999999999999", NOW)).isEqualTo(MAX_NANOS);
  }

  @Test
  void readsTheImfFixdateFormat() {
    assertThat(RetryAfter.parseNanos("Sun, 06 Nov 1994 08:49:37 GMT", RFC_NOW)).isEqualTo(37 * S);
  }

  @Test
  void readsTheObsoleteRfc850Format() {
    assertThat(RetryAfter.parseNanos("Sunday, 06-Nov-94 08:49:37 GMT", RFC_NOW)).isEqualTo(37 * S);
  }

  @Test
  void anRfc850TwoDigitYearIsTheOneAtMostFiftyYearsAheadOfNow() {
    // RFC 9110 section 5.6.7: a two-digit year that appears more than 50 years in the future is the
    // most recent past year with those digits. A fixed pivot (1970..2069) read 70 as 1970 even in
    // 2070: a date 90 s ahead failed its day of the week (Retry-After ignored), or had it matched,
    // read as 100 years ago (retried at once).
    long in2070 = Instant.parse("2070-03-10T12:00:00Z").toEpochMilli();
    assertThat(RetryAfter.parseNanos("Monday, 10-Mar-70 12:01:30 GMT", in2070)).isEqualTo(90 * S);
    // From 2024: 2074 is 50 years ahead, read as it is (far beyond any max); 2075 is more than 50
    // years ahead: 1975, long past.
    assertThat(RetryAfter.parseNanos("Saturday, 10-Mar-74 12:00:00 GMT", NOW)).isEqualTo(MAX_NANOS);
    assertThat(RetryAfter.parseNanos("Monday, 10-Mar-75 12:00:00 GMT", NOW)).isZero();
    // The year of now moves the hundred years: 94 is 1994 in 1994, 2094 in 2070.
    assertThat(RetryAfter.parseNanos("Sunday, 06-Nov-94 08:49:37 GMT", RFC_NOW)).isEqualTo(37 * S);
    assertThat(RetryAfter.parseNanos("Saturday, 06-Nov-94 08:49:37 GMT", in2070))
        .isEqualTo(MAX_NANOS);
  }

  @Test
  void readsTheObsoleteAsctimeFormat() {
    assertThat(RetryAfter.parseNanos("Sun Nov  6 08:49:37 1994", RFC_NOW)).isEqualTo(37 * S);
    long nov16 = Instant.parse("1994-11-16T08:49:00Z").toEpochMilli();
    assertThat(RetryAfter.parseNanos("Wed Nov 16 08:49:37 1994", nov16)).isEqualTo(37 * S);
  }

  @Test
  void readsEachDateFormatNearNow() {
    Instant at = Instant.ofEpochMilli(NOW).plusSeconds(90);
    String imf =
        DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US)
            .withZone(ZoneOffset.UTC)
            .format(at);
    String rfc850 =
        DateTimeFormatter.ofPattern("EEEE, dd-MMM-yy HH:mm:ss 'GMT'", Locale.US)
            .withZone(ZoneOffset.UTC)
            .format(at);
    String asctime =
        DateTimeFormatter.ofPattern("EEE MMM ppd HH:mm:ss yyyy", Locale.US)
            .withZone(ZoneOffset.UTC)
            .format(at);
    assertThat(imf).isEqualTo("Sun, 10 Mar 2024 12:01:30 GMT");
    assertThat(asctime).isEqualTo("Sun Mar 10 12:01:30 2024");
    assertThat(RetryAfter.parseNanos(imf, NOW)).isEqualTo(90 * S);
    assertThat(RetryAfter.parseNanos(rfc850, NOW)).isEqualTo(90 * S);
    assertThat(RetryAfter.parseNanos(asctime, NOW)).isEqualTo(90 * S);
  }

  @Test
  void aDateInThePastMeansNow() {
    assertThat(RetryAfter.parseNanos("Sun, 06 Nov 1994 08:49:37 GMT", NOW)).isZero();
    assertThat(RetryAfter.parseNanos("Sunday, 06-Nov-94 08:49:37 GMT", NOW)).isZero();
    assertThat(RetryAfter.parseNanos("Sun Nov  6 08:49:37 1994", NOW)).isZero();
    assertThat(RetryAfter.parseNanos("Sun, 10 Mar 2024 12:00:00 GMT", NOW)).isZero();
  }

  @Test
  void aDateFarAheadIsCappedNeverOverflowed() {
    assertThat(RetryAfter.parseNanos("Fri, 31 Dec 9999 23:59:59 GMT", NOW)).isEqualTo(MAX_NANOS);
  }

  @Test
  void subSecondPrecisionOfTheClockIsKept() {
    long now = NOW + 250;
    assertThat(RetryAfter.parseNanos("Sun, 10 Mar 2024 12:00:10 GMT", now))
        .isEqualTo(9_750_000_000L);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "   ",
        "-1",
        "+5",
        "1.5",
        "5s",
        "5 seconds",
        "0x10",
        "１２", // full-width digits
        "soon",
        "Sun, 06 Nov 1994 08:49:37", // no zone
        "Sun, 32 Nov 1994 08:49:37 GMT", // no such day
        "Sun, 06 Nov 1994 25:49:37 GMT",
        "Sunday, 06-Nov-1994 08:49:37 GMT extra",
        "Sun Nov  6 08:49:37",
        "2024-03-10T12:01:30Z", // ISO is not an HTTP-date
        "Sun, 06 Nov 1994 08:49:37 GMT Sun, 06 Nov 1994 08:49:37 GMT Sun, 06 Nov 1994 08:49:37 GMT"
      })
  void malformedValuesAreIgnoredNeverThrown(String value) {
    assertThat(RetryAfter.parseNanos(value, NOW)).isEqualTo(RetryAfter.NONE);
  }

  @Test
  void aDateWhoseDayNameIsWrongIsReadAsItsDate() {
    // 6 November 1994 was a Sunday. The day name is not what the server asks for; the date is.
    // Ignored, these went after the backoff alone, sooner than asked.
    assertThat(RetryAfter.parseNanos("Mon, 06 Nov 1994 08:49:37 GMT", RFC_NOW)).isEqualTo(37 * S);
    assertThat(RetryAfter.parseNanos("Monday, 06-Nov-94 08:49:37 GMT", RFC_NOW)).isEqualTo(37 * S);
    assertThat(RetryAfter.parseNanos("Mon Nov  6 08:49:37 1994", RFC_NOW)).isEqualTo(37 * S);
    // Past retryAfter.max's reach all the same: read, it can be given up on.
    assertThat(RetryAfter.parseNanos("Mon, 31 Dec 9999 23:59:59 GMT", NOW)).isEqualTo(MAX_NANOS);
    // Without a day name, as the formats' day-of-week fields are optional.
    assertThat(RetryAfter.parseNanos("06 Nov 1994 08:49:37 GMT", RFC_NOW)).isEqualTo(37 * S);
  }

  @Test
  void anAbsentHeaderIsNone() {
    assertThat(RetryAfter.parseNanos(null, NOW)).isEqualTo(RetryAfter.NONE);
  }
}
