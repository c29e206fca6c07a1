package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.regex.Pattern;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** Path globs agree with a regular expression: * stays in a segment, ** spans whole segments. */
class PathPatternProperties {

  // The oracle: a ** segment becomes (/[^/]*)*, any other segment / then its parts joined by
  // [^/]*, so /a/**/z is /a(/[^/]*)*/z and /v1/ch_* is /v1/ch_[^/]*.
  private static boolean oracle(String glob, String path) {
    StringBuilder regex = new StringBuilder();
    String[] segments = glob.split("/", -1);
    for (int i = 1; i < segments.length; i++) {
      if (segments[i].equals("**")) {
        regex.append("(/[^/]*)*");
      } else {
        regex.append('/');
        String[] parts = segments[i].split("\\*", -1);
        for (int k = 0; k < parts.length; k++) {
          regex.append(k == 0 ? "" : "[^/]*").append(Pattern.quote(parts[k]));
        }
      }
    }
    return Pattern.compile(regex.toString()).matcher(path.isEmpty() ? "/" : path).matches();
  }

  @Property(tries = 3000)
  void agreesWithARegularExpression(@ForAll("globs") String glob, @ForAll("paths") String path) {
    assertThat(PathPattern.compile(glob).matches(path)).isEqualTo(oracle(glob, path));
  }

  @Property(tries = 500)
  void ignoresAnyQueryString(
      @ForAll("globs") String glob, @ForAll("paths") String path, @ForAll("paths") String query) {
    assertThat(PathPattern.compile(glob).matches(path + "?" + query))
        .isEqualTo(PathPattern.compile(glob).matches(path));
  }

  @Provide
  Arbitrary<String> globs() {
    return Arbitraries.of("a", "b", "*", "a*", "*b", "**", "")
        .list()
        .ofMinSize(1)
        .ofMaxSize(5)
        .map(PathPatternProperties::join);
  }

  @Provide
  Arbitrary<String> paths() {
    return Arbitraries.of("a", "b", "ab", "ba", "")
        .list()
        .ofMinSize(1)
        .ofMaxSize(6)
        .map(PathPatternProperties::join);
  }

  private static String join(List<String> segments) {
    return "/" + String.join("/", segments);
  }
}
