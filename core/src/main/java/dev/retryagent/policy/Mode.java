package dev.retryagent.policy;

import java.util.Locale;

/** {@code agent.mode}: what the agent does with its decisions. */
public enum Mode implements ConfigNamed {
  /** Retry, delay and block as the policies say. */
  ENFORCE,
  /**
   * Make and report every decision (would retry, would open, would reject) but never retry, delay
   * or block: the application sees exactly what it would see without the agent.
   */
  OBSERVE,
  /** Pass every call through untouched. */
  OFF;

  @Override
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The mode with this YAML name (any case), or null. */
  public static Mode fromConfigName(String name) {
    for (Mode m : values()) {
      if (m.name().equalsIgnoreCase(name.trim())) {
        return m;
      }
    }
    return null;
  }
}
