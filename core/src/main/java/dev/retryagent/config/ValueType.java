package dev.retryagent.config;

import dev.retryagent.internal.Units;
import dev.retryagent.policy.ConfigNamed;
import dev.retryagent.policy.StatusSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/**
 * What one leaf key accepts, and how its text becomes a value. {@link #convert} throws {@link
 * IllegalArgumentException} with a message that completes "found X; ...". The {@link Kind} and the
 * bounds are public to the package so that the JSON schema and the docs can be derived from them.
 */
abstract class ValueType {
  enum Kind {
    BOOLEAN,
    INTEGER,
    NUMBER,
    RATIO,
    DURATION,
    SIZE,
    STRING,
    ENUM,
    LIST,
    /** An HTTP status code, class or range. */
    STATUS,
    HOST_GLOB,
    PATH_GLOB,
    /** {@code circuitBreaker.window.size}: a count or a duration, checked against the type. */
    COUNT_OR_DURATION
  }

  final Kind kind;

  ValueType(Kind kind) {
    this.kind = kind;
  }

  /** Converts the text of one scalar, after environment substitution. */
  abstract Object convert(String text);

  /** What is allowed, as in "allowed true or false". */
  abstract String allowed();

  /** A value as a problem shows it after "found"; a type whose text may hold a secret hides it. */
  String shown(String text) {
    return ConfigProblem.shown(text);
  }

  /** True when the text may hold a secret: a problem never repeats it ({@link #shown}). */
  boolean maySecret() {
    return false;
  }

  /**
   * What to tell about a valid value that most likely does not do what its author meant (reported
   * as a warning; the value is kept as written), or null.
   */
  String caution(Object value) {
    return null;
  }

  /** The numeric bounds alone, as in {@code 1..10}; null for a type without any. */
  String range() {
    return null;
  }

  // ---------------------------------------------------------------- factories

  static final ValueType BOOLEAN = new Fixed(Kind.BOOLEAN);

  /** A status code (503), class (5xx) or range (500-599); converts to the lower-case token. */
  static final ValueType STATUS = new Fixed(Kind.STATUS);

  /** A host glob of {@code match.hosts}; converts to a {@link HostPattern}. */
  static final ValueType HOST_GLOB = new Fixed(Kind.HOST_GLOB);

  /** A path glob of {@code match.paths}; converts to a {@link PathPattern}. */
  static final ValueType PATH_GLOB = new Fixed(Kind.PATH_GLOB);

  /** A whole number (Long) or a duration, for {@code circuitBreaker.window.size}. */
  static final ValueType COUNT_OR_DURATION = new Fixed(Kind.COUNT_OR_DURATION);

  static final ValueType HEADER_NAME =
      string("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}", "an HTTP header name such as Idempotency-Key");
  static final ValueType METHOD =
      string("[A-Za-z][A-Za-z0-9_-]{0,31}", "an HTTP method such as GET or POST");

  static Bounded integer(long min, long max) {
    return new Bounded(Kind.INTEGER, min, max);
  }

  static Bounded number(double min, double max) {
    return new Bounded(Kind.NUMBER, min, max);
  }

  /** A number above 0 up to {@code max}. */
  static Bounded positiveNumber(double max) {
    return new Bounded(Kind.NUMBER, 0, max, true);
  }

  /** A ratio in {@code [min, max]}, or {@code (min, max]} when {@code minExclusive}. */
  static Bounded ratio(double min, double max, boolean minExclusive) {
    return new Bounded(Kind.RATIO, min, max, minExclusive);
  }

  static DurationType duration(Duration min, boolean minExclusive, Duration max) {
    return new DurationType(min, minExclusive, max);
  }

  static Bounded size(long max) {
    return size(0, max);
  }

  static Bounded size(long min, long max) {
    return new Bounded(Kind.SIZE, min, max);
  }

  static StringType string(String pattern, String description) {
    return new StringType(pattern, description);
  }

