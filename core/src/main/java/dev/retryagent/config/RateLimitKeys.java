package dev.retryagent.config;

import static dev.retryagent.config.ValueType.BOOLEAN;
import static dev.retryagent.config.ValueType.duration;
import static dev.retryagent.config.ValueType.enumOf;
import static dev.retryagent.config.ValueType.integer;

import dev.retryagent.config.ConfigSchema.KeyRef;
import dev.retryagent.policy.RateLimitPolicy;
import java.time.Duration;

/**
 * The {@code rateLimit} section of a policy: a client-side token bucket per target host, or per
 * route across the fleet ({@code scope: fleet}, which needs the {@code fleet} section). Each key is
 * written once, with where its value goes ({@link KeyVisitor}); bounds are {@link
 * RateLimitPolicy}'s, defaults and meanings are in docs/configuration.md.
 */
final class RateLimitKeys {
  private RateLimitKeys() {}

  /** Read by the assembler: {@code scope: fleet} needs {@code fleet.redis.url}. */
  static final KeyRef SCOPE = new KeyRef();

  static void visit(KeyVisitor parent, ConfigDraft d) {
    KeyVisitor k =
        parent.section(
            "rateLimit", "Client-side token bucket per target host, or per route fleet-wide.");
    if (k.key("enabled", BOOLEAN)) {
      d.rateLimit.enabled(k.bool());
    }
    if (k.key("perSecond", ValueType.positiveNumber(RateLimitPolicy.MAX_PER_SECOND))) {
      d.rateLimit.perSecond(k.number());
    }
    if (k.key("burst", integer(1, RateLimitPolicy.MAX_BURST))) {
      d.rateLimit.burst(k.intValue());
    }
    if (k.key("maxWait", duration(Duration.ZERO, false, RateLimitPolicy.MAX_WAIT_LIMIT))) {
      d.rateLimit.maxWait(k.duration());
    }
    if (k.key("pauseOn429", BOOLEAN)) {
      d.rateLimit.pauseOn429(k.bool());
    }
    if (k.key("scope", enumOf(RateLimitPolicy.Scope.class), SCOPE)) {
      d.rateLimit.scope((RateLimitPolicy.Scope) k.value());
    }
  }
}
