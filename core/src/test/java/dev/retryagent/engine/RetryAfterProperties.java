package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;

/** The Retry-After parser never throws and reads every form it writes back exactly. */
class RetryAfterProperties {
  private static final long MAX_NANOS = 366L * 24 * 3600 * 1_000_000_000L;
  private static final DateTimeFormatter IMF =
      DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US)
          .withZone(ZoneOffset.UTC);
  private static final DateTimeFormatter RFC850 =
      DateTimeFormatter.ofPattern("EEEE, dd-MMM-yy HH:mm:ss 'GMT'", Locale.US)
          .withZone(ZoneOffset.UTC);
  private static final DateTimeFormatter ASCTIME =
      DateTimeFormatter.ofPattern("EEE MMM ppd HH:mm:ss yyyy", Locale.US).withZone(ZoneOffset.UTC);

  @Property(tries = 600)
  void anyStringGivesNoneOrADelayWithinTheCap(
      @ForAll String value, @ForAll @LongRange(min = 0, max = 4_000_000_000_000L) long now) {
    long n = RetryAfter.parseNanos(value, now);
    assertThat(n == RetryAfter.NONE || (n >= 0 && n <= MAX_NANOS)).as("%d", n).isTrue();
  }

  @Property(tries = 500)
  void deltaSecondsAreReadExactly(@ForAll @LongRange(min = 0, max = 31_622_400) long seconds) {
    assertThat(RetryAfter.parseNanos(Long.toString(seconds), 0))
        .isEqualTo(seconds * 1_000_000_000L);
  }

  @Property(tries = 500)
  void everyHttpDateFormatIsReadToTheSecond(
      // 2000-01-01 .. 2060-01-01: two-digit years of RFC 850 stay unambiguous.
      @ForAll @LongRange(min = 946_684_800L, max = 2_840_140_800L) long epochSecond,
      @ForAll @LongRange(min = -86_400_000L, max = 86_400_000L) long offsetMillis) {
    Instant at = Instant.ofEpochSecond(epochSecond);
    long now = at.toEpochMilli() - offsetMillis;
    long expected = Math.max(0, offsetMillis) * 1_000_000L;
    assertThat(RetryAfter.parseNanos(IMF.format(at), now)).isEqualTo(expected);
    assertThat(RetryAfter.parseNanos(RFC850.format(at), now)).isEqualTo(expected);
    assertThat(RetryAfter.parseNanos(ASCTIME.format(at), now)).isEqualTo(expected);
  }
}
