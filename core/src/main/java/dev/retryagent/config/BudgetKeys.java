package dev.retryagent.config;

import static dev.retryagent.config.ValueType.BOOLEAN;
import static dev.retryagent.config.ValueType.duration;
import static dev.retryagent.config.ValueType.integer;
import static dev.retryagent.config.ValueType.ratio;

import dev.retryagent.policy.BudgetPolicy;

/**
 * The {@code budget} section of a policy: the retry budget per target host. Each key is written
 * once, with where its value goes ({@link KeyVisitor}); bounds are {@link BudgetPolicy}'s, defaults
 * and meanings are in docs/configuration.md.
 */
final class BudgetKeys {
  private BudgetKeys() {}

  static void visit(KeyVisitor parent, ConfigDraft d) {
    KeyVisitor k = parent.section("budget", "Retry budget per target host.");
    if (k.key("enabled", BOOLEAN)) {
      d.budget.enabled(k.bool());
    }
    if (k.key("ratio", ratio(0, BudgetPolicy.MAX_RATIO, false))) {
      d.budget.ratio(k.number());
    }
    if (k.key("minPerSecond", integer(0, BudgetPolicy.MAX_MIN_PER_SECOND))) {
      d.budget.minPerSecond(k.intValue());
    }
    if (k.key("window", duration(BudgetPolicy.MIN_WINDOW, false, BudgetPolicy.MAX_WINDOW))) {
      d.budget.window(k.duration());
    }
  }
}
