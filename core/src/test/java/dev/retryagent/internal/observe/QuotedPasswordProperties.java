package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * A URL's password of any punctuation and blanks is never written where a message marks where the
 * URL ends: last after ": ", quoted, or a key's value. Each password starts and ends with "QZ",
 * which nothing else here holds: a leak of any part around its marks shows. Quotes are left out of
 * the passwords (one before a punctuation mark reads as the closing one: see isClosingQuote), and
 * so is "://" (a URL nested in the password ends its user-info there). Unquoted URLs in the middle
 * of a sentence are not looked at: a blank ends them, and the rest of such a password is prose.
 */
class QuotedPasswordProperties {

  @Property(tries = 3000)
  void aPasswordOfAnyPunctuationAndBlanksIsNeverWritten(
      @ForAll("contexts") String context, @ForAll("passwords") String password) {
    Assume.that(!password.contains("://"));
    String text = String.format(context, password);
    assertThat(Sanitizer.message(text, null)).doesNotContain("QZ");
  }

  @Provide
  Arbitrary<String> contexts() {
    return Arbitraries.of(
        "failed: http://u:%s@h/x",
        "failed:\u2003https://u:%s@h/x",
        "failed \"http://u:%s@h/x\" now",
        "failed 'http://u:%s@h/x' now",
        "failed url=http://u:%s@h/x",
        // After a no-break space, and with a query holding a ':' and a %40 after the URL (r49).
        // Not without a scheme (u:%s@h/x, //u:%s@h/x): there a '@' or prose's marks after a blank
        // (" (", " [") in the password end it by design, and the property does not hold.
        "failed:\u00A0http://u:%s@h/x",
        "failed: http://u:%s@h/x?q=a:b%%40c&k=QZ");
  }

  @Provide
  Arbitrary<String> passwords() {
    return Arbitraries.strings()
        .withChars("abcXYZ019!#$%&()*+,-./:;<=>?@[\\]^_`{|}~ \t")
        .ofMinLength(1)
        .ofMaxLength(12)
        .map(p -> "QZ" + p + "QZ");
  }
}
