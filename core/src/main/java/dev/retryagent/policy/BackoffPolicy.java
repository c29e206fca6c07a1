package dev.retryagent.policy;

import java.time.Duration;
import java.util.Objects;

/**
 * Exponential backoff: the delay before retry {@code n} (1-based) is {@code min(max, initial x
 * multiplier^(n-1))}, then randomised by {@link #jitter()}. Immutable and thread-safe.
 */
public final class BackoffPolicy {
  public static final Duration DEFAULT_INITIAL = Duration.ofMillis(100);
  public static final double DEFAULT_MULTIPLIER = 2.0;
  public static final Duration DEFAULT_MAX = Duration.ofSeconds(5);
  public static final Jitter DEFAULT_JITTER = Jitter.FULL;
  public static final double DEFAULT_JITTER_FACTOR = 0.2;

  /** Smallest multiplier: 1.0 keeps the delay constant; a delay never shrinks. */
  public static final double MIN_MULTIPLIER = 1.0;

  /** Largest multiplier accepted; anything larger reaches {@code max} after one retry anyway. */
  public static final double MAX_MULTIPLIER = 100.0;

  /** Longest {@code initial} and {@code max}: a wait of more than an hour is not a backoff. */
  public static final Duration MAX_DELAY = Duration.ofHours(1);

  /** Largest jitterFactor: proportional jitter adds at most the whole delay again. */
  public static final double MAX_JITTER_FACTOR = 1.0;

  private static final BackoffPolicy DEFAULTS = builder().build();

  private final Duration initial;
  private final double multiplier;
  private final Duration max;
  private final Jitter jitter;
  private final double jitterFactor;

  private BackoffPolicy(Builder b) {
    this.initial = b.initial;
    this.multiplier = b.multiplier;
    this.max = b.max;
    this.jitter = b.jitter;
    this.jitterFactor = b.jitterFactor;
  }

  public static BackoffPolicy defaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    return new Builder()
        .initial(initial)
        .multiplier(multiplier)
        .max(max)
        .jitter(jitter)
        .jitterFactor(jitterFactor);
  }

  /** Delay before the first retry, before jitter. Zero or more (zero: each retry at once). */
  public Duration initial() {
    return initial;
  }

  /** Growth per retry, at least {@value #MIN_MULTIPLIER} (1.0 = constant delay). */
  public double multiplier() {
    return multiplier;
  }

  /** Cap on the computed delay; at least {@link #initial()}. */
  public Duration max() {
    return max;
  }

  public Jitter jitter() {
    return jitter;
  }

  /** Used by {@link Jitter#PROPORTIONAL}; between 0 and {@value #MAX_JITTER_FACTOR}. */
  public double jitterFactor() {
    return jitterFactor;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof BackoffPolicy)) {
      return false;
    }
    BackoffPolicy that = (BackoffPolicy) o;
    return initial.equals(that.initial)
        && multiplier == that.multiplier
        && max.equals(that.max)
        && jitter == that.jitter
        && jitterFactor == that.jitterFactor;
  }

  @Override
  public int hashCode() {
    return Objects.hash(initial, multiplier, max, jitter, jitterFactor);
  }

  @Override
  public String toString() {
    return "backoff{initial="
        + initial
        + ", multiplier="
        + multiplier
        + ", max="
        + max
        + ", jitter="
        + jitter.configName()
        + ", jitterFactor="
        + jitterFactor
        + "}";
  }

  /**
   * Validating builder; {@link #build()} checks that {@code initial <= max}. Starts at the
   * defaults. A setter throws {@link IllegalArgumentException}, naming the key and the value, for a
   * value outside its documented range or a null; not thread-safe.
   */
  public static final class Builder {
    private Duration initial = DEFAULT_INITIAL;
    private double multiplier = DEFAULT_MULTIPLIER;
    private Duration max = DEFAULT_MAX;
    private Jitter jitter = DEFAULT_JITTER;
    private double jitterFactor = DEFAULT_JITTER_FACTOR;

    private Builder() {}

    public Builder initial(Duration initial) {
      this.initial =
          Checks.atMost(
              "backoff.initial", Checks.nonNegative("backoff.initial", initial), MAX_DELAY);
      return this;
    }

    public Builder multiplier(double multiplier) {
      this.multiplier =
          Checks.inRange("backoff.multiplier", multiplier, MIN_MULTIPLIER, MAX_MULTIPLIER);
      return this;
    }

    public Builder max(Duration max) {
      this.max = Checks.atMost("backoff.max", Checks.nonNegative("backoff.max", max), MAX_DELAY);
      return this;
    }

    public Builder jitter(Jitter jitter) {
      this.jitter = Checks.notNull("backoff.jitter", jitter);
      return this;
    }

    public Builder jitterFactor(double jitterFactor) {
      this.jitterFactor =
          Checks.inRange("backoff.jitterFactor", jitterFactor, 0.0, MAX_JITTER_FACTOR);
      return this;
    }

    public BackoffPolicy build() {
      if (initial.compareTo(max) > 0) {
        throw new IllegalArgumentException(
            "backoff.initial (" + initial + ") must not exceed backoff.max (" + max + ")");
      }
      return new BackoffPolicy(this);
    }
  }
}
