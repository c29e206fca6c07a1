package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class PathPatternTest {

  @ParameterizedTest
  @CsvSource({
    "/v1/charges/**, /v1/charges, true",
    "/v1/charges/**, /v1/charges/, true",
    "/v1/charges/**, /v1/charges/ch_1, true",
    "/v1/charges/**, /v1/charges/ch_1/refunds/r_2, true",
    "/v1/charges/**, /v1/chargesX, false",
    "/v1/charges/**, /v1/charge, false",
    "/v1/charges/**, /v2/charges/x, false",
    "/v1/*/refunds, /v1/ch_1/refunds, true",
    "/v1/*/refunds, /v1/a/b/refunds, false",
    "/v1/*/refunds, /v1/refunds, false",
    "/v1/ch_*, /v1/ch_123, true",
    "/v1/ch_*, /v1/ch_123/x, false",
    "/v1/*.json, /v1/a.json, true",
    "/v1/*.json, /v1/a.xml, false",
    "/a/**/z, /a/z, true",
    "/a/**/z, /a/b/c/z, true",
    "/a/**/z, /a/b/c/zz, false",
    "/a/**/z, /a/bz, false",
    "/**/health, /health, true",
    "/**/health, /x/y/health, true",
    "/**, /, true",
    "/**, /anything/at/all, true",
    "/, /, true",
    "/, /x, false",
    "/health, /health, true",
    "/health, /Health, false",
    "/health, /health/, false",
    "/**/a/**/b, /x/a/y/b, true",
    "/**/a/**/b, /x/a/y/c, false"
  })
  void matchesSegmentGlobs(String pattern, String path, boolean matches) {
    assertThat(PathPattern.compile(pattern).matches(path)).isEqualTo(matches);
  }

  @Test
  void ignoresTheQueryStringAndFragment() {
    PathPattern p = PathPattern.compile("/v1/charges/**");
    assertThat(p.matches("/v1/charges?limit=10")).isTrue();
    assertThat(p.matches("/v1/charges/x?a=/v2/")).isTrue();
    assertThat(p.matches("/v2?x=/v1/charges/")).isFalse();
    assertThat(PathPattern.compile("/health").matches("/health#top")).isTrue();
  }

  @Test
  void takesAnEmptyOrNullPathAsRoot() {
    assertThat(PathPattern.compile("/").matches("")).isTrue();
    assertThat(PathPattern.compile("/").matches(null)).isTrue();
    assertThat(PathPattern.compile("/x").matches("")).isFalse();
  }

  @Test
  void staysLinearOnPathologicalInput() {
    PathPattern p = PathPattern.compile("/**/a/**/a/**/a/**/a/**/a/**/b");
    String path = "/a".repeat(2000);
    long start = System.nanoTime();
    assertThat(p.matches(path)).isFalse();
    // A generous bound: backtracking regex engines take minutes here.
    assertThat(System.nanoTime() - start).isLessThan(5_000_000_000L);
  }

  @Test
  void knowsWhenItMatchesEverything() {
    assertThat(PathPattern.compile("/**").matchesEverything()).isTrue();
    assertThat(PathPattern.compile("/*").matchesEverything()).isFalse();
    assertThat(PathPattern.compile("/v1/**").matchesEverything()).isFalse();
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "v1/charges", "/v1/charges?x=1", "/v1/#frag", "/v1/a**", "/v 1"})
  void refusesInvalidPatterns(String pattern) {
    assertThatThrownBy(() -> PathPattern.compile(pattern))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("allowed a path glob");
  }
}
