package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code agent.deadLetter.path} as lines show it ({@link AgentConfig#shownPath}): a URL written
 * there by mistake ({@code ${DLQ_URL}}) without its password, a file path as written.
 */
class DeadLetterPathShownTest {
  private static final String CANARY = "CANARY7z";

  @Test
  void aFilePathIsShownAsWritten() {
    for (String p :
        new String[] {
          "/var/log/retry-dead-letters.jsonl",
          "dead letters.jsonl",
          "/data/user@host/dead.jsonl",
          "C:/logs/dead.jsonl",
          "C:\\logs\\dead.jsonl",
          "/data/a:b/dead?.jsonl",
          "/data/file:/x.jsonl",
          "~/dead#1.jsonl"
        }) {
      assertThat(AgentConfig.shownPath(p)).as(p).isEqualTo(p);
    }
    assertThat(AgentConfig.shownPath(null)).isEqualTo("none");
    assertThat(AgentConfig.shownPath("/tmp/dead\nforged.jsonl"))
        .isEqualTo("/tmp/dead forged.jsonl");
  }

  @Test
  void aUrlIsShownWithoutItsPasswordAlsoAsAPathWritesIt() {
    String[][] cases = {
      {"https://u:" + CANARY + "@host/x", "https://***@host/x"},
      {"https://u:" + CANARY, "https://***"},
      {"https://u:" + CANARY + "/x", "https://***"},
      {"https://host/x?token=" + CANARY, "https://host/x?***"},
      {"/var/log/https://u:" + CANARY + "@host/x", "/var/log/https://***@host/x"},
      // Path.of writes "//" as "/": a writer's line and an exception's message name it so.
      {"https:/u:" + CANARY + "@host/x", "https://***@host/x"},
      {"https:/u:" + CANARY, "https://***"},
    };
    for (String[] c : cases) {
      assertThat(AgentConfig.shownPath(c[0])).as(c[0]).isEqualTo(c[1]).doesNotContain(CANARY);
    }
    assertThat(AgentConfig.shownPath(Path.of("https://u:" + CANARY + "@host/x").toString()))
        .doesNotContain(CANARY);
  }

  @Test
  void theStartUpLineShowsAUrlFromAVariableWithoutItsPasswordAndAPathAsWritten()
      throws ConfigException {
    String yaml = "version: 1\nagent:\n  deadLetter:\n    path: ${DLQ_URL}\n";
    for (String url : new String[] {"https://u:" + CANARY + "@host/x", "https://u:" + CANARY}) {
      AgentConfig c = ConfigLoader.parse(yaml, "a.yml", Map.of("DLQ_URL", url));
      assertThat(c.deadLetterPath()).as("the key accepts it as before").isEqualTo(url);
      assertThat(c.toString()).contains(", deadLetter=https://***").doesNotContain(CANARY);
    }
    AgentConfig plain =
        ConfigLoader.parse(yaml, "a.yml", Map.of("DLQ_URL", "/var/log/dead letters.jsonl"));
    assertThat(plain.toString()).contains(", deadLetter=/var/log/dead letters.jsonl, ");
  }
}
