package dev.retryagent.it.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The strict JSON parser the tests read dead letters with. */
class JsonTest {
  @Test
  void readsADeadLetterLine() {
    Map<String, Object> m =
        Json.object(
            "{\"time\":\"2026-01-05T10:15:30.123Z\",\"route\":\"a\\\"b\\u0041\",\"port\":8080,"
                + "\"status\":null,\"observe\":false,\"x\":[1,-2.5e3,{}],\"y\":true}");
    assertThat(m)
        .containsEntry("route", "a\"bA")
        .containsEntry("port", 8080L)
        .containsEntry("status", null)
        .containsEntry("observe", false)
        .containsEntry("y", true);
    assertThat(m.get("x")).isEqualTo(List.of(1L, -2500.0, Map.of()));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "{",
        "{\"a\":1",
        "{\"a\":1}}",
        "{\"a\":1,}",
        "{\"a\":01}",
        "{\"a\":\"x\ny\"}",
        "{\"a\":\"\\x\"}",
        "{\"a\":tru}",
        "{\"a\":1,\"a\":2}",
        "{a:1}",
        "{\"time\":\"2026-01-05T10:1"
      })
  void refusesWhatIsNotOneWholeValue(String text) {
    assertThatThrownBy(() -> Json.parse(text)).isInstanceOf(IllegalArgumentException.class);
  }
}
