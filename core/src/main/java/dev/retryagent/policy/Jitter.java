package dev.retryagent.policy;

import java.util.Locale;

/**
 * How a computed backoff delay {@code d} is randomised. The formulas are the contract's
 * (docs/configuration.md); the engine implements them as pure functions of {@code d}, the previous
 * delay and one random value.
 */
public enum Jitter implements ConfigNamed {
  /** Exactly {@code d}. */
  NONE,
  /** {@code U(0, d)}: spreads a herd the most (AWS "full jitter"). */
  FULL,
  /** {@code d/2 + U(0, d/2)}: never less than half the delay. */
  EQUAL,
  /** {@code min(max, U(initial, 3 x previous))}: each delay depends on the previous one. */
  DECORRELATED,
  /** {@code d + U(0, jitterFactor x d)}: never shorter than {@code d}. */
  PROPORTIONAL;

  /** The name used in YAML. */
  @Override
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
