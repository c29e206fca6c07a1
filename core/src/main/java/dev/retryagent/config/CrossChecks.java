package dev.retryagent.config;

import dev.retryagent.config.Layer.Setting;
import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy.WindowType;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.Units;
import java.time.Duration;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The checks of one merged policy that involve more than one key: the breaker window (its size
 * depends on its type) and the keys that bound each other. A problem is reported on the layer that
 * wrote the offending key, so a conflict in {@code defaults} is reported once, not once per route.
 */
final class CrossChecks {
  private final Problems problems;
  private final Map<String, Setting> merged;
  private final Layer current;
  private final Target t;

  CrossChecks(Problems problems, Map<String, Setting> merged, Layer current, Target t) {
    this.problems = problems;
    this.merged = merged;
    this.current = current;
    this.t = t;
  }

  /**
   * Sets the breaker window from its type and size; returns the count size (null for a time window
   * or after reporting a size that does not fit the type).
   */
  Integer window() {
    Setting size = merged.get(ConfigAssembler.WINDOW_SIZE);
    Setting type = merged.get(ConfigAssembler.WINDOW_TYPE);
    boolean ours =
        (size != null && size.layer == current) || (type != null && type.layer == current);
    if ((size != null && !size.valid()) || (type != null && !type.valid())) {
      return null; // Already reported; the size cannot be judged without a valid type.
    }
    if (t.windowType == WindowType.COUNT) {
      long n = CircuitBreakerPolicy.DEFAULT_WINDOW_SIZE;
      if (size != null) {
        if (!(size.value instanceof Long)
            || (Long) size.value < 1
            || (Long) size.value > CircuitBreakerPolicy.MAX_COUNT_WINDOW) {
          if (ours) {
            problems.at(
                size.node,
                size.path,
                "found "
                    + shown(size.value)
                    + "; a count window's size is a number of attempts, 1.."
                    + CircuitBreakerPolicy.MAX_COUNT_WINDOW
                    + " (for a duration set type: time)");
          }
          return null;
        }
        n = (Long) size.value;
      }
      t.circuitBreaker.countWindow((int) n);
      return (int) n;
    }
    Duration d = CircuitBreakerPolicy.DEFAULT_TIME_WINDOW;
    if (size != null) {
      if (!(size.value instanceof Duration)
          || ((Duration) size.value).compareTo(ConfigSchema.ONE_MS) < 0
          || ((Duration) size.value).compareTo(CircuitBreakerPolicy.MAX_TIME_WINDOW) > 0) {
        if (ours) {
          problems.at(
              size.node,
              size.path,
              "found "
                  + shown(size.value)
                  + "; a time window's size is a duration 1ms..1h such as 30s"
                  + (size.value instanceof Long ? " (a bare number needs a unit)" : ""));
        }
        return null;
      }
      d = (Duration) size.value;
    }
    t.circuitBreaker.timeWindow(d);
    return null;
  }

  // ---------------------------------------------------------------- cross-checks

  /**
   * Keys that bound each other. When the bounded key was never written and the bounding one was,
   * the built-in default of the bounded key follows it down (a route that sets {@code deadline: 5s}
   * gets {@code retryAfter.max: 5s}); when both were written, a conflict is a problem.
   */
  boolean bounds(Integer countWindow) {
    boolean ok = true;
    Duration deadline = duration("retry.deadline", RetryPolicy.DEFAULT_DEADLINE);
    ok &=
        ordered(
            "retry.backoff.initial",
            duration("retry.backoff.initial", BackoffPolicy.DEFAULT_INITIAL),
            "retry.backoff.max",
            duration("retry.backoff.max", BackoffPolicy.DEFAULT_MAX),
            "the first delay cannot exceed the cap",
            v -> t.backoff.initial((Duration) v));
    ok &=
        ordered(
            "retry.retryAfter.max",
            duration("retry.retryAfter.max", RetryPolicy.DEFAULT_RETRY_AFTER_MAX),
            "retry.deadline",
            deadline,
            "a wait longer than the deadline could never end in a retry",
            v -> t.retry.retryAfterMax((Duration) v));
    Duration perAttempt = duration("retry.perAttemptTimeout", null);
    if (perAttempt != null) {
      ok &=
          ordered(
              "retry.perAttemptTimeout",
              perAttempt,
              "retry.deadline",
              deadline,
              "no attempt can outlast the whole call",
              v -> {});
    }
    if (countWindow != null) {
      Setting min = merged.get("circuitBreaker.minimumCalls");
      long minimumCalls =
          min != null && min.valid()
              ? (Long) min.value
              : CircuitBreakerPolicy.DEFAULT_MINIMUM_CALLS;
      ok &=
          ordered(
              "circuitBreaker.minimumCalls",
              minimumCalls,
              ConfigAssembler.WINDOW_SIZE,
              (long) countWindow,
              "the breaker could never see enough calls to open",
              v -> t.circuitBreaker.minimumCalls((int) (long) (Long) v));
    }
    return ok;
  }

  private Duration duration(String key, Duration builtIn) {
    Setting s = merged.get(key);
    return s != null && s.valid() ? (Duration) s.value : builtIn;
  }

  /**
   * Checks {@code lower <= upper}. {@code followDown} lowers the built-in value of the lower key to
   * the upper one when only the upper key was written. False when the two conflict (reported here
   * when either key was written in the current layer, else by the layer that wrote them).
   */
  private <T extends Comparable<T>> boolean ordered(
      String lowerKey, T lower, String upperKey, T upper, String why, Consumer<Object> followDown) {
    if (lower.compareTo(upper) <= 0) {
      return true;
    }
    Setting low = merged.get(lowerKey);
    Setting up = merged.get(upperKey);
    if ((low != null && !low.valid()) || (up != null && !up.valid())) {
      return false; // Already reported as invalid.
    }
    if (low == null) {
      followDown.accept(upper);
      return true;
    }
    boolean lowHere = low.layer == current;
    boolean upHere = up != null && up.layer == current;
    if (!lowHere && !upHere) {
      return false; // Both inherited from defaults, which reported it.
    }
    if (lowHere) {
      problems.at(
          low.node,
          low.path,
          "found "
              + shown(lower)
              + "; allowed at most "
              + upperKey
              + " ("
              + shown(upper)
              + origin(up)
              + "): "
              + why);
    } else {
      problems.at(
          up.node,
          up.path,
          "found "
              + shown(upper)
              + "; allowed at least "
              + lowerKey
              + " ("
              + shown(lower)
              + origin(low)
              + "): "
              + why);
    }
    return false;
  }

  private String origin(Setting s) {
    if (s == null) {
      return ", the built-in default";
    }
    return s.layer == current ? "" : ", from " + s.layer.name;
  }

  private static String shown(Object value) {
    if (value instanceof Duration) {
      return Units.formatDuration((Duration) value);
    }
    return String.valueOf(value);
  }
}
