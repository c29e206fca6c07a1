package dev.retryagent.config;

import static dev.retryagent.config.ValueType.duration;
import static dev.retryagent.config.ValueType.enumOf;
import static dev.retryagent.config.ValueType.ratio;

import dev.retryagent.config.ConfigSchema.KeyRef;
import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.Jitter;
import java.time.Duration;

/**
 * The {@code retry.backoff} section: the delay between attempts. Each key is written once, with
 * where its value goes ({@link KeyVisitor}); bounds are {@link BackoffPolicy}'s, defaults and
 * meanings are in docs/configuration.md.
 */
final class BackoffKeys {
  private BackoffKeys() {}

  /** Read by the cross-key checks ({@link CrossChecks}): initial may not exceed max. */
  static final KeyRef INITIAL = new KeyRef();

  static final KeyRef MAX = new KeyRef();

  static void visit(KeyVisitor parent, ConfigDraft d) {
    KeyVisitor k =
        parent.section(
            "backoff",
            "Delay between attempts: min(max, initial x multiplier^(n-1)), then jitter.");
    if (k.key("initial", duration(Duration.ZERO, false, BackoffPolicy.MAX_DELAY), INITIAL)) {
      d.backoff.initial(k.duration());
    }
    if (k.key(
        "multiplier",
        ValueType.number(BackoffPolicy.MIN_MULTIPLIER, BackoffPolicy.MAX_MULTIPLIER))) {
      d.backoff.multiplier(k.number());
    }
    if (k.key("max", duration(Duration.ZERO, false, BackoffPolicy.MAX_DELAY), MAX)) {
      d.backoff.max(k.duration());
    }
    if (k.key("jitter", enumOf(Jitter.class))) {
      d.backoff.jitter((Jitter) k.value());
    }
    if (k.key("jitterFactor", ratio(0, BackoffPolicy.MAX_JITTER_FACTOR, false))) {
      d.backoff.jitterFactor(k.number());
    }
  }
}
