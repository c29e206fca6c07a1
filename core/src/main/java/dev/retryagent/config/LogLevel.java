package dev.retryagent.config;

import java.util.Locale;

/** {@code agent.log.level}: the most detailed agent log lines that are written. */
public enum LogLevel {
  ERROR,
  WARN,
  INFO,
  DEBUG;

  /** The name used in YAML. */
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** True when a line of {@code level} is written at this level. */
  public boolean allows(LogLevel level) {
    return level.ordinal() <= ordinal();
  }
}
