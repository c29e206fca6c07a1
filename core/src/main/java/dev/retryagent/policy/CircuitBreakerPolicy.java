package dev.retryagent.policy;

import dev.retryagent.internal.Units;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * A failure-rate and slow-call-rate circuit breaker, per target host ({@code scheme://host:port})
 * or per route. The window is either the last {@code N} attempts ({@link WindowType#COUNT}) or the
 * attempts of the last {@code T} ({@link WindowType#TIME}). Immutable and thread-safe; on by
 * default.
 */
public final class CircuitBreakerPolicy {
  /** What one breaker guards. */
  public enum Scope implements ConfigNamed {
    HOST,
    ROUTE;

    @Override
    public String configName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** How the sliding window is measured. */
  public enum WindowType implements ConfigNamed {
    COUNT,
    TIME;

    @Override
    public String configName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public static final Scope DEFAULT_SCOPE = Scope.HOST;
  public static final WindowType DEFAULT_WINDOW_TYPE = WindowType.COUNT;
  public static final int DEFAULT_WINDOW_SIZE = 50;
  public static final Duration DEFAULT_TIME_WINDOW = Duration.ofSeconds(30);
  public static final int DEFAULT_MINIMUM_CALLS = 20;
  public static final double DEFAULT_FAILURE_RATE_THRESHOLD = 0.5;
  public static final double DEFAULT_SLOW_CALL_RATE_THRESHOLD = 1.0;
  public static final Duration DEFAULT_OPEN_FOR = Duration.ofSeconds(30);
  public static final int DEFAULT_HALF_OPEN_CALLS = 5;
  public static final StatusSet DEFAULT_FAIL_ON_STATUSES = StatusSet.of("5xx");
  public static final int DEFAULT_MAX_HOSTS = 10_000;

  /** Bounds that keep one breaker's memory small. */
  public static final int MAX_COUNT_WINDOW = 10_000;

  public static final Duration MAX_TIME_WINDOW = Duration.ofHours(1);

  /** Shortest time window: attempts are counted in millisecond buckets. */
  public static final Duration MIN_TIME_WINDOW = Duration.ofMillis(1);

  /** Largest minimumCalls. */
  public static final int MAX_MINIMUM_CALLS = 1_000_000;

  /** Longest openFor and slowCall.duration: a day. */
  public static final Duration MAX_OPEN_FOR = Duration.ofDays(1);

  public static final Duration MAX_SLOW_CALL_DURATION = Duration.ofDays(1);

  /** Most trial calls in half-open. */
  public static final int MAX_HALF_OPEN_CALLS = 10_000;

  /** Largest maxHosts: the bound on tracked hosts is itself bounded. */
  public static final int MAX_HOSTS_LIMIT = 10_000_000;

  private static final CircuitBreakerPolicy DEFAULTS = builder().build();

  private final boolean enabled;
  private final Scope scope;
  private final WindowType windowType;
  private final int windowSize;
  private final Duration windowDuration;
  private final int minimumCalls;
  private final boolean minimumCallsSet;
  private final double failureRateThreshold;
  private final Duration slowCallDuration;
  private final double slowCallRateThreshold;
  private final Duration openFor;
  private final int halfOpenCalls;
  private final StatusSet failOnStatuses;
  private final boolean failOnTransport;
  private final int maxHosts;

  private CircuitBreakerPolicy(Builder b) {
    this.enabled = b.enabled;
    this.scope = b.scope;
    this.windowType = b.windowType;
    this.windowSize = b.windowSize;
    this.windowDuration = b.windowDuration;
    // A count window of N never holds more than N calls: the default minimumCalls follows a
    // smaller window down (as resilience4j does), or the breaker would never decide. One that was
    // set is kept as set, even above the window: "no decision before this many calls" is the
    // contract's meaning, so such a breaker never opens on rates (the config loader warns).
    this.minimumCalls =
        b.minimumCallsSet || b.windowType != WindowType.COUNT
            ? b.minimumCalls
            : Math.min(b.minimumCalls, b.windowSize);
    this.minimumCallsSet = b.minimumCallsSet;
    this.failureRateThreshold = b.failureRateThreshold;
    this.slowCallDuration = b.slowCallDuration;
    this.slowCallRateThreshold = b.slowCallRateThreshold;
    this.openFor = b.openFor;
    this.halfOpenCalls = b.halfOpenCalls;
    this.failOnStatuses = b.failOnStatuses;
    this.failOnTransport = b.failOnTransport;
    this.maxHosts = b.maxHosts;
  }

  public static CircuitBreakerPolicy defaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    Builder b = new Builder();
    b.enabled = enabled;
    b.scope = scope;
    b.windowType = windowType;
    b.windowSize = windowSize;
    b.windowDuration = windowDuration;
    if (minimumCallsSet) {
      b.minimumCalls = minimumCalls;
      b.minimumCallsSet = true;
    }
    b.failureRateThreshold = failureRateThreshold;
    b.slowCallDuration = slowCallDuration;
    b.slowCallRateThreshold = slowCallRateThreshold;
    b.openFor = openFor;
    b.halfOpenCalls = halfOpenCalls;
    b.failOnStatuses = failOnStatuses;
    b.failOnTransport = failOnTransport;
    b.maxHosts = maxHosts;
    return b;
  }

  public boolean enabled() {
    return enabled;
  }

  public Scope scope() {
    return scope;
  }

  public WindowType windowType() {
    return windowType;
  }

  /** Attempts in a {@link WindowType#COUNT} window. */
  public int windowSize() {
    return windowSize;
  }

  /** Length of a {@link WindowType#TIME} window. */
  public Duration windowDuration() {
    return windowDuration;
  }

  /**
   * No decision before this many attempts in the window. Unless set, at most the size of a count
   * window; when set above it, the breaker never opens on rates.
   */
  public int minimumCalls() {
    return minimumCalls;
  }

  /** Opens at or above this failure rate, 0..1. */
  public double failureRateThreshold() {
    return failureRateThreshold;
  }

  /** Attempts longer than this count as slow; null = slow calls are not tracked. */
  public Duration slowCallDuration() {
    return slowCallDuration;
  }

  /** Opens at or above this slow-call rate, 0..1. */
  public double slowCallRateThreshold() {
    return slowCallRateThreshold;
  }

  /** Time open before half-open. */
  public Duration openFor() {
    return openFor;
  }

  /** Trial attempts in half-open; all must succeed to close. */
  public int halfOpenCalls() {
    return halfOpenCalls;
  }

  /** Statuses that count as failures. */
  public StatusSet failOnStatuses() {
    return failOnStatuses;
  }

  /** Whether transport failures count as failures. */
  public boolean failOnTransport() {
    return failOnTransport;
  }

  /** Bound on tracked hosts; the least recently used idle one is dropped. */
  public int maxHosts() {
    return maxHosts;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof CircuitBreakerPolicy)) {
      return false;
    }
    CircuitBreakerPolicy t = (CircuitBreakerPolicy) o;
    return enabled == t.enabled
        && scope == t.scope
        && windowType == t.windowType
        && windowSize == t.windowSize
        && windowDuration.equals(t.windowDuration)
        && minimumCalls == t.minimumCalls
        && failureRateThreshold == t.failureRateThreshold
        && Objects.equals(slowCallDuration, t.slowCallDuration)
        && slowCallRateThreshold == t.slowCallRateThreshold
        && openFor.equals(t.openFor)
        && halfOpenCalls == t.halfOpenCalls
        && failOnStatuses.equals(t.failOnStatuses)
        && failOnTransport == t.failOnTransport
        && maxHosts == t.maxHosts;
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        enabled, scope, windowType, windowSize, windowDuration, minimumCalls, openFor);
  }

  @Override
  public String toString() {
    return "circuitBreaker{enabled="
        + enabled
        + ", scope="
        + scope.configName()
        + ", window="
        + (windowType == WindowType.COUNT ? "count " + windowSize : "time " + windowDuration)
        + ", minimumCalls="
        + minimumCalls
        + ", failureRateThreshold="
        + failureRateThreshold
        + ", slowCall.duration="
        + (slowCallDuration == null ? "none" : slowCallDuration)
        + ", slowCall.rateThreshold="
        + slowCallRateThreshold
        + ", openFor="
        + openFor
        + ", halfOpenCalls="
        + halfOpenCalls
        + ", failOn.statuses="
        + failOnStatuses
        + ", failOn.transport="
        + failOnTransport
        + ", maxHosts="
        + maxHosts
        + "}";
  }

  /**
   * Validating builder. Starts at the defaults. A setter throws {@link IllegalArgumentException},
   * naming the key and the value, for a value outside its documented range or a null; not
   * thread-safe.
   */
  public static final class Builder {
    private boolean enabled = true;
    private Scope scope = DEFAULT_SCOPE;
    private WindowType windowType = DEFAULT_WINDOW_TYPE;
    private int windowSize = DEFAULT_WINDOW_SIZE;
    private Duration windowDuration = DEFAULT_TIME_WINDOW;
    private int minimumCalls = DEFAULT_MINIMUM_CALLS;
    private boolean minimumCallsSet;
    private double failureRateThreshold = DEFAULT_FAILURE_RATE_THRESHOLD;
    private Duration slowCallDuration;
    private double slowCallRateThreshold = DEFAULT_SLOW_CALL_RATE_THRESHOLD;
    private Duration openFor = DEFAULT_OPEN_FOR;
    private int halfOpenCalls = DEFAULT_HALF_OPEN_CALLS;
    private StatusSet failOnStatuses = DEFAULT_FAIL_ON_STATUSES;
    private boolean failOnTransport = true;
    private int maxHosts = DEFAULT_MAX_HOSTS;

    private Builder() {}

    public Builder enabled(boolean enabled) {
      this.enabled = enabled;
      return this;
    }

    public Builder scope(Scope scope) {
      this.scope = Checks.notNull("circuitBreaker.scope", scope);
      return this;
    }

    /** A window of the last {@code size} attempts. */
    public Builder countWindow(int size) {
      this.windowSize = Checks.inRange("circuitBreaker.window.size", size, 1, MAX_COUNT_WINDOW);
      this.windowType = WindowType.COUNT;
      return this;
    }

    /** A window of the attempts of the last {@code length}. */
    public Builder timeWindow(Duration length) {
      Checks.positive("circuitBreaker.window.size", length);
      if (length.compareTo(MIN_TIME_WINDOW) < 0 || length.compareTo(MAX_TIME_WINDOW) > 0) {
        throw new IllegalArgumentException(
            "circuitBreaker.window.size must be between "
                + Units.formatDuration(MIN_TIME_WINDOW)
                + " and "
                + MAX_TIME_WINDOW
                + ", was "
                + length);
      }
      this.windowDuration = length;
      this.windowType = WindowType.TIME;
      return this;
    }

    public Builder minimumCalls(int minimumCalls) {
      this.minimumCalls =
          Checks.inRange("circuitBreaker.minimumCalls", minimumCalls, 1, MAX_MINIMUM_CALLS);
      this.minimumCallsSet = true;
      return this;
    }

    public Builder failureRateThreshold(double rate) {
      this.failureRateThreshold =
          Checks.inRange("circuitBreaker.failureRateThreshold", rate, 0.0, 1.0);
      if (rate == 0.0) {
        throw new IllegalArgumentException(
            "circuitBreaker.failureRateThreshold must be above 0 (0 would open on any call)");
      }
      return this;
    }

    /** Null: slow calls are not tracked. */
    public Builder slowCallDuration(Duration duration) {
      this.slowCallDuration =
          duration == null
              ? null
              : Checks.atMost(
                  "circuitBreaker.slowCall.duration",
                  Checks.positive("circuitBreaker.slowCall.duration", duration),
                  MAX_SLOW_CALL_DURATION);
      return this;
    }

    public Builder slowCallRateThreshold(double rate) {
      this.slowCallRateThreshold =
          Checks.inRange("circuitBreaker.slowCall.rateThreshold", rate, 0.0, 1.0);
      if (rate == 0.0) {
        throw new IllegalArgumentException(
            "circuitBreaker.slowCall.rateThreshold must be above 0 (0 would open on any call)");
      }
      return this;
    }

    public Builder openFor(Duration openFor) {
      this.openFor =
          Checks.atMost(
              "circuitBreaker.openFor",
              Checks.positive("circuitBreaker.openFor", openFor),
              MAX_OPEN_FOR);
      return this;
    }

    public Builder halfOpenCalls(int calls) {
      this.halfOpenCalls =
          Checks.inRange("circuitBreaker.halfOpenCalls", calls, 1, MAX_HALF_OPEN_CALLS);
      return this;
    }

    public Builder failOnStatuses(StatusSet statuses) {
      this.failOnStatuses = Checks.notNull("circuitBreaker.failOn.statuses", statuses);
      return this;
    }

    public Builder failOnTransport(boolean failOnTransport) {
      this.failOnTransport = failOnTransport;
      return this;
    }

    public Builder maxHosts(int maxHosts) {
      this.maxHosts = Checks.inRange("circuitBreaker.maxHosts", maxHosts, 1, MAX_HOSTS_LIMIT);
      return this;
    }

    public CircuitBreakerPolicy build() {
      return new CircuitBreakerPolicy(this);
    }
  }
}
