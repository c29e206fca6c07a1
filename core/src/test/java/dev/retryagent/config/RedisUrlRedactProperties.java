package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * {@link RedisUrl#redact} never shows a password, whatever else is wrong with the URL. A password
 * here always holds one of the letters Q, X, Z, which no other part generated here holds, and is
 * otherwise made of what passwords hold and hosts do not: so a leak of any part of it that holds a
 * letter shows.
 */
class RedisUrlRedactProperties {
  private static final String MARKERS = "QXZ";

  @Property(tries = 5000)
  void aPasswordWithItsAtSignIsNeverShown(
      @ForAll("schemes") String scheme,
      @ForAll("users") String user,
      @ForAll("passwords") String password,
      @ForAll("hosts") String host,
      @ForAll("ports") String port,
      @ForAll("tails") String tail) {
    // Without a scheme or a user, a password that begins with "x://" reads as a scheme.
    Assume.that(!scheme.isEmpty() || !user.isEmpty());
    String url = scheme + user + password + "@" + host + port + tail;
    assertNoMarker(url);
  }

  /**
   * The {@code @host} left out: the password stands where the host, port or path would. (Without
   * its colon too, {@code redis://secret}, it is a host name: that one is shown.)
   */
  @Property(tries = 5000)
  void aPasswordWithoutItsAtSignAndHostIsNeverShown(
      @ForAll("schemes") String scheme,
      @ForAll("usersWithColon") String user,
      @ForAll("passwordsWithoutAt") String password,
      @ForAll("tails") String tail) {
    assertNoMarker(scheme + user + password + tail);
  }

  @Example
  void anUnclosedIpv6AddressWithoutAtSignIsNotShown() {
    assertThat(RedisUrl.redact("redis://[::1:secret")).isEqualTo("redis://***");
    assertThat(RedisUrl.redact("redis://[::1]secret")).isEqualTo("redis://***");
    assertThat(RedisUrl.redact("redis://[::1]:6379")).isEqualTo("redis://[::1]:6379");
    assertThat(RedisUrl.redact("redis://cache:6379/x")).isEqualTo("redis://cache:6379/***");
    // No scheme, and a password that holds "://".
    assertThat(RedisUrl.redact("u:pa://ss@cache")).isEqualTo("***@cache");
    assertThat(RedisUrl.redact("http://u:pass@cache")).isEqualTo("http://***@cache");
    assertThat(RedisUrl.redact("svc://pass")).isEqualTo("***");
  }

  private static void assertNoMarker(String url) {
    String shown = RedisUrl.redact(url);
    for (char c : MARKERS.toCharArray()) {
      assertThat(shown).as(url).doesNotContain(String.valueOf(c));
    }
  }

  @Provide
  Arbitrary<String> schemes() {
    return Arbitraries.of("redis://", "rediss://", "REDIS://", " redis://", "");
  }

  /** The user and its colon, or none: {@code [::1} is an address whose bracket was not closed. */
  @Provide
  Arbitrary<String> users() {
    return Arbitraries.of("", ":", "svc:", "u%3A:", "[::1:", "[:", "cache:", "${U}:", "[::1]:");
  }

  @Provide
  Arbitrary<String> usersWithColon() {
    return Arbitraries.of(":", "svc:", "u%3A:", "[::1:", "[:", "cache:", "${U}:", "[::1]:");
  }

  @Provide
  Arbitrary<String> passwords() {
    return passwords(true);
  }

  @Provide
  Arbitrary<String> passwordsWithoutAt() {
    return passwords(false);
  }

  /**
   * Passwords made of what passwords hold and hosts do not, with an {@code @} or without, each
   * holding at least one of the marker letters Q, X, Z (also for {@link
   * ConfigProblemRedactProperties}).
   */
  static Arbitrary<String> passwords(boolean withAt) {
    return withAt
        ? password(Arbitraries.of("/", "?", "#", ":", "[", "]", "%", "@", "://", "12", " ", "a"))
        : password(Arbitraries.of("/", "?", "#", ":", "[", "]", "%", "://", "12", " ", "a"));
  }

  private static Arbitrary<String> password(Arbitrary<String> others) {
    Arbitrary<String> piece = Arbitraries.oneOf(others, Arbitraries.of("Q", "X", "Z"));
    return Combinators.combine(
            piece.list().ofMaxSize(4), Arbitraries.of("Q", "X", "Z"), piece.list().ofMaxSize(4))
        .as((before, marker, after) -> String.join("", before) + marker + String.join("", after));
  }

  @Provide
  Arbitrary<String> hosts() {
    return Arbitraries.of("cache", "10.0.0.1", "[::1]", "[::1", "", "${H}", "ca che");
  }

  @Provide
  Arbitrary<String> ports() {
    return Arbitraries.of("", ":6379", ":", ":99999", ":notaport");
  }

  @Provide
  Arbitrary<String> tails() {
    return Arbitraries.of("", "/1", "/", "/db", "?timeout=1", "#f", "/1?a=b");
  }
}