  /**
   * {@link #string}, for {@code agent.deadLetter.path}: a problem shows the value as every line
   * shows the path ({@link AgentConfig#shownPath}), since a variable meant for another key may have
   * put a URL with its password, or {@code user:password@host:/dlq}, there.
   */
  static StringType deadLetterPath(String pattern, String description) {
    return new StringType(pattern, description, false, true);
  }

  /**
   * {@link #string}, for a route's name: {@code regex} is the schema's, the loader checks a name by
   * {@link RouteKeys#nameProblem} (no {@code java.util.regex} while {@code premain} reads a file).
   */
  static StringType routeName(String regex, String description) {
    return new StringType(regex, description, false, false, true);
  }

  /**
   * {@link #string}, for a host: a problem shows its user-info as {@code ***}, as a host glob's
   * ({@link ConfigProblem#shownHost}), since a host copied from a URL may carry a password.
   */
  static StringType host(String pattern, String description) {
    return new StringType(pattern, description, true);
  }

  static <E extends Enum<E> & ConfigNamed> EnumType enumOf(Class<E> type) {
    return new EnumType(type.getEnumConstants());
  }

  static ListType listOf(ValueType element) {
    return new ListType(element, null, null);
  }

  // ---------------------------------------------------------------- implementations

  /**
   * The types without parameters, told apart by their kind: one class rather than one per type,
   * because every class is loaded from the jar while {@code premain} reads the configuration.
   */
  private static final class Fixed extends ValueType {
    Fixed(Kind kind) {
      super(kind);
    }

    @Override
    Object convert(String text) {
      switch (kind) {
        case BOOLEAN:
          String s = text.trim();
          if (s.equalsIgnoreCase("true")) {
            return Boolean.TRUE;
          }
          if (s.equalsIgnoreCase("false")) {
            return Boolean.FALSE;
          }
          throw new IllegalArgumentException("allowed " + allowed());
        case STATUS:
          if (!StatusSet.isValidToken(text)) {
            throw new IllegalArgumentException("allowed " + allowed());
          }
          return text.trim().toLowerCase(Locale.ROOT);
        case HOST_GLOB:
          return HostPattern.compile(text);
        case PATH_GLOB:
          return PathPattern.compile(text);
        case COUNT_OR_DURATION:
          if (Units.isWhole(text)) {
            return Units.parseWhole(text);
          }
          try {
            return Units.parseDuration(text);
          } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("allowed " + allowed());
          }
        default:
          throw new IllegalStateException(kind.toString());
      }
    }

    @Override
    String shown(String text) {
      // A host or path pasted from a URL may carry a password (user:password@host) and a query
      // (?token=...), either of them: a problem, which the agent logs, shows neither. Both are
      // hidden for both keys (a host's query, api.example.com/export?apiKey=..., was shown);
      // hiding too much costs a message nothing.
      switch (kind) {
        case HOST_GLOB:
        case PATH_GLOB:
          return ConfigProblem.shownAny(text);
        default:
          return ConfigProblem.shown(text);
      }
    }

