package dev.retryagent.policy;

import java.time.Duration;

/** One validation helper per kind of error, so every builder words its errors the same way. */
final class Checks {
  private Checks() {}

  static Duration positive(String field, Duration value) {
    notNull(field, value);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(field + " must be positive, was " + value);
    }
    return value;
  }

  static Duration nonNegative(String field, Duration value) {
    notNull(field, value);
    if (value.isNegative()) {
      throw new IllegalArgumentException(field + " must not be negative, was " + value);
    }
    return value;
  }

  static Duration atMost(String field, Duration value, Duration max) {
    if (value.compareTo(max) > 0) {
      throw new IllegalArgumentException(field + " must be at most " + max + ", was " + value);
    }
    return value;
  }

  static int inRange(String field, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(
          field + " must be between " + min + " and " + max + ", was " + value);
    }
    return value;
  }

  static double inRange(String field, double value, double min, double max) {
    if (!(value >= min && value <= max)) {
      throw new IllegalArgumentException(
          field + " must be between " + min + " and " + max + ", was " + value);
    }
    return value;
  }

  static <T> T notNull(String field, T value) {
    if (value == null) {
      throw new IllegalArgumentException(field + " must be set");
    }
    return value;
  }
}
