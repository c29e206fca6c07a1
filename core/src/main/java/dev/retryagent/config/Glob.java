package dev.retryagent.config;

import java.util.Locale;

/**
 * A glob with one wildcard, {@code *}, matching any run of characters (also none). Compiled once
 * into its literal parts; matching checks the first part as a prefix and the last as a suffix, then
 * finds each middle part leftmost in between. With a single kind of wildcard the leftmost choice is
 * always right, so there is no backtracking, and nothing is allocated.
 */
final class Glob {
  private final String text;
  private final String[] parts;
  private final boolean ignoreCase;
  private final int minLength;

  private Glob(String text, boolean ignoreCase) {
    this.text = text;
    this.ignoreCase = ignoreCase;
    this.parts = text.split("\\*", -1);
    int literal = 0;
    for (String p : parts) {
      literal += p.length();
    }
    this.minLength = literal;
  }

  /** A case-sensitive glob. */
  static Glob of(String pattern) {
    return new Glob(pattern, false);
  }

  /** A glob matched in any case (ASCII and beyond, as {@link String#regionMatches}). */
  static Glob ignoringCase(String pattern) {
    return new Glob(pattern.toLowerCase(Locale.ROOT), true);
  }

  /** True when the glob matches {@code s[from, to)}. */
  boolean matches(String s, int from, int to) {
    int length = to - from;
    if (parts.length == 1) {
      return length == text.length() && region(s, from, text);
    }
    if (length < minLength) {
      return false;
    }
    String prefix = parts[0];
    String suffix = parts[parts.length - 1];
    if (!region(s, from, prefix) || !region(s, to - suffix.length(), suffix)) {
      return false;
    }
    int pos = from + prefix.length();
    int end = to - suffix.length();
    for (int k = 1; k < parts.length - 1; k++) {
      String part = parts[k];
      int found = indexOf(s, part, pos, end);
      if (found < 0) {
        return false;
      }
      pos = found + part.length();
    }
    return true;
  }

  boolean matches(String s) {
    return matches(s, 0, s.length());
  }

  /** True when every character is {@code *}. */
  boolean matchesEverything() {
    return minLength == 0 && !text.isEmpty();
  }

  private boolean region(String s, int at, String part) {
    return s.regionMatches(ignoreCase, at, part, 0, part.length());
  }

  private int indexOf(String s, String part, int from, int end) {
    for (int i = from; i + part.length() <= end; i++) {
      if (region(s, i, part)) {
        return i;
      }
    }
    return -1;
  }

  @Override
  public String toString() {
    return text;
  }
}
