package dev.retryagent.config;

/**
 * One entry of {@code match.paths}: a path glob matched against the request path without its query
 * string, case-sensitively. {@code *} matches within one segment; a {@code **} segment matches any
 * number of whole segments, none included, so {@code /v1/charges/**} also matches {@code
 * /v1/charges}. Compiled once; {@link #matches} does not allocate.
 */
final class PathPattern {
  static final String EXAMPLES = "a path glob such as /v1/charges/**, /v1/*/refunds or /health";

  /** Marker segment for {@code **}. Compared by identity. */
  private static final Glob ANY_SEGMENTS = Glob.of("**");

  private final String text;
  private final Glob[] segments;

  /**
   * For the common shapes, a literal: the whole pattern when it has no wildcard, or {@code P} of
   * {@code P/**} when {@code P} has none. Null otherwise.
   */
  private final String literal;

  private final boolean literalIsPrefix;

  private PathPattern(String text, Glob[] segments) {
    this.text = text;
    this.segments = segments;
    if (text.indexOf('*') < 0) {
      this.literal = text;
      this.literalIsPrefix = false;
    } else if (text.endsWith("/**") && text.indexOf('*') == text.length() - 2) {
      this.literal = text.substring(0, text.length() - 3);
      this.literalIsPrefix = true;
    } else {
      this.literal = null;
      this.literalIsPrefix = false;
    }
  }

  /**
   * Compiles one pattern.
   *
   * @throws IllegalArgumentException saying what is allowed
   */
  static PathPattern compile(String raw) {
    String s = raw.trim();
    if (s.isEmpty() || s.charAt(0) != '/') {
      throw new IllegalArgumentException("allowed " + EXAMPLES + " (starting with /)");
    }
    if (s.indexOf('?') >= 0 || s.indexOf('#') >= 0) {
      throw new IllegalArgumentException(
          "allowed " + EXAMPLES + " (paths are matched without the query string)");
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c <= ' ' || c == 0x7f) {
        throw new IllegalArgumentException("allowed " + EXAMPLES + " (no spaces)");
      }
    }
    String[] parts = s.split("/", -1);
    Glob[] segments = new Glob[parts.length];
    for (int i = 0; i < parts.length; i++) {
      if (parts[i].equals("**")) {
        segments[i] = ANY_SEGMENTS;
      } else if (parts[i].contains("**")) {
        throw new IllegalArgumentException(
            "allowed " + EXAMPLES + " (** must be a whole segment, as in /v1/**)");
      } else {
        segments[i] = Glob.of(parts[i]);
      }
    }
    return new PathPattern(s, segments);
  }

  /**
   * True when {@code path} matches. Matching stops at {@code ?} or {@code #}, so a query string
   * never counts; an empty or null path is taken as {@code /}.
   */
  boolean matches(String path) {
    if (path == null || path.isEmpty()) {
      path = "/";
    }
    int end = path.length();
    for (int i = 0; i < end; i++) {
      char c = path.charAt(i);
      if (c == '?' || c == '#') {
        end = i;
        break;
      }
    }
    if (literal != null) {
      return matchesLiteral(path, end);
    }
    int n = segments.length;
    int p = 0;
    int t = 0; // start of the current path segment; end + 1 once every segment was used
    int starP = -1;
    int starT = -1;
    while (t <= end) {
      int segEnd = segmentEnd(path, t, end);
      if (p < n && segments[p] == ANY_SEGMENTS) {
        starP = p++;
        starT = t;
        continue;
      }
      if (p < n && segments[p].matches(path, t, segEnd)) {
        p++;
        t = segEnd + 1;
        continue;
      }
      if (starP < 0) {
        return false;
      }
      // The last ** absorbs one more whole segment; retry the rest of the pattern after it.
      p = starP + 1;
      starT = segmentEnd(path, starT, end) + 1;
      t = starT;
    }
    while (p < n && segments[p] == ANY_SEGMENTS) {
      p++;
    }
    return p == n;
  }

  /** {@code /v1/charges} matches itself; {@code /v1/charges/**} also what lies below it. */
  private boolean matchesLiteral(String path, int end) {
    int n = literal.length();
    if (!literalIsPrefix) {
      return end == n && path.startsWith(literal);
    }
    return (end == n || (end > n && path.charAt(n) == '/')) && path.startsWith(literal);
  }

  private static int segmentEnd(String path, int from, int end) {
    for (int i = from; i < end; i++) {
      if (path.charAt(i) == '/') {
        return i;
      }
    }
    return end;
  }

  /** True when this pattern matches every path ({@code /**}). */
  boolean matchesEverything() {
    return segments.length == 2 && segments[0].toString().isEmpty() && segments[1] == ANY_SEGMENTS;
  }

  @Override
  public String toString() {
    return text;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof PathPattern && text.equals(((PathPattern) o).text);
  }

  @Override
  public int hashCode() {
    return text.hashCode();
  }
}
