package dev.retryagent.agent.tooling;

/**
 * A hook failure's cause as one short line for the agent's stderr and start-up lines: its class
 * name, then its message with line breaks and control characters folded to a blank and each URL's
 * user-info and query cut. Core's Sanitizer is not used here: these lines may be written before the
 * application's main (no static Patterns or lambdas there), and from a transformer's catch of a
 * StackOverflowError, where initialising a class as large as Sanitizer on the exhausted stack could
 * fail and leave it unusable for the JVM's life. Plain loops and indexOf only; loaded only when a
 * hook fails.
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
    try {
      message = cause.getMessage();
    } catch (RuntimeException e) {
      message = null; // a getMessage that throws says nothing
    }
    String clean = clean(message);
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
   * Each {@code scheme://...} word of {@code s} (one line, words split at blanks) with what comes
   * before its last '@' written {@code <redacted>@} (a password may hold '/' or '?', so the last
   * '@' of the word, not of the authority: a path's '@' costs the host, never a secret), and its
   * query and fragment cut.
   */
  private static String withoutUrlSecrets(String s) {
    int sep = s.indexOf("://");
    if (sep < 0) {
      return s;
    }
    StringBuilder b = new StringBuilder(s.length());
    int done = 0;
    while (sep >= 0) {
      int start = sep + 3;
      int end = s.indexOf(' ', start);
      if (end < 0) {
        end = s.length();
      }
      b.append(s, done, start);
      int from = start;
      int at = s.lastIndexOf('@', end - 1);
      if (at >= start) {
        b.append(REDACTED).append('@');
        from = at + 1;
      }
      int query = from;
      while (query < end && s.charAt(query) != '?' && s.charAt(query) != '#') {
        query++;
      }
      b.append(s, from, query);
      done = end;
      sep = s.indexOf("://", end);
    }
    b.append(s, done, s.length());
    return b.toString();
  }
}
