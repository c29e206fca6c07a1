package dev.retryagent.policy;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * Client-side token bucket per target host, or one limit per route shared by every JVM of a fleet
 * ({@link Scope#FLEET}). Off by default. A caller that finds no token waits up to {@link
 * #maxWait()} and then fails with an {@code IOException}; with {@link #pauseOn429()}, a 429
 * carrying {@code Retry-After} pauses every caller of that host (of that route, fleet-wide, with
 * {@code FLEET}) until then (bounded by {@code retryAfter.max}). Immutable and thread-safe.
 */
public final class RateLimitPolicy {
  /** Where one limit applies. */
  public enum Scope implements ConfigNamed {
    /** Per JVM and target host. */
    HOST,
    /** One limit for the route across every JVM sharing the {@code fleet} section's Redis. */
    FLEET;

    @Override
    public String configName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public static final Scope DEFAULT_SCOPE = Scope.HOST;
  public static final double DEFAULT_PER_SECOND = 50;
  public static final int DEFAULT_BURST = 50;
  public static final Duration DEFAULT_MAX_WAIT = Duration.ZERO;

  /** Largest perSecond, in permits per second: beyond it the bucket limits nothing. */
  public static final double MAX_PER_SECOND = 1e9;

  /** Largest burst, in calls. */
  public static final int MAX_BURST = 1_000_000_000;

  /** Longest maxWait: a day. */
  public static final Duration MAX_WAIT_LIMIT = Duration.ofDays(1);

  private static final RateLimitPolicy DEFAULTS = builder().build();

  private final boolean enabled;
  private final double perSecond;
  private final int burst;
  private final Duration maxWait;
  private final boolean pauseOn429;
  private final Scope scope;

  private RateLimitPolicy(Builder b) {
    this.enabled = b.enabled;
    this.perSecond = b.perSecond;
    this.burst = b.burst;
    this.maxWait = b.maxWait;
    this.pauseOn429 = b.pauseOn429;
    this.scope = b.scope;
  }

  public static RateLimitPolicy defaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    return new Builder()
        .enabled(enabled)
        .perSecond(perSecond)
        .burst(burst)
        .maxWait(maxWait)
        .pauseOn429(pauseOn429)
        .scope(scope);
  }

  public boolean enabled() {
    return enabled;
  }

  /** Tokens added per second. Positive. */
  public double perSecond() {
    return perSecond;
  }

  /** Bucket size: how many calls may go at once after a quiet period. At least 1. */
  public int burst() {
    return burst;
  }

  /** How long a caller waits for a token before failing; zero fails at once. */
  public Duration maxWait() {
    return maxWait;
  }

  public boolean pauseOn429() {
    return pauseOn429;
  }

  /** {@link Scope#HOST} (per JVM and host) or {@link Scope#FLEET} (per route, fleet-wide). */
  public Scope scope() {
    return scope;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof RateLimitPolicy)) {
      return false;
    }
    RateLimitPolicy t = (RateLimitPolicy) o;
    return enabled == t.enabled
        && perSecond == t.perSecond
        && burst == t.burst
        && maxWait.equals(t.maxWait)
        && pauseOn429 == t.pauseOn429
        && scope == t.scope;
  }

  @Override
  public int hashCode() {
    return Objects.hash(enabled, perSecond, burst, maxWait, pauseOn429, scope);
  }

  @Override
  public String toString() {
    return "rateLimit{enabled="
        + enabled
        + ", perSecond="
        + perSecond
        + ", burst="
        + burst
        + ", maxWait="
        + maxWait
        + ", pauseOn429="
        + pauseOn429
        + (scope == Scope.HOST ? "" : ", scope=" + scope.configName())
        + "}";
  }

  /**
   * Validating builder. Starts at the defaults. A setter throws {@link IllegalArgumentException},
   * naming the key and the value, for a value outside its documented range or a null; not
   * thread-safe.
   */
  public static final class Builder {
    private boolean enabled = false;
    private double perSecond = DEFAULT_PER_SECOND;
    private int burst = DEFAULT_BURST;
    private Duration maxWait = DEFAULT_MAX_WAIT;
    private boolean pauseOn429 = true;
    private Scope scope = DEFAULT_SCOPE;

    private Builder() {}

    public Builder enabled(boolean enabled) {
      this.enabled = enabled;
      return this;
    }

    public Builder perSecond(double perSecond) {
      if (!(perSecond > 0) || perSecond > MAX_PER_SECOND) {
        throw new IllegalArgumentException(
            "rateLimit.perSecond must be positive (at most "
                + MAX_PER_SECOND
                + "), was "
                + perSecond);
      }
      this.perSecond = perSecond;
      return this;
    }

    public Builder burst(int burst) {
      this.burst = Checks.inRange("rateLimit.burst", burst, 1, MAX_BURST);
      return this;
    }

    public Builder maxWait(Duration maxWait) {
      this.maxWait =
          Checks.atMost(
              "rateLimit.maxWait",
              Checks.nonNegative("rateLimit.maxWait", maxWait),
              MAX_WAIT_LIMIT);
      return this;
    }

    public Builder pauseOn429(boolean pauseOn429) {
      this.pauseOn429 = pauseOn429;
      return this;
    }

    public Builder scope(Scope scope) {
      this.scope = Checks.notNull("rateLimit.scope", scope);
      return this;
    }

    public RateLimitPolicy build() {
      return new RateLimitPolicy(this);
    }
  }
}
