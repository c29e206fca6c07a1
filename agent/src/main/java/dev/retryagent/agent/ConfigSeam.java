package dev.retryagent.agent;

import dev.retryagent.policy.Mode;

/**
 * The seam where configuration loading plugs in ({@code ConfigSources}/{@code ConfigLoader} in
 * core, being written). Until then it honours the {@code mode} key of the agent argument and says
 * plainly in the start-up line that a named file was not read.
 */
final class ConfigSeam {
  private ConfigSeam() {}

  /**
   * Reads the configuration named by the agent argument (shared/CONFIG.md, "Starting the agent").
   *
   * @param agentArgs the text after {@code =} in {@code -javaagent:retry-agent.jar=...}, or null
   * @throws IllegalArgumentException for an argument it cannot accept
   */
  static AgentSettings loadConfig(String agentArgs) {
    Mode mode = Mode.ENFORCE;
    String file = null;
    if (agentArgs != null && !agentArgs.isBlank()) {
      if (!agentArgs.contains("=")) {
        file = agentArgs.trim();
      } else {
        for (String pair : agentArgs.split(",")) {
          int eq = pair.indexOf('=');
          String key = eq < 0 ? pair.trim() : pair.substring(0, eq).trim();
          String value = eq < 0 ? "" : pair.substring(eq + 1).trim();
          if (key.equals("mode")) {
            mode = Mode.fromConfigName(value);
            if (mode == null) {
              throw new IllegalArgumentException(
                  "agent argument mode=" + value + ": expected enforce, observe or off");
            }
          } else if (key.equals("config")) {
            file = value;
          }
        }
      }
    }
    String source =
        file == null ? "built-in defaults" : file + " (not read: file loading is not wired yet)";
    return new AgentSettings(mode, true, source);
  }
}
