package dev.retryagent.demo.json;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class JsonTest {
  @Test
  void quotedStringsReadBackUnchanged() {
    String tricky = "say \"hi\"\\ now\n\ttab \u0001 é…";
    String json = "{\"a\":1,\"text\":" + Json.quote(tricky) + "}";

    assertThat(Json.field(json, "text")).isEqualTo(tricky);
  }

  @Test
  void readsNumbersAndLiteralsAsWritten() {
    String json = "{\"id\": 42 , \"ok\":true,\"score\":-1}";

    assertThat(Json.field(json, "id")).isEqualTo("42");
    assertThat(Json.field(json, "ok")).isEqualTo("true");
    assertThat(Json.field(json, "score")).isEqualTo("-1");
  }

  @Test
  void aNameThatOnlyAppearsAsAValueIsNotAField() {
    String json = "{\"summary\":\"text\",\"text\":\"body\"}";

    assertThat(Json.field(json, "text")).isEqualTo("body");
    assertThat(Json.field(json, "missing")).isNull();
  }

  @Test
  void brokenInputGivesNullNotAnException() {
    assertThat(Json.field("{\"text\":\"unterminated", "text")).isNull();
    assertThat(Json.field("{\"text\":", "text")).isNull();
    assertThat(Json.field("{\"text\":\"bad \\uZZZZ\"}", "text")).isNull();
  }
}
