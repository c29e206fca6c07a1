package dev.retryagent.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * {@code agent.redact.pathSegments}: path segments written as {@value #MASK} wherever the agent
 * writes a path (log lines, dead letters, {@code explain}, and the URLs inside the exception text
 * they carry). A segment is the text between two {@code /}, as the client sends it
 * (percent-encoded); it is masked when one of the regular expressions matches it whole. Route
 * matching always sees the real path: masking is for output only.
 *
 * <p>A segment longer than {@value #LONGEST_MATCHED} characters is masked without being matched: a
 * segment that long is no readable name, and matching it could cost what an expression with nested
 * repetition costs on a long input. Immutable and thread-safe.
 */
public final class PathMask {
  /** What a masked segment is written as. */
  public static final String MASK = "<redacted>";

  /** Longest segment the expressions are run on; longer ones are always masked. */
  public static final int LONGEST_MATCHED = 256;

  /** Masks nothing: the default, and version 1's behaviour. */
  public static final PathMask NONE = new PathMask(Collections.emptyList());

  private final List<String> expressions;
  private final Pattern[] patterns;

  private PathMask(List<String> expressions) {
    this.expressions = List.copyOf(expressions);
    this.patterns = new Pattern[expressions.size()];
    for (int i = 0; i < patterns.length; i++) {
      patterns[i] = Pattern.compile(expressions.get(i));
    }
  }

  /**
   * @param expressions Java regular expressions, each matched against a whole segment
   * @throws java.util.regex.PatternSyntaxException when one does not compile (the configuration
   *     checks each first, with a located problem)
   */
  public static PathMask of(List<String> expressions) {
    return expressions.isEmpty() ? NONE : new PathMask(new ArrayList<>(expressions));
  }

  /** The expressions, as written. */
  public List<String> expressions() {
    return expressions;
  }

  /** True when nothing is masked. */
  public boolean isNone() {
    return patterns.length == 0;
  }

  /**
   * The path with each matching segment replaced by {@value #MASK}; everything else (slashes, other
   * segments, the query if one was passed in) as it was. Null gives null.
   */
  public String apply(String path) {
    if (path == null || patterns.length == 0) {
      return path;
    }
    StringBuilder out = null;
    int start = 0;
    int n = path.length();
    while (start <= n) {
      int end = path.indexOf('/', start);
      if (end < 0) {
        end = n;
      }
      if (end > start && masks(path, start, end)) {
        if (out == null) {
          out = new StringBuilder(path.length()).append(path, 0, start);
        }
        out.append(MASK);
      } else if (out != null) {
        out.append(path, start, end);
      }
      if (end < n && out != null) {
        out.append('/');
      }
      start = end + 1;
    }
    return out == null ? path : out.toString();
  }

  private boolean masks(String path, int start, int end) {
    if (end - start > LONGEST_MATCHED) {
      return true;
    }
    CharSequence segment = path.subSequence(start, end);
    for (Pattern p : patterns) {
      if (p.matcher(segment).matches()) {
        return true;
      }
    }
    return false;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof PathMask && expressions.equals(((PathMask) o).expressions);
  }

  @Override
  public int hashCode() {
    return Objects.hash(expressions);
  }

  @Override
  public String toString() {
    return isNone() ? "none" : expressions.toString();
  }
}
