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
  private static final String ANY_SEGMENTS = new String("**");

  private final String text;
  private final String[] segments;

  private PathPattern(String text, String[] segments) {
    this.text = text;
    this.segments = segments;
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
    for (int i = 0; i < parts.length; i++) {
      if (parts[i].equals("**")) {
        parts[i] = ANY_SEGMENTS;
      } else if (parts[i].contains("**")) {
        throw new IllegalArgumentException(
            "allowed " + EXAMPLES + " (** must be a whole segment, as in /v1/**)");
      }
    }
    return new PathPattern(s, parts);
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
      if (p < n && Wildcard.matches(segments[p], path, t, segEnd, false)) {
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
    return segments.length == 2 && segments[0].isEmpty() && segments[1] == ANY_SEGMENTS;
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
