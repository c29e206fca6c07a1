package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.internal.engine.TargetKey;
import java.net.IDN;
import java.util.List;
import java.util.Locale;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * A host name with labels in Unicode is one host with its ASCII form (OkHttp sends {@code xn--...},
 * other clients may give the Unicode text): {@code match.hosts} written either way matches a
 * request given either way, and the per-host key is the same. The oracle is the JDK's {@link
 * IDN#toASCII} over the whole name.
 */
class UnicodeHostProperties {

  @Property(tries = 500)
  void aUnicodeNameAndItsAsciiFormAreOneHostToRoutesAndKeys(@ForAll("names") String unicode) {
    String ascii = IDN.toASCII(unicode, IDN.ALLOW_UNASSIGNED).toLowerCase(Locale.ROOT);

    assertThat(TargetKey.host(unicode)).isEqualTo(ascii);
    assertThat(TargetKey.host(ascii)).isEqualTo(ascii);
    for (String pattern : List.of(unicode, ascii, unicode.toUpperCase(Locale.ROOT))) {
      HostPattern p = HostPattern.compile(pattern);
      assertThat(p).as(pattern).hasToString(ascii);
      for (String request : List.of(unicode, ascii, unicode + ".")) {
        assertThat(p.matches(request, 443)).as(pattern + " vs " + request).isTrue();
      }
      assertThat(p.matches("x" + ascii, 443)).isFalse();
    }
  }

  @Provide
  Arbitrary<String> names() {
    Arbitrary<String> unicodeLabel =
        Arbitraries.strings().withChars("abcüöäßéñçøåжлдя中文日本한국").ofMinLength(1).ofMaxLength(12);
    Arbitrary<String> asciiLabel =
        Arbitraries.strings().withChars("abcdefxyz0123-").ofMinLength(1).ofMaxLength(10);
    return Arbitraries.oneOf(unicodeLabel, asciiLabel)
        .list()
        .ofMinSize(1)
        .ofMaxSize(3)
        .map(labels -> String.join(".", labels) + ".example")
        .filter(n -> !TargetKey.isAscii(n))
        // Labels IDNA itself refuses (a leading or trailing '-', ...) are not this property's.
        .filter(UnicodeHostProperties::idnaTakes);
  }

  private static boolean idnaTakes(String name) {
    try {
      IDN.toASCII(name, IDN.ALLOW_UNASSIGNED | IDN.USE_STD3_ASCII_RULES);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }
}
