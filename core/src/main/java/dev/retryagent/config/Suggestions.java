package dev.retryagent.config;

import java.util.Collection;
import java.util.Locale;

/** "Did you mean ...?": the known name nearest to a misspelt one. */
final class Suggestions {
  private Suggestions() {}

  /**
   * The candidate nearest to {@code unknown}, or null when none is close. Case, dashes and
   * underscores are ignored first ({@code max-attempts} -> {@code maxAttempts}); then a name it
   * abbreviates ({@code conf} -> {@code config}); then the smallest edit distance (adjacent swaps
   * count one) wins if it is at most a third of the name, at least 1.
   */
  static String nearest(String unknown, Collection<String> candidates) {
    String same = sameName(unknown, candidates);
    if (same != null) {
      return same;
    }
    String u = normalise(unknown);
    if (u.length() >= 3) {
      for (String c : candidates) {
        if (normalise(c).startsWith(u)) {
          return c; // An abbreviation: conf -> config.
        }
      }
    }
    if (unknown.length() > 64) {
      return null;
    }
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (String c : candidates) {
      int d = distance(u, normalise(c));
      if (d < bestDistance) {
        bestDistance = d;
        best = c;
      }
    }
    int allowed = Math.max(1, Math.min(u.length(), best == null ? 0 : best.length()) / 3);
    return bestDistance <= allowed ? best : null;
  }

  /** The candidate that differs only in case, dashes or underscores, or null. */
  static String sameName(String unknown, Collection<String> candidates) {
    String u = normalise(unknown);
    for (String c : candidates) {
      if (normalise(c).equals(u)) {
        return c;
      }
    }
    return null;
  }

  private static String normalise(String s) {
    StringBuilder out = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c != '-' && c != '_') {
        out.append(c);
      }
    }
    return out.toString().toLowerCase(Locale.ROOT);
  }

  /** Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps. */
  static int distance(String a, String b) {
    int[][] d = new int[a.length() + 1][b.length() + 1];
    for (int i = 0; i <= a.length(); i++) {
      d[i][0] = i;
    }
    for (int j = 0; j <= b.length(); j++) {
      d[0][j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        int v = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
        if (i > 1
            && j > 1
            && a.charAt(i - 1) == b.charAt(j - 2)
            && a.charAt(i - 2) == b.charAt(j - 1)) {
          v = Math.min(v, d[i - 2][j - 2] + 1);
        }
        d[i][j] = v;
      }
    }
    return d[a.length()][b.length()];
  }
}
