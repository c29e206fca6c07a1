package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RedisUrlTest {
  @Test
  void readsHostPortAndDefaults() {
    RedisUrl url = RedisUrl.parse("redis://cache.internal");

    assertThat(url.host()).isEqualTo("cache.internal");
    assertThat(url.port()).isEqualTo(6379);
    assertThat(url.tls()).isFalse();
    assertThat(url.user()).isNull();
    assertThat(url.password()).isNull();
    assertThat(url.database()).isZero();
  }

  @Test
  void readsTlsUserPasswordAndDatabase() {
    RedisUrl url = RedisUrl.parse("rediss://svc:pa55@cache.internal:6380/3");

    assertThat(url.tls()).isTrue();
    assertThat(url.user()).isEqualTo("svc");
    assertThat(url.password()).isEqualTo("pa55");
    assertThat(url.port()).isEqualTo(6380);
    assertThat(url.database()).isEqualTo(3);
  }

  @Test
  void aPasswordAloneIsForTheDefaultUserWithOrWithoutTheColon() {
    assertThat(RedisUrl.parse("redis://:pw@h").password()).isEqualTo("pw");
    assertThat(RedisUrl.parse("redis://:pw@h").user()).isNull();
    assertThat(RedisUrl.parse("redis://pw@h").password()).isEqualTo("pw");
    assertThat(RedisUrl.parse("redis://pw@h").user()).isNull();
  }

  @Test
  void decodesPercentEncodingButKeepsPlus() {
    RedisUrl url = RedisUrl.parse("redis://us%3Aer:a%40b%2Fc+d%25@h");

    assertThat(url.user()).isEqualTo("us:er");
    assertThat(url.password()).isEqualTo("a@b/c+d%");
  }

  @Test
  void theLastAtSignEndsTheUserInfo() {
    RedisUrl url = RedisUrl.parse("redis://u:p@ss@h:1");

    assertThat(url.password()).isEqualTo("p@ss");
    assertThat(url.host()).isEqualTo("h");
  }

  @Test
  void readsIpv6Hosts() {
    RedisUrl url = RedisUrl.parse("redis://[::1]:7000");

    assertThat(url.host()).isEqualTo("::1");
    assertThat(url.port()).isEqualTo(7000);
    assertThat(url).hasToString("redis://[::1]:7000");
  }

  @Test
  void aHostWithABlankOrAControlCharacterIsRefusedAtOnceNotAtTheFirstCall() {
    // What a YAML scalar folded across lines gives ("redis://cache\n  :6379").
    for (String url :
        new String[] {
          "redis://cache :6379",
          "redis://u:topsecret@cache\t:6379/1",
          "redis://ca che",
          "redis://ca\u0007che"
        }) {
      assertThatThrownBy(() -> RedisUrl.parse(url))
          .as(url)
          .hasMessageContaining("a blank or a control character in its host")
          .hasMessageNotContaining("topsecret");
    }
    assertThat(RedisUrl.parse("redis://cache-1.internal_x:6379").host())
        .isEqualTo("cache-1.internal_x");
  }

  @Test
  void printsWithoutTheUserInfo() {
    assertThat(RedisUrl.parse("rediss://svc:topsecret@h:6380/2")).hasToString("rediss://h:6380/2");
  }

  @Test
  void errorsNameTheProblemWithoutTheSecret() {
    assertThatThrownBy(() -> RedisUrl.parse("http://u:topsecret@h"))
        .hasMessageContaining("redis:// or rediss://")
        .hasMessageNotContaining("topsecret");
    assertThatThrownBy(() -> RedisUrl.parse("redis://u:topsecret@h:notaport"))
        .hasMessageContaining("invalid port")
        .hasMessageNotContaining("topsecret");
    assertThatThrownBy(() -> RedisUrl.parse("redis://u:topsecret@h/x"))
        .hasMessageContaining("invalid database")
        .hasMessageNotContaining("topsecret");
    assertThatThrownBy(() -> RedisUrl.parse("redis://u:topsecret@h?timeout=1"))
        .hasMessageContaining("no query")
        .hasMessageNotContaining("topsecret");
    assertThatThrownBy(() -> RedisUrl.parse("redis://u:topsecret@"))
        .hasMessageContaining("no host");
    assertThatThrownBy(() -> RedisUrl.parse(" ")).hasMessageContaining("must be set");
  }

  /**
   * A generated password holds '/', and may hold '?' or '#' unencoded: read up to the last '@', and
   * never printed, by the URL's text, its errors, or the configuration's problems.
   */
  @ParameterizedTest
  @ValueSource(strings = {"u:canary/pw", ":canary?pw", "u:canary#pw", "canary/a?b#c@d"})
  void aPasswordWithAnUnencodedSlashQuestionMarkOrHashIsReadWholeAndNeverPrinted(String userInfo) {
    RedisUrl url = RedisUrl.parse("redis://" + userInfo + "@cache:6379/1");
    assertThat(url.password()).contains("canary");
    assertThat(url.host()).isEqualTo("cache");
    assertThat(url).hasToString("redis://cache:6379/1");
    String bad = "redis://" + userInfo + "@cache:notaport";
    assertThatThrownBy(() -> RedisUrl.parse(bad)).hasMessageNotContaining("canary");
    assertThat(RedisUrl.redact(bad)).isEqualTo("redis://***@cache:notaport");
    assertThat(Yaml.problems("fleet: {redis: {url: '" + bad + "'}}"))
        .isNotEmpty()
        .allSatisfy(p -> assertThat(p.toString()).doesNotContain("canary"));
    // A URL written where its key belongs (a ':' too many): its path shows it too.
    assertThat(Yaml.problems("fleet: {'" + bad.replace(":notaport", "") + "': 1}"))
        .isNotEmpty()
        .allSatisfy(p -> assertThat(p.toString()).doesNotContain("canary"));
  }

  /**
   * A URL whose host was left out (an empty variable, say) holds no '@': what would be the password
   * stands where the host or the port does, and a problem must not print it either.
   */
  @ParameterizedTest
  @ValueSource(strings = {"redis://:canary", "redis://u:canary", "rediss://u:canary/2"})
  void aUrlWithoutItsHostNeverPrintsWhatMayBeItsPassword(String bad) {
    assertThatThrownBy(() -> RedisUrl.parse(bad)).hasMessageNotContaining("canary");
    assertThat(Yaml.problems("fleet: {redis: {url: '" + bad + "'}}"))
        .isNotEmpty()
        .allSatisfy(p -> assertThat(p.toString()).doesNotContain("canary"));
    // Written as fleet.redis, where a map belongs: a value of no known type, shown all the same.
    assertThat(Yaml.problems("fleet: {redis: '" + bad + "'}"))
        .isNotEmpty()
        .allSatisfy(p -> assertThat(p.toString()).doesNotContain("canary"));
    assertThat(RedisUrl.redact(bad)).startsWith(bad.substring(0, bad.indexOf("://") + 3) + "***");
    // A host with a port out of range, or none after its colon, is shown as it was.
    assertThat(RedisUrl.redact("redis://cache:99999/1")).isEqualTo("redis://cache:99999/1");
    assertThat(RedisUrl.redact("redis://[::1]:/1")).isEqualTo("redis://[::1]:/1");
  }
}
