package dev.retryagent.config;

import dev.retryagent.internal.Units;
import java.time.Duration;
import java.util.Objects;

/**
 * The {@code fleet} section: the Redis that the JVMs of one service share for the routes whose
 * {@code rateLimit.scope} is {@code fleet}. {@link AgentConfig#fleet()} is null when the file has
 * no {@code fleet.redis.url}: then no fleet code is loaded at all. Immutable; {@link #toString()}
 * never holds the URL's user-info.
 */
public final class FleetConfig {
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofMillis(200);
  public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofMillis(50);
  public static final String DEFAULT_KEY_PREFIX = "retry-agent";
  public static final double DEFAULT_FALLBACK_SHARE = 0.25;

  /** Longest {@code connectTimeout}: a connect that takes longer helps no call. */
  public static final Duration MAX_CONNECT_TIMEOUT = Duration.ofMinutes(1);

  /** Longest {@code commandTimeout}: every fleet-limited call may wait this long for Redis. */
  public static final Duration MAX_COMMAND_TIMEOUT = Duration.ofSeconds(10);

  private final RedisUrl redis;
  private final Duration connectTimeout;
  private final Duration commandTimeout;
  private final String keyPrefix;
  private final double fallbackShare;

  FleetConfig(
      RedisUrl redis,
      Duration connectTimeout,
      Duration commandTimeout,
      String keyPrefix,
      double fallbackShare) {
    this.redis = Objects.requireNonNull(redis, "redis");
    this.connectTimeout = Objects.requireNonNull(connectTimeout, "connectTimeout");
    this.commandTimeout = Objects.requireNonNull(commandTimeout, "commandTimeout");
    this.keyPrefix = Objects.requireNonNull(keyPrefix, "keyPrefix");
    this.fallbackShare = fallbackShare;
  }

  /** {@code fleet.redis.url}, parsed; its {@code toString()} leaves the user-info out. */
  public RedisUrl redis() {
    return redis;
  }

  public Duration connectTimeout() {
    return connectTimeout;
  }

  public Duration commandTimeout() {
    return commandTimeout;
  }

  /** Redis keys are {@code <keyPrefix>:<route>:...}. */
  public String keyPrefix() {
    return keyPrefix;
  }

  /** In (0, 1]: the share of a fleet limit one JVM uses while Redis is unreachable. */
  public double fallbackShare() {
    return fallbackShare;
  }

  /** Equal when every setting is equal, the credentials included. */
  @Override
  public boolean equals(Object o) {
    if (!(o instanceof FleetConfig)) {
      return false;
    }
    FleetConfig t = (FleetConfig) o;
    return redis.equals(t.redis)
        && connectTimeout.equals(t.connectTimeout)
        && commandTimeout.equals(t.commandTimeout)
        && keyPrefix.equals(t.keyPrefix)
        && fallbackShare == t.fallbackShare;
  }

  @Override
  public int hashCode() {
    return Objects.hash(redis, connectTimeout, commandTimeout, keyPrefix, fallbackShare);
  }

  /** For the start-up log: the URL without user-info, and whether it carries a password. */
  @Override
  public String toString() {
    return "fleet{redis="
        + redis
        + (redis.password() != null ? " (with password)" : "")
        + ", connectTimeout="
        + Units.formatDuration(connectTimeout)
        + ", commandTimeout="
        + Units.formatDuration(commandTimeout)
        + ", keyPrefix="
        + keyPrefix
        + ", fallbackShare="
        + Units.formatRatio(fallbackShare)
        + "}";
  }
}
