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
 * depends on its type) and the keys that bound each other. A problem or warning is reported on the
 * part of the file that wrote the offending key, so a conflict in {@code defaults} is reported
 * once, not once per route.
 */
final class CrossChecks {
  private final FileProblems problems;
  private final FileProblems warnings;
  private final Map<Leaf, Setting> merged;
  private final FilePart current;
  private final ConfigDraft t;

  /** Set when one of a pair of keys that bound each other is invalid. */
  private boolean conflict;

  CrossChecks(
      FileProblems problems,
      FileProblems warnings,
      Map<Leaf, Setting> merged,
      FilePart current,
      ConfigDraft t) {
    this.problems = problems;
    this.warnings = warnings;
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
   * Keys that bound each other. The version-1 contract sets no limit between them, so a file that
   * writes one above the other loads, each key keeping the meaning the contract gives it, and the
   * pair is reported as a warning where it was written (once in {@code defaults}, not once per
   * route), with the effective value. A bound key the file never wrote keeps its built-in default,
   * except where that is what the contract's formulas give anyway ({@code backoff.initial} under a
   * lower {@code max}; the breaker's {@code minimumCalls} under a smaller count window follows it
   * down in {@link CircuitBreakerPolicy}). False only when one of a pair is invalid (already
   * reported).
   */
  boolean bounds(Integer countWindow) {
    Duration deadline = duration(RetryKeys.DEADLINE, RetryPolicy.DEFAULT_DEADLINE);
    Duration max = duration(BackoffKeys.MAX, BackoffPolicy.DEFAULT_MAX);
    // backoff.max is the contract's "cap on the computed delay": every delay, the first included,
    // is at most max, so the effective first delay is max. With the cap, every jitter kind gives
    // with initial = max what its formula gives with the written initial: the base delay is max
    // from the first retry on, and decorrelated's min(max, U(initial, 3 x previous)) is max either
    // way. BackoffPolicy keeps initial <= max as its own invariant.
    if (above(
        BackoffKeys.INITIAL,
        duration(BackoffKeys.INITIAL, BackoffPolicy.DEFAULT_INITIAL),
        BackoffKeys.MAX,
        max,
        "every delay is capped at the max, so the first delay is "
            + shown(max)
            + " (before jitter)")) {
      t.backoff.initial(max);
    }
    // Kept as written, not clamped to the deadline: for the retry the two are the same (a
    // Retry-After longer than what is left of the deadline gives the response back at once, as the
    // contract's deadline says: a retry that could not start before it is not made), but
    // retryAfter.max also bounds a pauseOn429 pause and the fleet pause, which the deadline does
    // not: clamping would shorten those below what the file asked. For the same reason a
    // retryAfter.max the file never wrote keeps its default (30s) under a shorter deadline.
    Duration retryAfterMax =
        duration(RetryKeys.RETRY_AFTER_MAX, RetryPolicy.DEFAULT_RETRY_AFTER_MAX);
    above(
        RetryKeys.RETRY_AFTER_MAX,
        retryAfterMax,
        RetryKeys.DEADLINE,
        deadline,
        "a longer Retry-After still gives the response back at once, since a retry that could not"
            + " start before the deadline is not made; "
            + shown(retryAfterMax)
            + " still bounds a pauseOn429 pause");
    Duration perAttempt = duration(RetryKeys.PER_ATTEMPT_TIMEOUT, null);
    if (perAttempt != null) {
      // Kept as written: the deadline does not bound the first attempt (the caller's own: only
      // perAttemptTimeout does, CallBounds), so clamping would shorten it; a retry's attempt
      // already gets at most what is left of the deadline.
      above(
          RetryKeys.PER_ATTEMPT_TIMEOUT,
          perAttempt,
          RetryKeys.DEADLINE,
          deadline,
          "the first attempt gets "
              + shown(perAttempt)
              + "; a retry gets at most what is left of the deadline");
    }
    if (countWindow != null) {
      Setting min = get(CircuitBreakerKeys.MINIMUM_CALLS);
      long minimumCalls =
          min != null && min.valid()
              ? (Long) min.value
              : CircuitBreakerPolicy.DEFAULT_MINIMUM_CALLS;
      // Kept as written: "no decision before this many calls in the window" with a window that
      // never holds that many means the breaker never opens on rates; clamping would let it open
      // where the file said it cannot.
      String never =
          "a count window of "
              + countWindow
              + " never holds "
              + minimumCalls
              + " calls, so the breaker never opens on rates";
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
        // and defaults had nothing to report, so the type that set the size is named.
        found(
            warnings,
            type,
            "count, whose size is " + countWindow + " by default",
            "above it is "
                + CircuitBreakerKeys.MINIMUM_CALLS.leaf().path
                + " ("
                + minimumCalls
                + origin(min)
                + "): "
                + never
                + " (write window.size)");
      } else {
        above(
            CircuitBreakerKeys.MINIMUM_CALLS,
            minimumCalls,
            CircuitBreakerKeys.WINDOW_SIZE,
            (long) countWindow,
            never);
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
   * True when {@code lower > upper} and both are valid. Warned here when the lower key was written
   * and either key of the pair was written in the current part (else the part that wrote them
   * warned); a lower key the file never wrote keeps its built-in default without a warning (the
   * caller says what that default then gives). Sets {@link #conflict} when one of the pair is
   * invalid (already reported).
   */
  private <T extends Comparable<T>> boolean above(
      KeyRef lowerKey, T lower, KeyRef upperKey, T upper, String effect) {
    if (lower.compareTo(upper) <= 0) {
      return false;
    }
    Setting low = get(lowerKey);
    Setting up = get(upperKey);
    if ((low != null && !low.valid()) || (up != null && !up.valid())) {
      conflict = true; // Already reported as invalid.
      return false;
    }
    if (low == null) {
      return true;
    }
    boolean lowHere = low.part == current;
    boolean upHere = up != null && up.part == current;
    if (lowHere) {
      found(
          warnings,
          low,
          lower,
          "above " + upperKey.leaf().path + " (" + shown(upper) + origin(up) + "): " + effect);
    } else if (upHere) {
      found(
          warnings,
          up,
          upper,
          "below " + lowerKey.leaf().path + " (" + shown(lower) + origin(low) + "): " + effect);
    }
    return true;
  }

  /** Reports {@code s} in the one form of a problem: what was found, then what is allowed. */
  private void found(Setting s, Object value, String allowed) {
    found(problems, s, value, allowed);
  }

  /** Reports {@code s} to {@code to}: what was found, then what is allowed or what it does. */
  private static void found(FileProblems to, Setting s, Object value, String said) {
    to.at(s.node, s.path, "found " + written(s, value) + "; " + said);
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
