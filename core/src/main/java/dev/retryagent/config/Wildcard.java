package dev.retryagent.config;

/**
 * Glob matching with one wildcard, {@code *}, which matches any run of characters (also none). The
 * classic two-pointer algorithm: linear in practice, O(pattern x text) at worst, no backtracking
 * blow-up and no allocation.
 */
final class Wildcard {
  private Wildcard() {}

  /**
   * True when {@code pattern} matches {@code text[from, to)}.
   *
   * @param pattern lower case when {@code ignoreCase}
   */
  static boolean matches(String pattern, CharSequence text, int from, int to, boolean ignoreCase) {
    int pn = pattern.length();
    int p = 0;
    int t = from;
    int starP = -1;
    int starT = -1;
    while (t < to) {
      if (p < pn) {
        char pc = pattern.charAt(p);
        if (pc == '*') {
          starP = p++;
          starT = t;
          continue;
        }
        char tc = text.charAt(t);
        if (pc == tc || (ignoreCase && pc == toLowerAscii(tc))) {
          p++;
          t++;
          continue;
        }
      }
      if (starP < 0) {
        return false;
      }
      // The last star absorbs one more character; retry the rest of the pattern after it.
      p = starP + 1;
      t = ++starT;
    }
    while (p < pn && pattern.charAt(p) == '*') {
      p++;
    }
    return p == pn;
  }

  static char toLowerAscii(char c) {
    return c >= 'A' && c <= 'Z' ? (char) (c + ('a' - 'A')) : c;
  }
}
