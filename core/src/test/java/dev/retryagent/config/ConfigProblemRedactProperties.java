package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * A URL of any scheme written where a configuration problem shows the value never shows its
 * password, whatever else is wrong with it: {@link ConfigProblem#shown}, {@link
 * ConfigProblem#shownHost} and {@link ConfigProblem#shownPath}, and the problems of the real loader
 * for keys of each kind of value. As in {@link RedisUrlRedactProperties}, a password always holds
 * one of the letters Q, X, Z, which no other part generated here holds (in either case: {@code
 * match.hosts} lowercases what it suggests).
 */
class ConfigProblemRedactProperties {
  private static final String MARKERS = "QXZ";

  /** Keys of each kind of value a URL may be written in by mistake, and a key written as one. */
  private static final List<String> DOCUMENTS =
      List.of(
          "agent: {mode: %s}",
          "agent: {deadLetter: %s}",
          "fleet: {redis: %s}",
          "routes: [{name: %s}]",
          "routes: [{name: a, match: {hosts: [%s]}}]",
          "routes: [{name: a, match: {paths: [%s]}}]",
          "routes: [{name: a, retry: {maxAttempts: %s}}]",
          "agent: {%s: 1}");

  @Property(tries = 3000)
  void aPasswordWithItsAtSignIsNeverShown(
      @ForAll("schemes") String scheme,
      @ForAll("users") String user,
      @ForAll("passwords") String password,
      @ForAll("hosts") String host,
      @ForAll("tails") String tail) {
    assertNoMarker(scheme + user + password + "@" + host + tail);
  }

  /** The {@code @host} left out: the password stands where the host, port or path would. */
  @Property(tries = 3000)
  void aPasswordWithoutItsAtSignAndHostIsNeverShown(
      @ForAll("schemes") String scheme,
      @ForAll("usersWithColon") String user,
      @ForAll("passwordsWithoutAt") String password,
      @ForAll("tails") String tail) {
    assumeNotAHost(user, password);
    assertNoMarker(scheme + user + password + tail);
  }

  /**
   * Through the loader, substituted from a variable too, for each kind of key: each problem reads
   * the same as for the same URL with its password's markers written {@code g}, a letter of the
   * same kind (not hex), ({@code match.hosts} lowercases what it suggests, and messages hold these
   * letters of their own).
   */
  @Property(tries = 300)
  void noProblemOfTheLoaderShowsAPasswordOfAUrlWithoutItsHost(
      @ForAll("schemes") String scheme,
      @ForAll("usersWithColon") String user,
      @ForAll("passwordsWithoutAt") String password,
      @ForAll("tails") String tail) {
    assumeNotAHost(user, password);
    String url = scheme.trim() + user + password + tail;
    String same = scheme.trim() + user + password.replaceAll("[" + MARKERS + "]", "g") + tail;
    for (String document : DOCUMENTS) {
      assertThat(problems(document, url)).as(url).isEqualTo(problems(document, same));
    }
  }

  /**
   * Without {@code @}, what reads as {@code host[:port]} is shown, and its path: {@code
   * https://user:12/x} (a password of digits), {@code https://[::1:12]/x}. That is the limit.
   */
  private static void assumeNotAHost(String user, String password) {
    String authority = (user + password).split("[/?#]", 2)[0];
    Assume.that(!ConfigProblem.AUTHORITY.matcher(authority).matches());
  }

  @Example
  void aUrlWithoutItsHostShowsWhatReadsAsOne() {
    assertThat(ConfigProblem.shown("https://u:pass")).isEqualTo("https://***");
    assertThat(ConfigProblem.shown("http://user:secret/path")).isEqualTo("http://***");
    assertThat(ConfigProblem.shown("https://u:pa ss")).isEqualTo("https://***");
    assertThat(ConfigProblem.shown("https://u:p ss@h/x")).isEqualTo("https://***@h/x");
    assertThat(ConfigProblem.shown("https://[::1:pw")).isEqualTo("https://***");
    // What reads as host[:port] is kept, and so is the path after it.
    assertThat(ConfigProblem.shown("https://api.example.com:8443/v1"))
        .isEqualTo("https://api.example.com:8443/v1");
    assertThat(ConfigProblem.shown("http://[::1]:80/x?t=1")).isEqualTo("\"http://[::1]:80/x?***\"");
    assertThat(ConfigProblem.shown("file:///var/log/x")).isEqualTo("file:///var/log/x");
    assertThat(ConfigProblem.shownHost("https://u:pw")).isEqualTo("https://***");
  }

  private static List<String> problems(String document, String value) {
    String quoted = "'" + value.replace("'", "''") + "'";
    List<String> all = new ArrayList<>();
    for (String text :
        List.of(String.format(document, quoted), String.format(document, "'${V}'"))) {
      try {
        for (ConfigProblem p :
            ConfigLoader.parse(text, "test.yml", Map.of("V", value)).warnings()) {
          all.add(p.toString());
        }
      } catch (ConfigException e) {
        for (ConfigProblem p : e.problems()) {
          all.add(p.toString());
        }
      }
    }
    return all;
  }

  private static void assertNoMarker(String url) {
    for (String shown :
        List.of(
            ConfigProblem.shown(url), ConfigProblem.shownHost(url), ConfigProblem.shownPath(url))) {
      assertThat(shown).as(url).doesNotContainPattern("[" + MARKERS + "]");
    }
    String same = url.replaceAll("[" + MARKERS + "]", "g");
    assertThat(hostProblem(url)).as(url).isEqualTo(hostProblem(same));
  }

  /** What {@code match.hosts} says of a value, which suggests its host lowercased. */
  private static String hostProblem(String text) {
    try {
      return HostPattern.compile(text).toString();
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
  }

  @Provide
  Arbitrary<String> schemes() {
    return Arbitraries.of("https://", "http://", "HTTPS://", "ftp://", " https://", "svc+x://");
  }

  @Provide
  Arbitrary<String> users() {
    return Arbitraries.of("", ":", "u:", "u%3A:", "[::1:", "[:", "api:", "${U}:", "[::1]:");
  }

  @Provide
  Arbitrary<String> usersWithColon() {
    return Arbitraries.of(":", "u:", "u%3A:", "[::1:", "[:", "api:", "${U}:", "[::1]:");
  }

  @Provide
  Arbitrary<String> passwords() {
    return RedisUrlRedactProperties.passwords(true);
  }

  @Provide
  Arbitrary<String> passwordsWithoutAt() {
    return RedisUrlRedactProperties.passwords(false);
  }

  @Provide
  Arbitrary<String> hosts() {
    return Arbitraries.of(
        "api.example.com", "10.0.0.1", "[::1]", "[::1", "", "${H}", "ap i", "h:8443", "h:*");
  }

  @Provide
  Arbitrary<String> tails() {
    return Arbitraries.of("", "/v1", "/", "/v1/charges", "?token=1", "#f", "/v1?a=b", "/a b");
  }
}
