package dev.retryagent.config;

import dev.retryagent.config.ConfigSchema.KeyRef;
import dev.retryagent.config.ConfigSchema.Leaf;
import dev.retryagent.config.FilePart.Setting;
import dev.retryagent.internal.Units;
import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy.WindowType;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import java.time.Duration;
import java.util.Map;

/**
 * The checks of one merged policy that involve more than one key: the breaker window (its size
 * depends on its type) and the keys that bound each other. A problem is reported on the part of the
 * file that wrote the offending key, so a conflict in {@code defaults} is reported once, not once
 * per route.
 */
final class CrossChecks {
  private final FileProblems problems;
  private final Map<Leaf, Setting> merged;
  private final FilePart current;
  private final ConfigDraft t;

  /** Set when two keys conflict, or when one of a pair is invalid. */
  private boolean conflict;

  CrossChecks(FileProblems problems, Map<Leaf, Setting> merged, FilePart current, ConfigDraft t) {
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
    Setting size = get(CircuitBreakerKeys.WINDOW_SIZE);
    Setting type = get(CircuitBreakerKeys.WINDOW_TYPE);
    boolean ours = (size != null && size.part == current) || (type != null && type.part == current);
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
            found(
                size,
                size.value,
                "a count window's size is a number of attempts, 1.."
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
          || ((Duration) size.value).compareTo(CircuitBreakerPolicy.MIN_TIME_WINDOW) < 0
          || ((Duration) size.value).compareTo(CircuitBreakerPolicy.MAX_TIME_WINDOW) > 0) {
        if (ours) {
          found(
              size,
              size.value,
              "a time window's size is a duration "
                  + Units.formatDuration(CircuitBreakerPolicy.MIN_TIME_WINDOW)
                  + ".."
                  + Units.formatDuration(CircuitBreakerPolicy.MAX_TIME_WINDOW)
                  + " such as 30s"
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
   * {@code rateLimit.scope: fleet} needs the {@code fleet} section's Redis; reported where the
   * scope was written (once in {@code defaults}, not once per route).
   */
  boolean fleetScope(boolean fleetConfigured) {
    Setting scope = get(RateLimitKeys.SCOPE);
    if (fleetConfigured
        || scope == null
        || !scope.valid()
        || scope.value != RateLimitPolicy.Scope.FLEET) {
      return true;
    }
    if (scope.part == current) {
      problems.at(
          scope.node,
          scope.path,
          "found fleet, but the file has no fleet section with fleet.redis.url; a fleet-wide"
              + " limit is shared through that Redis (or write scope: host)");
    }
    return false;
  }

  /**
   * Keys that bound each other. When the bounded key was never written and the bounding one was,
   * the built-in default of the bounded key follows it down (a route that sets {@code deadline: 5s}
   * gets {@code retryAfter.max: 5s}); when both were written, a conflict is a problem.
   */
  boolean bounds(Integer countWindow) {
    Duration deadline = duration(RetryKeys.DEADLINE, RetryPolicy.DEFAULT_DEADLINE);
    Duration initial =
        ordered(
            BackoffKeys.INITIAL,
            duration(BackoffKeys.INITIAL, BackoffPolicy.DEFAULT_INITIAL),
            BackoffKeys.MAX,
            duration(BackoffKeys.MAX, BackoffPolicy.DEFAULT_MAX),
            "the first delay cannot exceed the cap");
    if (initial != null) {
      t.backoff.initial(initial);
    }
    Duration retryAfterMax =
        ordered(
            RetryKeys.RETRY_AFTER_MAX,
            duration(RetryKeys.RETRY_AFTER_MAX, RetryPolicy.DEFAULT_RETRY_AFTER_MAX),
            RetryKeys.DEADLINE,
            deadline,
            "a wait longer than the deadline could never end in a retry");
    if (retryAfterMax != null) {
      t.retry.retryAfterMax(retryAfterMax);
    }
    Duration perAttempt = duration(RetryKeys.PER_ATTEMPT_TIMEOUT, null);
    if (perAttempt != null) {
      // Only checked when written, so it never follows the deadline down.
      ordered(
          RetryKeys.PER_ATTEMPT_TIMEOUT,
          perAttempt,
          RetryKeys.DEADLINE,
          deadline,
          "no attempt can outlast the whole call");
    }
    if (countWindow != null) {
      Setting min = get(CircuitBreakerKeys.MINIMUM_CALLS);
      long minimumCalls =
          min != null && min.valid()
              ? (Long) min.value
              : CircuitBreakerPolicy.DEFAULT_MINIMUM_CALLS;
      Setting size = get(CircuitBreakerKeys.WINDOW_SIZE);
      Setting type = get(CircuitBreakerKeys.WINDOW_TYPE);
      if (size == null
          && type != null
          && type.part == current
          && min != null
          && min.valid()
          && min.part != current
          && minimumCalls > countWindow) {
        // This part switched to a count window of the default size, below the minimumCalls that
        // defaults wrote for their own (time) window: neither key of the pair was written here,
        // and defaults had nothing to report, so the type that set the size is blamed.
        conflict = true;
        found(
            type,
            "count, whose size is " + countWindow + " by default",
            "allowed at least "
                + CircuitBreakerKeys.MINIMUM_CALLS.leaf().path
                + " ("
                + minimumCalls
                + origin(min)
                + "): the breaker could never see enough calls to open (write window.size)");
      } else {
        Long followed =
            ordered(
                CircuitBreakerKeys.MINIMUM_CALLS,
                minimumCalls,
                CircuitBreakerKeys.WINDOW_SIZE,
                (long) countWindow,
                "the breaker could never see enough calls to open");
        if (followed != null) {
          t.circuitBreaker.minimumCalls((int) (long) followed);
        }
      }
    }
    return !conflict;
  }

  private Setting get(KeyRef key) {
    return merged.get(key.leaf());
  }

  private Duration duration(KeyRef key, Duration builtIn) {
    Setting s = get(key);
    return s != null && s.valid() ? (Duration) s.value : builtIn;
  }

  /**
   * Checks {@code lower <= upper}. Returns the value the lower key must take when only the upper
   * key was written (the lower one's built-in default follows it down), else null. A conflict is
   * reported here when either key was written in the current part, else by the part that wrote
   * them, and sets {@link #conflict}.
   */
  private <T extends Comparable<T>> T ordered(
      KeyRef lowerKey, T lower, KeyRef upperKey, T upper, String why) {
    if (lower.compareTo(upper) <= 0) {
      return null;
    }
    Setting low = get(lowerKey);
    Setting up = get(upperKey);
    if ((low != null && !low.valid()) || (up != null && !up.valid())) {
      conflict = true; // Already reported as invalid.
      return null;
    }
    if (low == null) {
      return upper;
    }
    conflict = true;
    boolean lowHere = low.part == current;
    boolean upHere = up != null && up.part == current;
    if (!lowHere && !upHere) {
      return null; // Both inherited from defaults, which reported it.
    }
    if (lowHere) {
      found(
          low,
          lower,
          "allowed at most "
              + upperKey.leaf().path
              + " ("
              + shown(upper)
              + origin(up)
              + "): "
              + why);
    } else {
      found(
          up,
          upper,
          "allowed at least "
              + lowerKey.leaf().path
              + " ("
              + shown(lower)
              + origin(low)
              + "): "
              + why);
    }
    return null;
  }

  /** Reports {@code s} in the one form of a problem: what was found, then what is allowed. */
  private void found(Setting s, Object value, String allowed) {
    problems.at(s.node, s.path, "found " + written(s, value) + "; " + allowed);
  }

  /**
   * The value as the file wrote it ({@code 60s}, not {@code 1m}), so that the reader finds it in
   * the file; formatted when its text came from the environment (the walker shows that form) or is
   * not the setting's own value.
   */
  private static String written(Setting s, Object value) {
    if (value.equals(s.value) && s.node instanceof YamlNode.Scalar) {
      String raw = ((YamlNode.Scalar) s.node).getValue();
      if (raw.indexOf('$') < 0) {
        return s.leaf.type.shown(raw.trim());
      }
    }
    return shown(value);
  }

  private String origin(Setting s) {
    if (s == null) {
      return ", the built-in default";
    }
    return s.part == current ? "" : ", from " + s.part.name;
  }

  private static String shown(Object value) {
    if (value instanceof Duration) {
      return Units.formatDuration((Duration) value);
    }
    return String.valueOf(value);
  }
}
