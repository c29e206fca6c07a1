package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Locale;
import java.util.regex.Pattern;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** The greedy glob matcher agrees with a regular expression on every pattern and text. */
class GlobProperties {

  private static boolean oracle(String glob, String text, boolean ignoreCase) {
    StringBuilder regex = new StringBuilder();
    for (String part : glob.split("\\*", -1)) {
      if (regex.length() > 0 || glob.startsWith("*")) {
        regex.append(".*");
      }
      regex.append(Pattern.quote(part));
    }
    int flags = Pattern.DOTALL | (ignoreCase ? Pattern.CASE_INSENSITIVE : 0);
    return Pattern.compile(regex.toString(), flags).matcher(text).matches();
  }

  @Property(tries = 2000)
  void agreesWithARegularExpression(
      @ForAll("patterns") String pattern, @ForAll("texts") String text) {
    assertThat(Glob.of(pattern).matches(text)).isEqualTo(oracle(pattern, text, false));
  }

  @Property(tries = 1000)
  void agreesWithACaseInsensitiveRegularExpression(
      @ForAll("patterns") String pattern, @ForAll("mixedCaseTexts") String text) {
    assertThat(Glob.ignoringCase(pattern).matches(text)).isEqualTo(oracle(pattern, text, true));
  }

  @Property(tries = 500)
  void matchesAWindowOfALongerString(
      @ForAll("patterns") String pattern,
      @ForAll("texts") String before,
      @ForAll("texts") String text,
      @ForAll("texts") String after) {
    String s = before + text + after;
    assertThat(Glob.of(pattern).matches(s, before.length(), before.length() + text.length()))
        .isEqualTo(oracle(pattern, text, false));
  }

  @Example
  void aLeadingStarMatchesASuffix() {
    Glob g = Glob.ignoringCase("*.pay.internal");
    assertThat(g.matches("eu.PAY.internal")).isTrue();
    assertThat(g.matches(".pay.internal")).isTrue();
    assertThat(g.matches("pay.internal")).isFalse();
    assertThat(Glob.of("").matches("")).isTrue();
    assertThat(Glob.of("").matches("x")).isFalse();
    assertThat(Glob.of("**").matchesEverything()).isTrue();
    assertThat(Glob.of("").matchesEverything()).isFalse();
  }

  @Provide
  Arbitrary<String> patterns() {
    return Arbitraries.strings().withChars('a', 'b', '*', '.').ofMaxLength(8);
  }

  @Provide
  Arbitrary<String> texts() {
    return Arbitraries.strings().withChars('a', 'b', '.').ofMaxLength(12);
  }

  @Provide
  Arbitrary<String> mixedCaseTexts() {
    return texts().map(t -> t.length() % 2 == 0 ? t.toUpperCase(Locale.ROOT) : t);
  }
}
