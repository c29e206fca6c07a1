package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class HostPatternTest {

  @ParameterizedTest
  @CsvSource({
    "api.example.com, api.example.com, 443, true",
    // A name in Unicode and its ASCII form (OkHttp sends xn--...) are one host.
    "bücher.example, xn--bcher-kva.example, 443, true",
    "bücher.example, bücher.example, 443, true",
    "BÜCHER.example, Bücher.Example., 443, true",
    "xn--bcher-kva.example, bücher.example, 443, true",
    "*.bücher.example, a.xn--bcher-kva.example, 443, true",
    "*.xn--bcher-kva.example, a.bücher.example, 443, true",
    "bücher.example, buecher.example, 443, false",
    // A request host in upper case as TargetKey.host keys it: lower-cased before IDNA, which folds
    // case only for what Unicode 3.2 knew (ẞ, the Cherokee letters came later).
    "straße.example, STRAẞE.example, 443, true",
    "STRAẞE.example, STRAẞE.example, 443, true",
    "Ꭰ.example, Ꭰ.example, 443, true",
    // What an ASCII pattern matched in version 1, it still matches.
    "b*.example, bücher.example, 443, true",
    "*.example, bücher.example, 443, true",
    "*.example, xn--bcher-kva.example, 443, true",
    "api.example.com, API.Example.COM, 443, true",
    "API.EXAMPLE.COM, api.example.com, 80, true",
    "api.example.com, api.example.com., 443, true",
    "api.example.com, api.example.org, 443, false",
    "api.example.com, xapi.example.com, 443, false",
    "*.example.com, a.example.com, 443, true",
    "*.example.com, a.b.example.com, 443, true",
    "*.example.com, example.com, 443, false",
    "*.example.com, evil-example.com, 443, false",
    "api-*.internal, api-eu-1.internal, 80, true",
    "api-*.internal, web-eu-1.internal, 80, false",
    "*, anything.at.all, 1234, true",
    "*.pay.internal:8443, x.pay.internal, 8443, true",
    "*.pay.internal:8443, x.pay.internal, 443, false",
    "*.pay.internal:*, x.pay.internal, 443, true",
    "localhost:8080, localhost, 8080, true",
    "localhost:8080, localhost, 8081, false",
    "127.0.0.1, 127.0.0.1, 9000, true",
    "127.0.0.*, 127.0.0.42, 9000, true",
    "'[::1]:8080', '[::1]', 8080, true",
    "'[::1]:8080', ::1, 8080, true",
    "'[::1]:8080', ::1, 8081, false",
    "'[::1]', ::1, 1, true",
    "::1, '[::1]', 443, true",
    "'[2001:DB8::1]', 2001:db8::1, 443, true",
    "'[2001:db8::*]', '[2001:db8::42]', 443, true",
    "'[::1]', '[0:0:0:0:0:0:0:1]', 80, true",
    "'[::1]', 0:0:0:0:0:0:0:1, 80, true",
    "'[0:0::1]:8080', ::1, 8080, true",
    "'[2001:db8::1]', '[2001:DB8:0:0:0:0:0:1]', 443, true",
    "'[2001:db8::*]', '[2001:DB8:0:0:0:0:0:42]', 443, true",
    "'[::2]', '[0:0:0:0:0:0:0:1]', 80, false",
    "127.0.0.1, '[::ffff:127.0.0.1]', 80, true",
    // A mapped address with a zone is IPv6 now; version 1 compared it as 10.0.0.1%eth0.
    "10.0.0.*, '[::ffff:10.0.0.1%eth0]', 80, true",
    "10.0.0.*, '[::ffff:a00:1%ETH0]', 80, true",
    "10.0.0.*, '::ffff:10.0.0.1%eth0', 80, true",
    "10.0.0.1, '[::ffff:10.0.0.1%eth0]', 80, false",
    "10.0.0.*, '[fe80::1%eth0]', 80, false",
    "'[::ffff:127.0.0.1]', 127.0.0.1, 80, true",
    // A glob written over a spelling that is not RFC 5952's still matches that spelling.
    "'[::ffff:*]', '[::ffff:10.0.0.7]', 80, true",
    "'[2001:db8:0:0:*]', '[2001:db8:0:0:1:2:3:4]', 443, true",
    "'[2001:db8:0:0:*]', '[2001:db8:0:1:1:2:3:4]', 443, false",
    "api.example.com., api.example.com, 443, true",
    "api.example.com., API.example.com., 443, true"
  })
  void matchesHostsCaseInsensitivelyWithGlobsPortsAndIpv6(
      String pattern, String host, int port, boolean matches) {
    assertThat(HostPattern.compile(pattern).matches(host, port)).isEqualTo(matches);
  }

  @Test
  void neverMatchesANullHost() {
    assertThat(HostPattern.compile("*").matches(null, 80)).isFalse();
  }

  @ParameterizedTest
  @CsvSource({
    "API.Example.com, api.example.com",
    "x.com:443, x.com:443",
    "x.com:*, x.com",
    "'[::1]:8080', '[::1]:8080'",
    "::1, '[::1]'",
    "'[0:0:0:0:0:0:0:1]:8080', '[::1]:8080'",
    "'[2001:DB8::0001]', '[2001:db8::1]'",
    "'[::ffff:10.0.0.1]', 10.0.0.1",
    "api.example.com., api.example.com",
    "'[2001:db8::*]', '[2001:db8::*]'",
    "bücher.example:8443, xn--bcher-kva.example:8443",
    "*.BÜCHER.example, *.xn--bcher-kva.example"
  })
  void hasACanonicalForm(String pattern, String canonical) {
    assertThat(HostPattern.compile(pattern)).hasToString(canonical);
  }

  @Test
  void knowsWhenItMatchesEverything() {
    assertThat(HostPattern.compile("*").matchesEverything()).isTrue();
    assertThat(HostPattern.compile("*:*").matchesEverything()).isTrue();
    assertThat(HostPattern.compile("*:80").matchesEverything()).isFalse();
    assertThat(HostPattern.compile("*.x").matchesEverything()).isFalse();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        " ",
        "x.com:0",
        "x.com:65536",
        "x.com:http",
        "x.com:",
        "[::1",
        "[::1]8080",
        "[]",
        "[nothost]",
        "a b.com",
        "x.com/path",
        "ex@mple.com",
        "x.com:80:90",
        "bü*.example",
        // IDNA maps the full-width colon and at sign to ASCII ones: no host name, no IPv6 literal.
        "ｂ：8080",
        "user：pw-SECRET＠bücher.example"
      })
  void refusesInvalidPatterns(String pattern) {
    assertThatThrownBy(() -> HostPattern.compile(pattern))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("allowed");
  }

  @ParameterizedTest
  @CsvSource({
    "user@api.example.com, api.example.com",
    "user:pw-SECRET@api.example.com, api.example.com",
    "user:pw-SECRET@host:*, host:*",
    "user:pw-SECRET@api.example.com:8443, api.example.com:8443",
    "'u:p@ss-SECRET@[::1]:80', '[::1]:80'",
    "user:SECRET@, the host alone"
  })
  void refusesUserInfoSayingSoWithoutThePassword(String pattern, String host) {
    // user:password@host used to read as host "user", port "password@host": "allowed a port".
    assertThatThrownBy(() -> HostPattern.compile(pattern))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "allowed a host without user-info (user@ or user:password@): a route matches hosts,"
                + " never credentials; write "
                + host);
  }

  @Test
  void aSchemeWithUserInfoIsRefusedWithoutThePassword() {
    assertThatThrownBy(() -> HostPattern.compile("https://user:pw-SECRET@api.example.com"))
        .hasMessage(
            "allowed a host without a scheme or user-info: write api.example.com and put paths in"
                + " match.paths");
  }

  @Test
  void explainsASchemeOrAPath() {
    assertThatThrownBy(() -> HostPattern.compile("https://api.example.com/v1"))
        .hasMessageContaining("without a scheme");
    assertThatThrownBy(() -> HostPattern.compile("api.example.com/v1"))
        .hasMessageContaining("put paths in match.paths");
  }

  /**
   * A whole URL where a host belongs (often a variable's: {@code hosts: ['${DB_URL}']}): the hint
   * named its path, query and fragment too ({@code write db:5432/x?sslpassword=SECRET}), where the
   * value shown beside it has them as {@code ?***}. The hint is the host and port alone, and no
   * hint when the last '@' may be in the query or fragment (what follows it is no host).
   */
  @ParameterizedTest
  @CsvSource({
    "'http://u:pw@db:5432/x?sslpassword=SECRET', 'write db:5432 '",
    "'https://api.example.com?token=SECRET', 'write api.example.com '",
    "'https://api.example.com#SECRET', 'write api.example.com '",
    "'https://api.example.com/v1;jsessionid=SECRET', 'write api.example.com '",
    "'https://api.example.com/x?email=a@b.example&token=SECRET', 'write the host alone '",
    "'https://u:p?w-SECRET@api.example.com', 'write the host alone '",
    "'u:pw@db?token=SECRET', 'credentials; write db'"
  })
  void aUrlsHintIsItsHostNeverItsPathQueryOrFragment(String pattern, String hint) {
    assertThatThrownBy(() -> HostPattern.compile(pattern))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(hint)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContainIgnoringCase("secret"));
  }
}
