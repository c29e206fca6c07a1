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
}
