package dev.retryagent.config;

import static dev.retryagent.config.ValueType.duration;
import static dev.retryagent.config.ValueType.ratio;

import java.time.Duration;

/**
 * The {@code fleet} section: the Redis shared by the JVMs of one service for the routes whose
 * {@code rateLimit.scope} is {@code fleet}. Without {@code fleet.redis.url} there is no fleet (the
 * other keys then have no effect). Each key is written once, with where its value goes ({@link
 * KeyVisitor}); bounds are {@link FleetConfig}'s, defaults and meanings are in
 * docs/configuration.md.
 */
final class FleetKeys {
  private FleetKeys() {}

  static final ValueType KEY_PREFIX =
      ValueType.string(
          "[A-Za-z0-9][A-Za-z0-9._:-]{0,99}",
          "letters, digits, '.', '_', ':' and '-', starting with a letter or digit (at most 100),"
              + " such as my-service");

  static void visit(KeyVisitor parent, ConfigDraft d) {
    KeyVisitor k =
        parent.section("fleet", "One Redis shared by the JVMs of a service (rateLimit.scope).");
    KeyVisitor redis = k.section("redis", "Where the fleet's Redis is, and how long to wait.");
    if (redis.noneOr("url", RedisUrlType.INSTANCE)) {
      d.fleetRedis = (RedisUrl) redis.value();
    }
    if (redis.key(
        "connectTimeout", duration(Duration.ZERO, true, FleetConfig.MAX_CONNECT_TIMEOUT))) {
      d.fleetConnectTimeout = redis.duration();
    }
    if (redis.key(
        "commandTimeout", duration(Duration.ZERO, true, FleetConfig.MAX_COMMAND_TIMEOUT))) {
      d.fleetCommandTimeout = redis.duration();
    }
    if (k.key("keyPrefix", KEY_PREFIX)) {
      d.fleetKeyPrefix = k.text();
    }
    if (k.key("fallbackShare", ratio(0, 1, true))) {
      d.fleetFallbackShare = k.number();
    }
  }

  /** The section as a value, or null when it names no Redis. */
  static FleetConfig build(ConfigDraft d) {
    if (d.fleetRedis == null) {
      return null;
    }
    return new FleetConfig(
        d.fleetRedis,
        d.fleetConnectTimeout,
        d.fleetCommandTimeout,
        d.fleetKeyPrefix,
        d.fleetFallbackShare);
  }
}
