package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A URL a parser quoted blanks and all, whose query or fragment is percent-encoded: dropped to the
 * URL's end, as a plain {@code ?} or {@code #} one is, not only to the first blank.
 */
class EncodedQueryPastBlankTest {

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "Illegal character in query at index 15: http://h/x%3Ftoken%3DSE CRETCANARY"
            + "|Illegal character in query at index 15: http://h/x",
        "Invalid URL host: \"http://h/x%3Ftoken%3DSE CRETCANARY\" rest"
            + "|Invalid URL host: \"http://h/x\" rest",
        "Illegal character in fragment at index 15: http://h/x%23access_tok%3DSE CRETCANARY"
            + "|Illegal character in fragment at index 15: http://h/x",
        "Illegal character in query at index 15: http://h/x%3ftoken%3dSE CRETCANARY"
            + "|Illegal character in query at index 15: http://h/x",
        // The encoded query in a later word of the URL.
        "Illegal character in path at index 11: http://h/a b%3Ftoken%3DSECRET CANARY"
            + "|Illegal character in path at index 11: http://h/a b",
        "Illegal character in path at index 11: http://h/a b/c%23tok%3DSE CRETCANARY"
            + "|Illegal character in path at index 11: http://h/a b/c",
        // Nothing encoded: the words after the blank are the URL's path, kept.
        "Illegal character in path at index 11: http://h/a b/c d|Illegal character in path at index"
            + " 11: http://h/a b/c d",
      })
  void anEncodedQueryOfAUrlWithABlankIsDroppedToTheUrlsEnd(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }
}
