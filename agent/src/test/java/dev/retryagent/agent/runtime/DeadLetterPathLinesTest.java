package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.cli.ConfigSummary;
import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigException;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.PathMask;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A URL written as {@code agent.deadLetter.path} by mistake ({@code ${DLQ_URL}}, meant for another
 * key) in every agent line that names the path: the {@code validate} summary, the reload line, the
 * refused path's line. Its password is never shown; a file path is shown as written.
 */
class DeadLetterPathLinesTest {
  private static final String CANARY = "CANARY7z";
  private static final String[] URLS = {
    "https://u:" + CANARY + "@host/x", "https://u:" + CANARY, "https://u:" + CANARY + "/x"
  };

  private static AgentConfig withPath(String path) throws ConfigException {
    return ConfigLoader.parse(
        "version: 1\nagent:\n  deadLetter:\n    path: ${DLQ_URL}\n",
        "a.yml",
        Map.of("DLQ_URL", path));
  }

  @Test
  void theValidateSummaryAndTheReloadLineShowAUrlWithoutItsPassword() throws ConfigException {
    AgentConfig none = AgentConfig.defaults();
    for (String url : URLS) {
      AgentConfig c = withPath(url);
      assertThat(ConfigSummary.of(c)).contains("; deadLetter=https://***").doesNotContain(CANARY);
      assertThat(ConfigChanges.describe(none, c))
          .contains("agent.deadLetter.path none -> https://***")
          .doesNotContain(CANARY);
      assertThat(ConfigChanges.describe(c, none))
          .contains("agent.deadLetter.path https://***")
          .doesNotContain(CANARY);
    }
  }

  @Test
  void theLinesShowAUserInfoWithoutASchemeAndADigitsPasswordWithoutThem() throws ConfigException {
    String[][] cases = {
      {"u:" + CANARY + "@host:/dlq", "***@host:/dlq"},
      {"u:" + CANARY + "@host/dlq", "***@host/dlq"},
      {"https://u:73519", "https://***"},
    };
    List<String> errors = new ArrayList<>();
    DeadLetters deadLetters = new DeadLetters(errors::add, null);
    for (String[] c : cases) {
      AgentConfig config = withPath(c[0]);
      assertThat(ConfigSummary.of(config)).contains("; deadLetter=" + c[1]);
      assertThat(ConfigChanges.describe(AgentConfig.defaults(), config))
          .contains("agent.deadLetter.path none -> " + c[1]);
      assertThat(deadLetters.use(c[0] + "\u0000", 0, PathMask.NONE)).isNull();
      // Its NUL (shown as another character) ends the path: "host:/dlq?" is no host:port.
      String upToRedaction = c[1].substring(0, c[1].indexOf("***") + 3);
      assertThat(errors.get(errors.size() - 1)).contains(": \"" + upToRedaction);
      assertThat(String.join("\n", errors) + ConfigSummary.of(config))
          .doesNotContain(CANARY)
          .doesNotContain("73519");
    }
    deadLetters.closeAtExit(Duration.ofSeconds(5));
  }

  @Test
  void theValidateSummaryAndTheReloadLineShowAFilePathAsWritten() throws ConfigException {
    AgentConfig c = withPath("/var/log/dead letters@a.jsonl");
    assertThat(ConfigSummary.of(c)).contains("; deadLetter=/var/log/dead letters@a.jsonl");
    assertThat(ConfigChanges.describe(AgentConfig.defaults(), c))
        .contains("agent.deadLetter.path none -> /var/log/dead letters@a.jsonl");
  }

  @Test
  void aPathThisSystemRefusesIsNamedWithoutTheUrlsPassword() {
    List<String> errors = new ArrayList<>();
    DeadLetters deadLetters = new DeadLetters(errors::add, null);
    for (String url : URLS) {
      // A NUL is what Linux refuses (Windows refuses the ':' of any URL).
      assertThat(deadLetters.use(url + "\u0000", 0, PathMask.NONE)).isNull();
    }
    assertThat(errors)
        .hasSize(URLS.length)
        .allSatisfy(
            e ->
                assertThat(e)
                    .startsWith(
                        "retry-agent: agent.deadLetter.path is not a valid path on this system:"
                            + " \"https://***")
                    .doesNotContain(CANARY));
    deadLetters.closeAtExit(Duration.ofSeconds(5));
  }
}
