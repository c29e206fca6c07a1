package dev.retryagent.agent.tooling;

/**
 * A hook failure's cause as one short line for the agent's stderr and start-up lines: its class
 * name, then its message with line breaks and control characters folded to a blank and every word
 * that could carry a secret written {@code <redacted>}. Core's Sanitizer is not used here: these
 * lines may be written before the application's main (no static Patterns or lambdas there), and
 * from a transformer's catch of a StackOverflowError, where initialising a class as large as
 * Sanitizer on the exhausted stack could fail and leave it unusable for the JVM's life. Plain loops
 * and indexOf only; loaded only when a hook fails.
 */
public final class CauseLine {
  private static final String REDACTED = "<redacted>";

  /** Longest message looked at; a longer one is cut first, at a blank. */
  static final int MAX_INPUT_CHARS = 4096;

  /** Longest cleaned message kept (as core's Sanitizer keeps). */
  static final int MAX_CHARS = 300;

  private CauseLine() {}

  /** {@code cause}'s class name, then ": " and its cleaned message when it has one; "" for null. */
  public static String of(Throwable cause) {
    if (cause == null) {
      return "";
    }
    String name = cause.getClass().getName();
    String message;
    String clean;
    try {
      clean = clean(cause.getMessage());
    } catch (Throwable e) {
      clean = ""; // a getMessage that throws (or a message we cannot clean) says nothing
    }
    return clean.isEmpty() ? name : name + ": " + clean;
  }

  /** {@code text} on one line, its URLs without user-info and query, bounded; "" for null. */
  static String clean(String text) {
    if (text == null || text.isEmpty()) {
      return "";
    }
    boolean cut = false;
    if (text.length() > MAX_INPUT_CHARS) {
      // the word the cut would split is dropped whole: a URL cut before its '@' would show the
      // start of its password as a host
      int end = MAX_INPUT_CHARS;
      while (end > 0 && !blank(text.charAt(end))) {
        end--;
      }
      text = text.substring(0, end);
      cut = true;
    }
    String s = oneLine(text);
    s = withoutUrlSecrets(s);
    if (s.length() > MAX_CHARS) {
      // cut after cleaning: what is dropped can no longer uncover a secret
      s = s.substring(0, MAX_CHARS);
      cut = true;
    }
    return cut ? s + "..." : s;
  }

  /** Runs of blanks, line separators and control characters as one blank, trimmed. */
  private static String oneLine(String text) {
    StringBuilder b = new StringBuilder(text.length());
    boolean pendingBlank = false;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (blank(c)) {
        pendingBlank = b.length() > 0;
      } else {
        if (pendingBlank) {
          b.append(' ');
          pendingBlank = false;
        }
        b.append(c);
      }
    }
    return b.toString();
  }

  private static boolean blank(char c) {
    return c <= ' '
        || (c >= '\u007f' && c <= '\u009f')
        || c == '\u2028'
        || c == '\u2029'
        || c == '\u200e'
        || c == '\u200f'
        || (c >= '\u202a' && c <= '\u202e')
        || (c >= '\u2066' && c <= '\u2069');
  }

  /**
   * Each word of {@code s} (one line, split at blanks) that could carry a secret written {@code
   * <redacted>}: one holding '@' (user-info, with or without a scheme), '=' (a key's value, a
   * query's), '%' or '\\' (an encoded or escaped URL), '?' or '#' (a query, a fragment), a ':'
   * after a {@code ://} (a user's password, or a port), or a ':' inside it not followed by a digit
   * ({@code user:password}, not {@code host:8080}), and the word after one that names a credential
   * ({@code Bearer}, {@code Basic}, {@code password:}, ...). Stricter than core's Sanitizer, which
   * knows these forms one by one: these lines name a hook's failure, whose useful part is the
   * exception's class and its plain words.
   */
  private static String withoutUrlSecrets(String s) {
    StringBuilder b = new StringBuilder(s.length());
    boolean afterCredentialWord = false;
    int i = 0;
    while (i < s.length()) {
      int end = s.indexOf(' ', i);
      if (end < 0) {
        end = s.length();
      }
      if (afterCredentialWord || secretLike(s, i, end)) {
        b.append(REDACTED);
      } else {
        b.append(s, i, end);
      }
      afterCredentialWord = namesCredential(s, i, end);
      if (end < s.length()) {
        b.append(' ');
      }
      i = end + 1;
    }
    return b.toString();
  }

  private static boolean secretLike(String s, int from, int to) {
    int scheme = s.indexOf("://", from);
    boolean hasScheme = scheme >= 0 && scheme < to;
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (c == '@' || c == '=' || c == '%' || c == '\\' || c == '?' || c == '#') {
        return true;
      }
      if (c == ':' && i + 1 < to) {
        if (hasScheme && i > scheme) {
          return true;
        }
        if (!hasScheme && !Character.isDigit(s.charAt(i + 1))) {
          return true;
        }
      }
    }
    return false;
  }

  /** Words after which a secret comes as a word of its own. */
  private static final String[] CREDENTIAL_WORDS = {
    "bearer",
    "basic",
    "token",
    "token:",
    "password",
    "password:",
    "passwd:",
    "pwd:",
    "secret",
    "secret:",
    "authorization:",
    "proxy-authorization:",
    "cookie:",
    "set-cookie:",
    "apikey:",
    "api-key:",
    "x-api-key:"
  };

  private static boolean namesCredential(String s, int from, int to) {
    for (String w : CREDENTIAL_WORDS) {
      if (to - from == w.length() && s.regionMatches(true, from, w, 0, w.length())) {
        return true;
      }
    }
    return false;
  }
}
