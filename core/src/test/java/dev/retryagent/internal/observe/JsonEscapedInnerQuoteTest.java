package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A JSON text quoted in a JSON string ({@code {\"password\":\"x\"}}) whose value holds a quote or a
 * backslash of its own, escaped twice: the value goes whole, not only up to that quote.
 */
class JsonEscapedInnerQuoteTest {

  @ParameterizedTest
  @ValueSource(
      strings = {
        "body {\\\"password\\\":\\\"ab\\\\\\\"SECRETCANARY\\\",\\\"a\\\":1}",
        "body {\\\"password\\\":\\\"ab\\\\\\\"SE CRETCANARY\\\\\\\" more\\\",\\\"a\\\":1}",
        "body {\\\"client_secret\\\":\\\"\\\\\\\"SECRETCANARY\\\\\\\"\\\",\\\"a\\\":1}",
      })
  void anInnerEscapedQuoteDoesNotEndTheValue(String text) {
    assertThat(Sanitizer.message(text, null))
        .doesNotContain("CANARY")
        .doesNotContain("CRET")
        .endsWith("\\\":\\\"<redacted>\\\",\\\"a\\\":1}");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        // An escaped backslash ending the value, then the next key: that one is kept.
        "body {\\\"password\\\":\\\"SECRET\\\\\\\\\\\",\\\"a\\\":\\\"visible\\\"}",
      })
  void anInnerEscapedBackslashEndsTheValueAtItsQuote(String text) {
    assertThat(Sanitizer.message(text, null))
        .isEqualTo("body {\\\"password\\\":\\\"<redacted>\\\",\\\"a\\\":\\\"visible\\\"}");
  }
}
