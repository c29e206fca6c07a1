package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Forms a review (r49) of the fixes for encoded user-info, in-word marks and quotes found written
 * or destroyed: each secret is redacted, the text around it kept.
 */
class QueryPastEncodedUserInfoTest {

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // A query holding a ':' and later a %40: the encoded user-info's scan ran into it.
        "/search?q=from:alice%40example.com&key=SECRET => /search",
        "/p/x?since=2026-12-07T12%3A30Z&email=bob%40x.com&sig=SECRET => /p/x",
        "/p/x#q=from:alice%40example.com&key=SECRET => /p/x",
        // Still redacted in the path itself.
        "/p/u%3ApwCANARY%40h2?q=1 => /p/<redacted>%40h2",
      })
  void aPathsQueryIsDroppedWhole(String path, String expected) {
    assertThat(Sanitizer.path(path)).isEqualTo(expected).doesNotContain("SECRET", "CANARY");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "unexpected end of stream on"
            + " https://www.googleapis.com/gmail/v1/users/me/messages?q=from:alice%40example.com&key=AIzaSECRET"
            + " => unexpected end of stream on https://www.googleapis.com/gmail/v1/users/me/messages",
        "failed /search?q=from:alice%40example.com&key=SECRET now => failed /search now",
      })
  void aMessagesQueryIsDroppedWhole(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("SECRET");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // A user-info and a query encoded three times or more: the query cut alone was taken as
        // the word's clean, and the user-info in front of it written decoded.
        "failed u%25252525253ApwCANARY%252525252540h2%25252525253Fa%25252525253Db now"
            + " => failed <redacted>@h2 now",
        "failed u%25253ApwCANARY%252540h2%25253Fa%25253Db now => failed <redacted>@h2 now",
        // A query encoded three times: not cut.
        "failed /p/x%25253Ftoken%25253DSECRET now => failed /p/x now",
      })
  void anyEncodingLevelIsCleaned(String text, String expected) {
    assertThat(Sanitizer.message(text, null))
        .isEqualTo(expected)
        .doesNotContain("CANARY", "SECRET", "u%", "u:");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "/p/x%25253Ftoken%25253DSECRET => /p/x",
        "/p/x%252525253Ftoken%252525253DSECRET => /p/x",
      })
  void aPathsQueryEncodedAnyTimesIsCut(String path, String expected) {
    assertThat(Sanitizer.path(path)).isEqualTo(expected);
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // A password ending in a time's shape after a letter, or after another ':'.
        "/p/admin%3ASummer12%3A30%40db => /p/<redacted>%40db",
        "/p/admin%3ASummer12%3A30%40db/x => /p/<redacted>%40db/x",
        "/p/u%3A12%3A30%40db => /p/<redacted>%40db",
        // A file named by its time is kept.
        "/logs/2026-12-07T12%3A30%40utc.log => /logs/2026-12-07T12%3A30%40utc.log",
        "/p/12%3A30%40x => /p/12%3A30%40x",
        "/p/run_12%3A30%40x => /p/run_12%3A30%40x",
      })
  void aTimesShapeAfterALetterIsAPassword(String path, String expected) {
    assertThat(Sanitizer.path(path)).isEqualTo(expected);
  }

  @ParameterizedTest
  @ValueSource(strings = {"\u00A0", "\u2007", "\u202F"})
  void aPasswordAfterANoBreakSpaceIsRedacted(String blank) {
    assertThat(Sanitizer.message("failed:" + blank + "u:pw CANARY@h/x", null))
        .doesNotContain("CANARY", "u:pw")
        .contains("<redacted>@h/x");
    assertThat(Sanitizer.message("failed:" + blank + "http://u:pw CANARY@h/x", null))
        .doesNotContain("CANARY", "u:pw")
        .contains("http://h/x");
    assertThat(Sanitizer.message("failed: u:pw" + blank + "CANARY@h/x", null))
        .doesNotContain("CANARY", "u:pw")
        .contains("<redacted>@h/x");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        // A bracket closing a word ends the look for a password's '@', as " (" and " [" do.
        "java.lang.IllegalStateException: state:CLOSED in Thread[pool-1-thread-1,5,main]"
            + " for Connection@6d06d69c",
        "failed: state:CLOSED (pool-1) for Connection@6d06d69c",
      })
  void aBracketClosingAWordStopsTheLookForAnAt(String text) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(text);
  }

  @ParameterizedTest
  @ValueSource(strings = {"failed: u:pw CAN(A)RY@h/x", "failed: u:pw CAN[A]RY@h/x"})
  void aBracketInsideAPasswordsWordStopsNothing(String text) {
    assertThat(Sanitizer.message(text, null)).isEqualTo("failed: <redacted>@h/x");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        // A quote before '/', '&', '+', '=' or '<' closes the quoted value: an element's end or
        // the next parameter.
        "<endpoint url=\"http://h/a\"/><contact email=\"ops@example.com\"/>",
        "failed: \"http://h/a\"<b>ops@example.com</b>",
        "failed: a=\"http://h/a\"&b=ops@example.com",
      })
  void aQuoteBeforeAnElementsEndOrParameterCloses(String text) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(text);
  }
}
