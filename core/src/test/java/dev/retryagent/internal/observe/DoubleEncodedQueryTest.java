package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** A query or fragment encoded twice ({@code %253F}, {@code %2523}) in a message's URL. */
class DoubleEncodedQueryTest {

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "failed http://h/x%253Ftoken%253DSECRETCANARY rest => failed http://h/x rest",
        "failed http://proxy/fetch/http%253A%252F%252Fh%252Fx%253Ftoken%253DSECRETCANARY rest"
            + " => failed http://proxy/fetch/http%253A%252F%252Fh%252Fx rest",
        "failed http://h/x%2523access_token%253DSECRETCANARY rest => failed http://h/x rest",
        "failed http://h/x%253ftoken%253dSECRETCANARY rest => failed http://h/x rest",
        // Encoded once before it: the first cut wins, as before.
        "failed http://h/x%3Fa%3D%253FSECRETCANARY rest => failed http://h/x rest",
        // A lone trailing one hides nothing.
        "failed http://h/x%253F rest => failed http://h/x%253F rest",
      })
  void aQueryEncodedTwiceIsDropped(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }
}
