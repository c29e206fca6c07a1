package dev.retryagent.internal;

/**
 * The number syntaxes {@link Units} reads, checked character by character. They were regular
 * expressions (kept in {@code SyntaxTest}, which compares the two on every input it makes): the
 * first regular expression a JVM compiles loads ~35 classes and spins a lambda, in {@code premain}
 * when the configuration file is read (issue 13). Digits are ASCII; runs are bounded so that no
 * input can make {@code BigDecimal} work hard.
 */
final class Syntax {
  private static final int MAX_DIGITS = 30; // before or after a decimal point
  private static final int MAX_WHOLE_TAIL = 40; // digits and '_' after a whole number's first

  private Syntax() {}

  /**
   * {@code (?:[0-9]{1,30}(?:\.[0-9]{1,30})?|\.[0-9]{1,30})}: {@code 2}, {@code 1.5}, {@code .5}.
   */
  static boolean isDecimal(String s) {
    int whole = digits(s, 0);
    if (whole > MAX_DIGITS) {
      return false;
    }
    if (whole == s.length()) {
      return whole > 0;
    }
    return s.charAt(whole) == '.' && fraction(s, whole + 1) == s.length();
  }

  /**
   * {@code [+-]?[0-9][0-9_]{0,40}}, each {@code _} followed by a digit: a whole number, {@code _}
   * between digits allowed.
   */
  static boolean isWhole(String s) {
    int i = sign(s);
    if (i >= s.length() || !isDigit(s.charAt(i))) {
      return false;
    }
    int end = wholeTail(s, i + 1);
    return end == s.length();
  }

  /**
   * {@code [+-]?(?:[0-9][0-9_]{0,40}(?:\.[0-9]{1,30})?|\.[0-9]{1,30})}, each {@code _} followed by
   * a digit.
   */
  static boolean isNumber(String s) {
    int i = sign(s);
    if (i < s.length() && isDigit(s.charAt(i))) {
      int end = wholeTail(s, i + 1);
      if (end < 0 || end == s.length()) {
        return end == s.length();
      }
      return s.charAt(end) == '.' && fraction(s, end + 1) == s.length();
    }
    return i < s.length() && s.charAt(i) == '.' && fraction(s, i + 1) == s.length();
  }

  /**
   * For {@code ([0-9]{1,30}(?:\.[0-9]{1,30})?)\s*([A-Za-z]*)}, the whole of {@code s}: where the
   * number ends, or -1 when {@code s} is not of that form.
   */
  static int sizeNumberEnd(String s) {
    int end = digits(s, 0);
    if (end == 0 || end > MAX_DIGITS) {
      return -1;
    }
    if (end < s.length() && s.charAt(end) == '.') {
      end = fraction(s, end + 1);
      if (end < 0) {
        return -1;
      }
    }
    for (int i = skipWhitespace(s, end); i < s.length(); i++) {
      char c = s.charAt(i);
      if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')) {
        return -1;
      }
    }
    return end;
  }

  /** Past the characters of {@code \s} ({@code [ \t\n\x0B\f\r]}) from {@code from}. */
  static int skipWhitespace(String s, int from) {
    int i = from;
    while (i < s.length() && " \t\n\u000B\f\r".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
    return i;
  }

  /**
   * {@code number} times {@code multiplier} (at least 1) when that is a whole number at most {@link
   * Long#MAX_VALUE}, else -1: the caller then computes it with {@code BigDecimal}, which on JDK 25
   * costs ~20 ms the first time (its initialisation starts the common {@code ForkJoinPool}), in
   * {@code premain} for any file with a duration or a size. {@code number} is unsigned digits with
   * an optional fraction ({@link #isDecimal}); at most 18 digits on either side of the point.
   */
  static long wholeProduct(String number, long multiplier) {
    int dot = number.indexOf('.');
    int wholeEnd = dot < 0 ? number.length() : dot;
    int fractionDigits = dot < 0 ? 0 : number.length() - dot - 1;
    if (wholeEnd > 18 || fractionDigits > 18) {
      return -1;
    }
    long whole = digitsValue(number, 0, wholeEnd);
    long fraction = digitsValue(number, wholeEnd + 1, number.length());
    if (whole > Long.MAX_VALUE / multiplier) {
      return -1;
    }
    long product = whole * multiplier;
    if (fraction == 0) {
      return product;
    }
    long scale = 1;
    for (int i = 0; i < fractionDigits; i++) {
      scale *= 10;
    }
    // fraction / scale * multiplier, whole: (fraction / g) * (multiplier / (scale / g)), where g
    // is what fraction and scale share, never overflows the way fraction * multiplier could.
    long g = gcd(fraction, scale);
    long denominator = scale / g;
    if (multiplier % denominator != 0) {
      return -1; // not a whole number
    }
    long factor = multiplier / denominator;
    long reduced = fraction / g;
    if (reduced > Long.MAX_VALUE / factor) {
      return -1;
    }
    long part = reduced * factor;
    return product <= Long.MAX_VALUE - part ? product + part : -1;
  }

  /** The value of the digits from {@code from} to {@code to} (at most 18); 0 for none. */
  private static long digitsValue(String s, int from, int to) {
    long v = 0;
    for (int i = from; i < to; i++) {
      v = v * 10 + (s.charAt(i) - '0');
    }
    return v;
  }

  private static long gcd(long a, long b) {
    while (b != 0) {
      long t = a % b;
      a = b;
      b = t;
    }
    return a;
  }

  private static int sign(String s) {
    return !s.isEmpty() && (s.charAt(0) == '+' || s.charAt(0) == '-') ? 1 : 0;
  }

  /** How many digits start at {@code from}. */
  private static int digits(String s, int from) {
    int i = from;
    while (i < s.length() && isDigit(s.charAt(i))) {
      i++;
    }
    return i - from;
  }

  /** The end of 1 to 30 digits at {@code from}, or -1. */
  private static int fraction(String s, int from) {
    int n = digits(s, from);
    return n >= 1 && n <= MAX_DIGITS ? from + n : -1;
  }

  /**
   * The end of 0 to 40 digits or underscores at {@code from}, or -1 when there are more or an
   * underscore is not followed by a digit: {@code _} groups digits ({@code 10_000}), so {@code 3_}
   * and {@code 1__0} are typing mistakes, not numbers.
   */
  private static int wholeTail(String s, int from) {
    int i = from;
    while (i < s.length() && (isDigit(s.charAt(i)) || s.charAt(i) == '_')) {
      if (s.charAt(i) == '_' && (i + 1 >= s.length() || !isDigit(s.charAt(i + 1)))) {
        return -1;
      }
      i++;
    }
    return i - from <= MAX_WHOLE_TAIL ? i : -1;
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }
}
