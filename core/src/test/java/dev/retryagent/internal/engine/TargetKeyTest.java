package dev.retryagent.internal.engine;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TargetKeyTest {

  @ParameterizedTest
  @CsvSource({
    "api.example.com, http://api.example.com:80",
    "API.Example.COM, http://api.example.com:80",
    "api.example.com., http://api.example.com:80",
    "API.example.com., http://api.example.com:80",
    "'[::1]', 'http://[::1]:80'",
    "::1, 'http://[::1]:80'",
    "'[0:0:0:0:0:0:0:1]', 'http://[::1]:80'",
    "0:0:0:0:0:0:0:1, 'http://[::1]:80'",
    "'[::0001]', 'http://[::1]:80'",
    "'[2001:DB8::A]', 'http://[2001:db8::a]:80'",
    "'[2001:db8:0:0:0:0:0:a]', 'http://[2001:db8::a]:80'",
    "'[::ffff:127.0.0.1]', http://127.0.0.1:80",
    "'[fe80::0001%eth0]', 'http://[fe80::1%eth0]:80'",
    // A zone names an interface, and some systems tell eth0 from ETH0: its case is kept.
    "'[FE80::1%ETH0]', 'http://[fe80::1%ETH0]:80'",
    "'fe80::1%Eth0', 'http://[fe80::1%Eth0]:80'",
    // A mapped address with a zone stays an IPv6 literal, in brackets.
    "'[::ffff:10.0.0.1%eth0]', 'http://[::ffff:a00:1%eth0]:80'",
    "'::FFFF:10.0.0.1%eth0', 'http://[::ffff:a00:1%eth0]:80'",
    // A name in Unicode is its ASCII form, as OkHttp sends it.
    "bücher.example, http://xn--bcher-kva.example:80",
    "BÜCHER.Example., http://xn--bcher-kva.example:80",
    "xn--bcher-kva.example, http://xn--bcher-kva.example:80",
    "bücher。example, http://xn--bcher-kva.example:80",
    "user:pa@ss@h.example, http://<redacted>@h.example:80",
    "'[1:2]', 'http://[1:2]:80'",
    "., http://.:80"
  })
  void everySpellingOfAHostMakesOneKey(String host, String key) {
    assertThat(TargetKey.of("http", host, 80)).isEqualTo(key);
  }

  @Test
  void aHostAlreadyInItsOneSpellingIsItself() {
    String host = "api.example.com";
    assertThat(TargetKey.host(host)).isSameAs(host);
    assertThat(TargetKey.host(null)).isNull();
    assertThat(TargetKey.of("http", null, 80)).isEqualTo("http://null:80");
  }

  @Test
  void aUnicodeLabelIdnaRefusesIsKeptAsWritten() {
    String tooLong = "ü".repeat(70) + ".example";
    assertThat(TargetKey.host(tooLong)).isEqualTo(tooLong);
    assertThat(TargetKey.ascii("*.bücher.example")).isEqualTo("*.xn--bcher-kva.example");
    assertThat(TargetKey.ascii("bü*.example")).isEqualTo("bü*.example");
  }
}
