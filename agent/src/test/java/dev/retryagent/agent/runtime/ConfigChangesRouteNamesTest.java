package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The reload line names each route that changed as one name: quoted when it is not of the earlier
 * rule (a name "b, c changed" would read as two changes), as it was otherwise.
 */
class ConfigChangesRouteNamesTest {
  private static AgentConfig config(String... names) throws Exception {
    StringBuilder yaml = new StringBuilder("routes:\n");
    for (int i = 0; i < names.length; i++) {
      yaml.append("  - name: '").append(names[i]).append("'\n");
      yaml.append("    match: {hosts: [h").append(i).append(".example]}\n");
    }
    return ConfigLoader.parse(yaml.toString(), "t.yml", Map.of());
  }

  @Test
  void aRouteAddedOrRemovedIsNamedAsOneName() throws Exception {
    assertThat(ConfigChanges.describe(config("llm"), config("llm", "b, c changed", "x:y")))
        .isEqualTo("routes: \"b, c changed\" added, \"x:y\" added");
    assertThat(ConfigChanges.describe(config("llm", "Payments API"), config("auth")))
        .isEqualTo("routes: auth added, llm removed, \"Payments API\" removed");
  }
}
