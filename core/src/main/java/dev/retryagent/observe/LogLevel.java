package dev.retryagent.observe;

import java.util.Locale;

/**
 * {@code agent.log.level}: the most detailed kind of line that is printed. Each level includes the
 * ones above it.
 */
public enum LogLevel {
  /** Only the agent's own failures (those go to the error sink at every level). */
  ERROR,
  /** Give-ups, rate-limit rejections, breakers opening. */
  WARN,
  /** Also retries, calls that succeeded after a retry, breakers half-opening and closing. */
  INFO,
  /** Also every attempt, every call's end and rate-limit waits. */
  DEBUG;

  /** True when a line of {@code lineLevel} is printed at this level. */
  public boolean enables(LogLevel lineLevel) {
    return lineLevel.ordinal() <= ordinal();
  }

  /** The YAML name: {@code error}, {@code warn}, {@code info}, {@code debug}. */
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The level with this YAML name (any case), or null. */
  public static LogLevel fromConfigName(String name) {
    for (LogLevel l : values()) {
      if (l.name().equalsIgnoreCase(name.trim())) {
        return l;
      }
    }
    return null;
  }
}
