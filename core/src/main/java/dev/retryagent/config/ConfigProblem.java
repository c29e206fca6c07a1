package dev.retryagent.config;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One thing wrong with a configuration: where it is (source, 1-based line and column, key path such
 * as {@code routes[1].retry.maxAttempts}) and what is wrong (what was found, what is allowed).
 * Immutable and thread-safe.
 */
public final class ConfigProblem {
  private static final Pattern PLAIN = Pattern.compile("[A-Za-z0-9_.:/*%@+$!\\[\\]{}-]+");
  private static final int MAX_SHOWN = 60;

  private final String source;
  private final int line;
  private final int column;
  private final String path;
  private final String message;

  /**
   * @param source file name, {@code agent argument}, a property or variable name
   * @param line 1-based, or 0 when unknown
   * @param column 1-based, or 0 when unknown
   * @param path key path such as {@code routes[1].retry.maxAttempts}; empty when the problem is not
   *     about one key (a YAML syntax error, an unreadable file)
   * @param message what was found and what is allowed
   */
  ConfigProblem(String source, int line, int column, String path, String message) {
    this.source = Objects.requireNonNull(source, "source");
    this.line = Math.max(0, line);
    this.column = Math.max(0, column);
    this.path = Objects.requireNonNull(path, "path");
    this.message = Objects.requireNonNull(message, "message");
  }

  public String source() {
    return source;
  }

  /** 1-based line, or 0 when unknown. */
  public int line() {
    return line;
  }

  /** 1-based column, or 0 when unknown. */
  public int column() {
    return column;
  }

  /** Key path such as {@code routes[1].retry.maxAttempts}, or empty. */
  public String path() {
    return path;
  }

  /** What was found and what is allowed. */
  public String message() {
    return message;
  }

  /** {@code config.yml:12:5: routes[1].retry.maxAttempts: found 0; allowed 1..10}. */
  @Override
  public String toString() {
    StringBuilder out = new StringBuilder(source);
    if (line > 0) {
      out.append(':').append(line);
      if (column > 0) {
        out.append(':').append(column);
      }
    }
    out.append(": ");
    if (!path.isEmpty()) {
      out.append(path).append(": ");
    }
    return out.append(message).toString();
  }

  /**
   * A value as a message shows it after "found": bare when it is one simple token, else quoted with
   * control characters escaped; long values cut.
   */
  static String shown(String text) {
    String t = text.length() > MAX_SHOWN ? text.substring(0, MAX_SHOWN) + "..." : text;
    if (PLAIN.matcher(t).matches()) {
      return t;
    }
    StringBuilder out = new StringBuilder("\"");
    for (int i = 0; i < t.length(); i++) {
      char c = t.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < ' ' || c == 0x7f) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ConfigProblem)) {
      return false;
    }
    ConfigProblem t = (ConfigProblem) o;
    return line == t.line
        && column == t.column
        && source.equals(t.source)
        && path.equals(t.path)
        && message.equals(t.message);
  }

  @Override
  public int hashCode() {
    return Objects.hash(source, line, column, path, message);
  }
}
