package dev.retryagent.fleet;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A route's name in its Redis keys: a name of the earlier rule exactly as before, any other
 * percent-encoded so that no two routes (nor two fleets whose prefixes differ by a {@code :}) share
 * a key.
 */
class RouteKeyPartTest {
  private static final String OLD_FIRST =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  private static final String OLD_REST = OLD_FIRST + "._-";

  private static FleetSettings settings(String prefix) {
    return FleetSettings.builder("redis://127.0.0.1:6379").keyPrefix(prefix).build();
  }

  @Test
  void aNameOfTheEarlierRuleKeepsItsKeyByteForByte() {
    assertThat(settings("retry-agent").routeKey("llm")).isEqualTo("retry-agent:llm");
    assertThat(settings("billing").routeKey("pay-v1.2_x")).isEqualTo("billing:pay-v1.2_x");
    Random random = new Random(11);
    for (int n = 0; n < 10_000; n++) {
      StringBuilder name = new StringBuilder();
      name.append(OLD_FIRST.charAt(random.nextInt(OLD_FIRST.length())));
      for (int i = random.nextInt(64); i > 0; i--) {
        name.append(OLD_REST.charAt(random.nextInt(OLD_REST.length())));
      }
      assertThat(FleetSettings.routeKeyPart(name.toString())).isEqualTo(name.toString());
    }
  }

  @Test
  void anyOtherCharacterIsThePercentCodeOfItsUtf8Bytes() {
    assertThat(FleetSettings.routeKeyPart("openai:chat")).isEqualTo("openai%3Achat");
    assertThat(FleetSettings.routeKeyPart("Payments API")).isEqualTo("Payments%20API");
    assertThat(FleetSettings.routeKeyPart("payments/v2")).isEqualTo("payments%2Fv2");
    assertThat(FleetSettings.routeKeyPart("caf\u00e9")).isEqualTo("caf%C3%A9");
    assertThat(FleetSettings.routeKeyPart("\u20ac")).isEqualTo("%E2%82%AC");
    assertThat(FleetSettings.routeKeyPart("\ud83d\ude80")).isEqualTo("%F0%9F%9A%80");
    assertThat(FleetSettings.routeKeyPart("\"\\,=*?%{}")).isEqualTo("%22%5C%2C%3D%2A%3F%25%7B%7D");
    // A lone surrogate is not '?' (which String.getBytes would give, sharing "?"'s key).
    assertThat(FleetSettings.routeKeyPart("\ud800")).isEqualTo("%ED%A0%80");
    assertThat(settings("retry-agent").routeKey("openai:chat"))
        .isEqualTo("retry-agent:openai%3Achat");
  }

  @Test
  void namesThatWouldShareAKeyWrittenAsTheyAreGetTheirOwn() {
    // Route a:b of prefix p and route b of prefix p:a were both p:a:b.
    assertThat(settings("p").routeKey("a:b")).isEqualTo("p:a%3Ab");
    assertThat(settings("p:a").routeKey("b")).isEqualTo("p:a:b");
    // A name holding a %-code of another: % is encoded too.
    assertThat(FleetSettings.routeKeyPart("a%3Ab")).isNotEqualTo(FleetSettings.routeKeyPart("a:b"));
    assertThat(FleetSettings.routeKeyPart("?")).isNotEqualTo(FleetSettings.routeKeyPart("\ud800"));
    // No two names share a key part, over random names of every kind of character.
    String chars = "aZ0._-:% /\"\\,=*?{}\u00e9\u00c9\u20ac\ud83d\ude80\ud800";
    Map<String, String> byPart = new HashMap<>();
    Random random = new Random(5);
    for (int n = 0; n < 50_000; n++) {
      StringBuilder name = new StringBuilder();
      for (int i = 1 + random.nextInt(6); i > 0; i--) {
        name.append(chars.charAt(random.nextInt(chars.length())));
      }
      String part = FleetSettings.routeKeyPart(name.toString());
      assertThat(part).matches("[A-Za-z0-9._%-]+");
      String before = byPart.putIfAbsent(part, name.toString());
      assertThat(before == null || before.equals(name.toString()))
          .as("%s and %s share %s", before, name, part)
          .isTrue();
    }
  }
}
