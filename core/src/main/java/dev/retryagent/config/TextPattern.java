package dev.retryagent.config;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * A regular expression a value must match whole, matched without {@link java.util.regex} when it is
 * of the simplest form: a sequence of character classes, each with a quantifier ({@code
 * [A-Za-z0-9][A-Za-z0-9._-]{0,63}}, a route name). The schema's string keys are written as regular
 * expressions (the JSON schema carries them); the first one a JVM compiles costs ~35 classes and a
 * lambda, in {@code premain} where a file's route names are checked (issue 13). Any other form
 * (alternatives, groups, a character outside a class) is compiled by {@link Pattern}. {@code
 * TextPatternTest} compares the two on every string key of the schema.
 */
final class TextPattern {
  private final Pattern compiled; // null: the simple form below
  private final List<boolean[]> classes = new ArrayList<>(); // by ASCII character
  private final List<Boolean> negated = new ArrayList<>();
  private final List<int[]> bounds = new ArrayList<>(); // {min, max}

  private TextPattern(Pattern compiled) {
    this.compiled = compiled;
  }

  /** {@code regex}, in the simple form when it is one. */
  static TextPattern compile(String regex) {
    TextPattern simple = parse(regex);
    return simple != null ? simple : new TextPattern(Pattern.compile(regex));
  }

  /** The sequence {@code regex} is, or null when it is not of this simple form. */
  static TextPattern parse(String regex) {
    TextPattern seq = new TextPattern(null);
    int i = 0;
    int n = regex.length();
    while (i < n) {
      if (regex.charAt(i) != '[') {
        return null;
      }
      i++;
      boolean not = i < n && regex.charAt(i) == '^';
      if (not) {
        i++;
      }
      boolean[] in = new boolean[128];
      boolean first = true;
      while (true) {
        if (i >= n) {
          return null;
        }
        char c = regex.charAt(i);
        if (c == ']' && !first) {
          i++;
          break;
        }
        int[] lit = literal(regex, i);
        if (lit == null) {
          return null;
        }
        int from = lit[0];
        i = lit[1];
        if (i + 1 < n && regex.charAt(i) == '-' && regex.charAt(i + 1) != ']') {
          int[] to = literal(regex, i + 1);
          if (to == null || to[0] < from) {
            return null;
          }
          for (int x = from; x <= to[0]; x++) {
            in[x] = true;
          }
          i = to[1];
        } else {
          in[from] = true;
        }
        first = false;
      }
      int min = 1;
      int max = 1;
      if (i < n) {
        char q = regex.charAt(i);
        if (q == '*' || q == '+' || q == '?') {
          min = q == '+' ? 1 : 0;
          max = q == '?' ? 1 : Integer.MAX_VALUE;
          i++;
        } else if (q == '{') {
          int close = regex.indexOf('}', i);
          if (close < 0) {
            return null;
          }
          String[] parts = regex.substring(i + 1, close).split(",", -1);
          try {
            min = Integer.parseInt(parts[0]);
            max = parts.length == 1 ? min : Integer.parseInt(parts[1]);
          } catch (NumberFormatException e) {
            return null; // {2,} and the like
          }
          if (parts.length > 2 || max < min) {
            return null;
          }
          i = close + 1;
        }
      }
      if (i < n && "?+*{".indexOf(regex.charAt(i)) >= 0) {
        return null; // a lazy or possessive quantifier
      }
      seq.classes.add(in);
      seq.negated.add(not);
      seq.bounds.add(new int[] {min, max});
    }
    return seq;
  }

  /**
   * One character of a class at {@code i}: {@code {char, next index}}; an escape only for a
   * punctuation character or {@code \xHH}; null for anything else (letters' escapes are classes).
   */
  private static int[] literal(String regex, int i) {
    char c = regex.charAt(i);
    if (c == '\\') {
      if (i + 1 >= regex.length()) {
        return null;
      }
      char e = regex.charAt(i + 1);
      if (e == 'x' && i + 3 < regex.length()) {
        int code;
        try {
          code = Integer.parseInt(regex.substring(i + 2, i + 4), 16);
        } catch (NumberFormatException ex) {
          return null;
        }
        return code < 128 ? new int[] {code, i + 4} : null; // the classes are ASCII's
      }
      return e < 128 && !Character.isLetterOrDigit(e) ? new int[] {e, i + 2} : null;
    }
    if (c >= 128 || c == '[' || c == ']' || c == '&' && regex.startsWith("&&", i)) {
      return null; // unions, intersections: Pattern's ('^' here and a lone '&' are literal)
    }
    return new int[] {c, i + 1};
  }

  /** Whether the whole of {@code s} matches, as {@code Pattern.matcher(s).matches()} says. */
  boolean matches(String s) {
    return compiled != null ? compiled.matcher(s).matches() : matches(s, 0, 0);
  }

  private boolean matches(String s, int at, int atom) {
    if (atom == classes.size()) {
      return at == s.length();
    }
    int min = bounds.get(atom)[0];
    int max = bounds.get(atom)[1];
    int run = 0;
    while (run < max && at + run < s.length() && accepts(atom, s.charAt(at + run))) {
      run++;
    }
    for (int k = run; k >= min; k--) { // greedy, giving back one at a time
      if (matches(s, at + k, atom + 1)) {
        return true;
      }
    }
    return false;
  }

  private boolean accepts(int atom, char c) {
    boolean in = c < 128 && classes.get(atom)[c];
    return in != negated.get(atom);
  }
}
