package dev.retryagent.policy;

import dev.retryagent.internal.Units;
import java.time.Duration;
import java.util.Objects;

/**
 * Retry budget per target host: over a sliding {@link #window()}, retries may add at most {@link
 * #ratio()} of the calls in it, plus {@link #minPerSecond()} retries per second that are always
 * allowed. The same model as Finagle, tower and Linkerd: it stops retry storms against a host that
 * fails for everyone. Immutable and thread-safe; on by default.
 */
public final class BudgetPolicy {
  public static final double DEFAULT_RATIO = 0.2;
  public static final int DEFAULT_MIN_PER_SECOND = 10;
  public static final Duration DEFAULT_WINDOW = Duration.ofSeconds(10);

  /** Largest ratio accepted: 10 retries per call would make a budget meaningless. */
  public static final double MAX_RATIO = 10.0;

  /** Largest minPerSecond, in retries per second: a floor above this is no budget at all. */
  public static final int MAX_MIN_PER_SECOND = 1_000_000;

  /** Shortest window: the budget counts calls in millisecond buckets. */
  public static final Duration MIN_WINDOW = Duration.ofMillis(1);

  /** Longest window: an hour-old burst says nothing about the host now. */
  public static final Duration MAX_WINDOW = Duration.ofHours(1);

  private static final BudgetPolicy DEFAULTS = builder().build();

  private final boolean enabled;
  private final double ratio;
  private final int minPerSecond;
  private final Duration window;

  private BudgetPolicy(Builder b) {
    this.enabled = b.enabled;
    this.ratio = b.ratio;
    this.minPerSecond = b.minPerSecond;
    this.window = b.window;
  }

  public static BudgetPolicy defaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    return new Builder().enabled(enabled).ratio(ratio).minPerSecond(minPerSecond).window(window);
  }

  public boolean enabled() {
    return enabled;
  }

  /** Retries may add at most this share of the calls in the window. */
  public double ratio() {
    return ratio;
  }

  /** Retries always allowed at this rate, whatever the ratio. */
  public int minPerSecond() {
    return minPerSecond;
  }

  public Duration window() {
    return window;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof BudgetPolicy)) {
      return false;
    }
    BudgetPolicy t = (BudgetPolicy) o;
    return enabled == t.enabled
        && ratio == t.ratio
        && minPerSecond == t.minPerSecond
        && window.equals(t.window);
  }

  @Override
  public int hashCode() {
    return Objects.hash(enabled, ratio, minPerSecond, window);
  }

  @Override
  public String toString() {
    return "budget{enabled="
        + enabled
        + ", ratio="
        + ratio
        + ", minPerSecond="
        + minPerSecond
        + ", window="
        + window
        + "}";
  }

  /**
   * Validating builder. Starts at the defaults. A setter throws {@link IllegalArgumentException},
   * naming the key and the value, for a value outside its documented range or a null; not
   * thread-safe.
   */
  public static final class Builder {
    private boolean enabled = true;
    private double ratio = DEFAULT_RATIO;
    private int minPerSecond = DEFAULT_MIN_PER_SECOND;
    private Duration window = DEFAULT_WINDOW;

    private Builder() {}

    public Builder enabled(boolean enabled) {
      this.enabled = enabled;
      return this;
    }

    public Builder ratio(double ratio) {
      this.ratio = Checks.inRange("budget.ratio", ratio, 0.0, MAX_RATIO);
      return this;
    }

    public Builder minPerSecond(int minPerSecond) {
      this.minPerSecond =
          Checks.inRange("budget.minPerSecond", minPerSecond, 0, MAX_MIN_PER_SECOND);
      return this;
    }

    public Builder window(Duration window) {
      Checks.positive("budget.window", window);
      if (window.compareTo(MIN_WINDOW) < 0) {
        throw new IllegalArgumentException(
            "budget.window must be at least "
                + Units.formatDuration(MIN_WINDOW)
                + ", was "
                + window);
      }
      this.window = Checks.atMost("budget.window", window, MAX_WINDOW);
      return this;
    }

    public BudgetPolicy build() {
      return new BudgetPolicy(this);
    }
  }
}