    @Override
    String allowed() {
      switch (kind) {
        case BOOLEAN:
          return "true or false";
        case STATUS:
          return "a status code (503), class (5xx) or range (500-599) within 100..999";
        case HOST_GLOB:
          return HostPattern.EXAMPLES;
        case PATH_GLOB:
          return PathPattern.EXAMPLES;
        case COUNT_OR_DURATION:
          return "a number of calls (type: count) or a duration such as 30s (type: time)";
        default:
          throw new IllegalStateException(kind.toString());
      }
    }
  }

  /** Whole numbers, decimals, ratios and sizes within inclusive bounds. */
  static final class Bounded extends ValueType {
    final double min;
    final double max;
    final boolean minExclusive;

    Bounded(Kind kind, double min, double max) {
      this(kind, min, max, false);
    }

    Bounded(Kind kind, double min, double max, boolean minExclusive) {
      super(kind);
      this.min = min;
      this.max = max;
      this.minExclusive = minExclusive;
    }

    @Override
    Object convert(String text) {
      double v;
      Object result;
      try {
        switch (kind) {
          case INTEGER:
            long whole = Units.parseWhole(text);
            v = whole;
            result = whole;
            break;
          case NUMBER:
            v = Units.parseNumber(text);
            result = v;
            break;
          case RATIO:
            v = Units.parseRatio(text);
            result = v;
            break;
          case SIZE:
            long bytes = Units.parseSize(text);
            v = bytes;
            result = bytes;
            break;
          default:
            throw new IllegalStateException(kind.toString());
        }
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(withRange(e.getMessage()));
      }
      if (v > max || v < min || (minExclusive && v == min)) {
        throw new IllegalArgumentException("allowed " + allowed());
      }
      return result;
    }

    private String withRange(String message) {
      return message.startsWith("allowed ") ? "allowed " + allowed() : message;
    }

    @Override
    String allowed() {
      switch (kind) {
        case INTEGER:
          return range();
        case NUMBER:
          return "a number " + range();
        case RATIO:
          return "a ratio " + range() + ", written like 50% or 0.5";
        case SIZE:
          return "a size " + range() + ", such as 512, 64KiB or 1MiB";
        default:
          throw new IllegalStateException(kind.toString());
      }
    }

    /**
     * The bounds as messages and docs/configuration.md write them: {@code 1..10}, {@code 0%..100%}.
     */
    @Override
    String range() {
      switch (kind) {
        case INTEGER:
          return max == min ? "only " + (long) min : (long) min + ".." + (long) max;
        case NUMBER:
          return minExclusive
              ? "above " + trim(min) + " up to " + trim(max)
              : trim(min) + ".." + trim(max);
        case RATIO:
          return minExclusive
              ? "above " + Units.formatRatio(min) + " up to " + Units.formatRatio(max)
              : Units.formatRatio(min) + ".." + Units.formatRatio(max);
        case SIZE:
          return min == 0
              ? "up to " + Units.formatSize((long) max)
              : Units.formatSize((long) min) + ".." + Units.formatSize((long) max);
        default:
          throw new IllegalStateException(kind.toString());
      }
    }

    private static String trim(double d) {
      return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }
  }

  /** Durations within bounds. */
  static final class DurationType extends ValueType {
    final Duration min;
    final boolean minExclusive;
    final Duration max;

    DurationType(Duration min, boolean minExclusive, Duration max) {
      super(Kind.DURATION);
      this.min = min;
      this.minExclusive = minExclusive;
      this.max = max;
    }

    @Override
    Object convert(String text) {
      Duration d;
      try {
        d = Units.parseDuration(text);
      } catch (IllegalArgumentException e) {
        // The parser's own cap (10000d) is no key's bound: naming it would tell a reader of
        // "deadline: 999999999999d" that 10000d is allowed, where the key stops at 1d.
        if (e.getMessage().startsWith(Units.TOO_LONG)) {
          throw new IllegalArgumentException("allowed " + allowed());
        }
        throw e;
      }
      check(d);
      return d;
    }

    void check(Duration d) {
      int c = d.compareTo(min);
      if (c < 0 || (c == 0 && minExclusive) || d.compareTo(max) > 0) {
        throw new IllegalArgumentException("allowed " + allowed());
      }
    }

    @Override
    String allowed() {
      return "a duration " + range() + ", such as 250ms, 2s, 1m or PT2S";
    }

    /** The bounds as messages and docs/configuration.md write them: {@code 1ms..1h}. */
    @Override
    String range() {
      return minExclusive && min.isZero()
          ? "above 0 up to " + Units.formatDuration(max)
          : Units.formatDuration(min) + ".." + Units.formatDuration(max);
    }
  }

  /** Free text that must match a pattern (header names, class names, route names...). */
  static class StringType extends ValueType {
    /** The regular expression a value must match, whole. */
    final String regex;

    final String description;

    /** A host: its user-info is not repeated ({@link #host}). */
    private final boolean host;

    /**
     * The dead-letter path: shown as every line shows it ({@link AgentConfig#shownPath}), also a
     * scheme-less user:password@host and a URL's password of digits ({@link #deadLetterPath}).
     */
    private final boolean deadLetterPath;

    /** A route's name: checked by {@link RouteKeys#nameProblem} ({@link #routeName}). */
    private final boolean routeName;

    /** Compiled at the first value: the schema has every string key, a file sets few. */
    private volatile TextPattern pattern;

    StringType(String regex, String description) {
      this(regex, description, false);
    }

    StringType(String regex, String description, boolean host) {
      this(regex, description, host, false);
    }

    private StringType(String regex, String description, boolean host, boolean deadLetterPath) {
      this(regex, description, host, deadLetterPath, false);
    }

    private StringType(
        String regex, String description, boolean host, boolean deadLetterPath, boolean routeName) {
      super(Kind.STRING);
      this.regex = regex;
      this.description = description;
      this.host = host;
      this.deadLetterPath = deadLetterPath;
      this.routeName = routeName;
    }

    @Override
    String shown(String text) {
      if (deadLetterPath) {
        return ConfigProblem.shown(AgentConfig.withoutPassword(text));
      }
      return host ? ConfigProblem.shownAny(text) : ConfigProblem.shown(text);
    }

    @Override
    Object convert(String text) {
      String s = text.trim();
      if (routeName) {
        String problem = RouteKeys.nameProblem(s);
        if (problem != null) {
          throw new IllegalArgumentException("allowed " + allowed() + "; " + problem);
        }
        return s;
      }
      TextPattern p = pattern;
      if (p == null) {
        p = TextPattern.compile(regex);
        pattern = p;
      }
      if (!p.matches(s)) {
        throw new IllegalArgumentException("allowed " + allowed());
      }
      return s;
    }

    @Override
    String allowed() {
      return description;
    }
  }

  /** One of a fixed set of names, any case. */
  static final class EnumType extends ValueType {
    final List<String> names;
    private final ConfigNamed[] values;

    EnumType(ConfigNamed[] values) {
      super(Kind.ENUM);
      List<String> n = new ArrayList<>(values.length);
      for (ConfigNamed v : values) {
        n.add(v.configName());
      }
      this.names = Collections.unmodifiableList(n);
      this.values = values.clone();
    }

    private Object lookup(String name) {
      for (ConfigNamed v : values) {
        if (v.configName().equalsIgnoreCase(name)) {
          return v;
        }
      }
      return null;
    }

    @Override
    Object convert(String text) {
      Object v = lookup(text.trim());
      if (v == null) {
        String hint = Suggestions.nearest(text.trim(), names);
        throw new IllegalArgumentException(
            (hint == null ? "" : "did you mean " + hint + "? ") + "allowed " + allowed());
      }
      return v;
    }

    @Override
    String allowed() {
      return "one of " + String.join(", ", names);
    }
  }

  /** A YAML list whose items all have the element type. */
  static final class ListType extends ValueType {
    final ValueType element;

    /** For a list that may not be empty, what one item is ("host glob"); null otherwise. */
    final String item;

    /** What leaving the key out matches any of ("host"). */
    final String anyOf;

    ListType(ValueType element, String item, String anyOf) {
      super(Kind.LIST);
      this.element = element;
      this.item = item;
      this.anyOf = anyOf;
    }

    /**
     * The same list, but empty is refused: an empty {@code match} list would match nothing, while
     * leaving the key out matches any {@code anyOf}.
     */
    ListType nonEmpty(String item, String anyOf) {
      return new ListType(element, item, anyOf);
    }

    /** The problem of an empty list, or null when empty is fine. */
    String emptyProblem() {
      return item == null
          ? null
          : "found an empty list, which matches nothing; allowed at least one "
              + item
              + " (leave the key out to match any "
              + anyOf
              + ")";
    }

    @Override
    Object convert(String text) {
      throw new IllegalArgumentException("allowed " + allowed());
    }

    @Override
    String allowed() {
      return "a list, each item " + element.allowed();
    }
  }
}
