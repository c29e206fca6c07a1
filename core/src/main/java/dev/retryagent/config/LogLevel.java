package dev.retryagent.config;

import dev.retryagent.policy.ConfigNamed;
import java.util.Locale;

/**
 * {@code agent.log.level}: the most detailed kind of agent log line that is written. Each level
 * includes the ones above it.
 */
public enum LogLevel implements ConfigNamed {
  /** Only the agent's own failures (those are written at every level). */
  ERROR,
  /** Give-ups, rate-limit rejections, breakers opening. */
  WARN,
  /** Also retries, calls that succeeded after a retry, breakers half-opening and closing. */
  INFO,
  /** Also every attempt, every call's end and rate-limit waits. */
  DEBUG;

  /** The name used in YAML. */
  @Override
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** True when a line of {@code level} is written at this level. */
  public boolean allows(LogLevel level) {
    return level.ordinal() <= ordinal();
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
