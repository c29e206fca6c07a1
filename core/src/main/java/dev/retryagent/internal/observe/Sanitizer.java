package dev.retryagent.internal.observe;

import dev.retryagent.config.PathMask;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Makes text from outside (exception messages, paths, route names) safe to print: no query strings,
 * fragments or user-info of anything URL-like, no values of credential or idempotency headers, no
 * line breaks or control characters (one event, one line), bounded length.
 *
 * <p>Exception messages are the dangerous part: events carry only method, scheme, host, port and
 * path, but a client may put a whole URL into a message (OkHttp: "unexpected end of stream on
 * http://host/...?token=x"). Over-redacting is preferred to leaking.
 */
public final class Sanitizer {
  /** Longest message kept, in characters; longer ones are cut and end in "...". */
  public static final int MAX_MESSAGE_CHARS = 300;

  /**
   * Longest host written whole, in characters: a DNS name's longest. The metrics count a longer one
   * as "other" (RetryMetrics); a line cuts it here ({@link #boundedHost}).
   */
  public static final int MAX_HOST_CHARS = 253;

  private static final String REDACTED = "<redacted>";

  /**
   * Longest part of a message that is cleaned; the rest is dropped before cleaning. Cleaning is not
   * linear in a message's length (a URL found rebuilds the text after it), and a server can make a
   * client's message long (OkHttp quotes a status line of up to 256 KiB): 400 KB of {@code x://}
   * took 10 s on the application's thread. Only {@link #MAX_MESSAGE_CHARS} are kept.
   */
  static final int MAX_CLEANED_CHARS = 4096;

  /** How far past its first blank a quoted URL is followed (see urlEnd). */
  private static final int MAX_URL_SPAN = 2048;

  /** A URL's {@code ://} percent-encoded, as a path segment or a query value holds one. */
  private static final String ENCODED_SEPARATOR = "%3A%2F%2F";

  // "Name: value" or "Name=value" up to the end of the line, for headers whose values are secret;
  // also with the name quoted, as JSON and maps print it ("Cookie":"a=b", 'Authorization' = x):
  // a server's error body or a client's request dump quoted in a message. Beside the standard ones,
  // the token and key headers of widely used APIs (OpenStack and others' X-Auth-Token, GitLab's
  // Private-Token, Google's X-Goog-Api-Key, AWS's X-Amz-Security-Token, Azure's subscription and
  // function keys, CSRF tokens): a header name followed by ':' is not caught by SECRET_KEYS, which
  // keeps a bare word after a bare key and a colon as prose. RFC 2965's Cookie2 and Set-Cookie2
  // (obsolete, still sent by some servers) carry the same session values.
  private static final Pattern SECRET_HEADERS =
      headerPattern(
          "authorization|proxy-authorization|cookie2?|set-cookie2?|idempotency-key|x-api-key|api-key"
              + "|x-auth-token|x-access-token|x-refresh-token|private-token|x-goog-api-key"
              + "|x-amz-security-token|ocp-apim-subscription-key|x-functions-key|x-csrf-token"
              + "|x-xsrf-token");
  // HttpURLConnection quotes a header value it refuses, without the header's name, as the end of
  // its message ("Illegal character(s) in message header value: Bearer a\r\nb"), the refused line
  // break inside it: redacted to the end of the text, not of the line.
  private static final Pattern REFUSED_HEADER_VALUES =
      Pattern.compile("(?is)\\b(message header)( value:\\s*).*");
  // A credential as a key and its value: password="a b", 'client_secret': 'x', "token": "y",
  // api_key=z. A quoted value is one up to its closing quote (blanks and escaped quotes inside),
  // an unquoted one a word: redacted word by word, a password with a blank kept its second half.
  private static final Pattern SECRET_KEYS =
      Pattern.compile(
          "(?i)(?<![\\w.-])((?:\\\\)*[\"']|)([\\w.-]*(?:password|passwd|secret|token|api[_-]?key))\\1"
              + "(\\s*[:=]\\s*)"
              // A JSON text escaped twice or more ({\\\"password\\\":\\\"a b\\\"}): its quotes are
              // backslashes and a quote; the value runs to the next quote, the closing one's.
              // So a quote escaped ({\\'password\\':\\'a b\\'}) is written.
              + "((?:\\\\){2,}\"[^\"\\r\\n]*+\"?|\\\\+'[^'\\r\\n]*+'?|"
              // Each quoted value as "unrolled": no alternation repeated per character, which
              // recurses per character in java.util.regex (a long value overflowed the stack).
              // A JSON text quoted in a JSON string escapes its quotes: {\"password\":\"a\"}.
              // Inside it, \\\" (an escaped backslash, then an escaped quote) is a quote of the
              // inner text's value, and \\\\ a backslash of it: neither ends the value.
              + "\\\\\"[^\\\\\\r\\n]*+(?:(?:\\\\\\\\\\\\\\\\|\\\\\\\\\\\\\"|\\\\\\\\(?=[^\\\\\\r\\n])"
              + "|\\\\(?=[^\\\\\"\\r\\n]))[^\\\\\\r\\n]*+)*+(?:\\\\\")?"
              + "|\"[^\"\\\\\\r\\n]*+(?:\\\\.[^\"\\\\\\r\\n]*+)*+\"?"
              + "|'[^'\\\\\\r\\n]*+(?:\\\\.[^'\\\\\\r\\n]*+)*+'?|\\S+)");
  // Credentials written without a header name: "Bearer abc", "Basic dXNlcjpw".
  private static final Pattern SCHEME_CREDENTIALS =
      Pattern.compile("(?i)\\b(bearer|basic|digest)\\s+[^\\s,;\"']+");
  private static final Pattern BLANKS = Pattern.compile("\\s{2,}");
  private static final Map<String, Pattern> EXTRA_HEADERS = new ConcurrentHashMap<>();

  private Sanitizer() {}

  /**
   * The value of a header among {@code alternatives}, up to the end of the line; or, as OkHttp 3
   * quotes one it refuses ("Unexpected char 0x0a at 12 in Cookie value: a=b\nc=d"), as the end of
   * the message with the refused line break inside it, up to the end of the text. Replaced by
   * {@code $1$2$3<redacted>} (the group of the form that did not match is empty).
   */
  private static Pattern headerPattern(String alternatives) {
    return Pattern.compile(
        "(?i)\\b("
            + alternatives
            // An escaped quote too: a JSON text quoted inside a JSON string ({\"Cookie\":\"a\"}),
            // or escaped again ({\\\"Cookie\\\":...}).
            + ")(?:((?:\\\\)*[\"']?\\s*[:=]\\s*)[^\\r\\n]*|( value:\\s*)(?s:.*))");
  }

  /**
   * {@code SimpleName: message}, or the simple name alone, with the message sanitised. Never throws
   * (a broken {@code getMessage()} is treated as no message).
   *
   * @param secretHeader one more header whose value must not appear (the route's idempotency-key
   *     header), or null
   */
  public static String exception(Throwable error, boolean fullClassName, String secretHeader) {
    return exception(error, fullClassName, secretHeader, PathMask.NONE);
  }

  /**
   * As {@link #exception(Throwable, boolean, String)}, with the paths of URL-like words in the
   * message also masked by {@code mask} ({@code agent.redact.pathSegments}).
   */
  public static String exception(
      Throwable error, boolean fullClassName, String secretHeader, PathMask mask) {
    return exception(error, fullClassName, secretHeader, mask, null);
  }

  /**
   * As {@link #exception(Throwable, boolean, String, PathMask)}, for the failure of a call to
   * {@code host} (the request's, as the client gave it; null for none): what a client left in that
   * host of a URL's user-info ({@link #host}) is written {@code <redacted>} wherever the message
   * names the host. Apache HttpClient takes {@code ss@h.example} as the host of {@code
   * http://user:pa@ss@h.example/}, and the JDK's resolver, Apache's connect failure and its TLS
   * host check name it bare ({@code ss@h.example: Name or service not known}, {@code Connect to
   * ss@h.example:443 [ss@h.example/10.0.0.1] failed}), no URL around it to strip a user-info from.
   */
  public static String exception(
      Throwable error, boolean fullClassName, String secretHeader, PathMask mask, String host) {
    if (error == null) {
      return "";
    }
    Class<?> c = error.getClass();
    String name = fullClassName ? c.getName() : simpleName(c);
    String message;
    try {
      message = error.getMessage();
    } catch (Throwable e) {
      // Any: an Error from a broken getMessage() (an AssertionError, a StackOverflowError of a
      // recursive one) thrown here would leave a log line's or a hook's catch (Bridge.dispatch's
      // internal-error line) and reach the application's call (r35).
      message = null;
    }
    String clean = message(withoutHostUserInfo(message, host), secretHeader, mask);
    return clean.isEmpty() ? name : name + ": " + clean;
  }

  /**
   * {@code text} with each occurrence of what comes before {@code host}'s last {@code @} (and that
   * {@code @}) written {@code <redacted>@}, in any case (a client may write the host lower case);
   * as it was when the host has none. Done on the message as it came, before it is cleaned, cut or
   * its blanks folded, which could leave a part of it no longer matching.
   */
  static String withoutHostUserInfo(String text, String host) {
    int at = host == null ? -1 : host.lastIndexOf('@');
    if (text == null || at <= 0) {
      return text; // no user-info, or an empty one: nothing of a password to hide
    }
    String userInfo = host.substring(0, at + 1);
    int n = userInfo.length();
    StringBuilder b = null;
    int done = 0;
    int i = 0;
    while (i + n <= text.length()) {
      if (text.regionMatches(true, i, userInfo, 0, n)) {
        if (b == null) {
          b = new StringBuilder(text.length());
        }
        b.append(text, done, i).append(REDACTED).append('@');
        i += n;
        done = i;
      } else {
        i++;
      }
    }
    return b == null ? text : b.append(text, done, text.length()).toString();
  }

  private static String simpleName(Class<?> c) {
    String s = c.getSimpleName();
    return s.isEmpty() ? c.getName() : s;
  }

  /**
   * A sanitised message: credential headers redacted, URL-like words without query, fragment or
   * user-info, control characters replaced by spaces, at most {@value #MAX_MESSAGE_CHARS} chars.
   * Null gives "".
   */
  public static String message(String text, String secretHeader) {
    return message(text, secretHeader, PathMask.NONE);
  }

  /** As {@link #message(String, String)}, with URL paths in the text masked by {@code mask}. */
  public static String message(String text, String secretHeader, PathMask mask) {
    if (text == null || text.isEmpty()) {
      return "";
    }
    try {
      return cleaned(text, secretHeader, mask);
    } catch (RuntimeException | StackOverflowError e) {
      // A bug of the cleaning (r34: a value of backslashes only threw) must not throw inside a
      // log line or a failure's handling, nor write the text as it came: nothing of it is written.
      return UNPRINTABLE;
    }
  }

  /** What {@link #message} writes of a text its cleaning failed on. */
  static final String UNPRINTABLE = "<unprintable message>";

  private static String cleaned(String text, String secretHeader, PathMask mask) {
    String s = REFUSED_HEADER_VALUES.matcher(cleanable(text)).replaceAll("$1$2" + REDACTED);
    s = SECRET_HEADERS.matcher(s).replaceAll("$1$2$3" + REDACTED);
    s = secretValues(s);
    if (secretHeader != null && !secretHeader.isEmpty()) {
      s = extraHeader(secretHeader).matcher(s).replaceAll("$1$2$3" + REDACTED);
    }
    s = SCHEME_CREDENTIALS.matcher(s).replaceAll("$1 " + REDACTED);
    s = stripUrlParts(s, mask);
    s = BLANKS.matcher(oneLine(s)).replaceAll(" ").trim();
    if (s.length() > MAX_MESSAGE_CHARS) {
      s = s.substring(0, MAX_MESSAGE_CHARS) + "...";
    }
    return s;
  }

  /**
   * {@code text} when it is at most {@link #MAX_CLEANED_CHARS} long; else its start, cut back to
   * the blank before the word the cut would split, then " ...". That word is dropped whole: a URL
   * cut before its '@' would show its user-info as a host and port ({@code http://user:secr}), a
   * key cut before its '=' its value as a word. So is a URL that may go on past blanks to the cut
   * ({@link #beforeUrlRunningPast}).
   */
  static String cleanable(String text) {
    if (text.length() <= MAX_CLEANED_CHARS) {
      return text;
    }
    int end = MAX_CLEANED_CHARS;
    while (end > 0 && !Character.isWhitespace(text.charAt(end))) {
      end--;
    }
    // Until neither moves it: a span dropped brings the cut before an earlier one that ran past
    // the new cut only (a quoted one whose closing quote lay between them). Rare past one round;
    // after a few the cut goes to its line's start, which no span crosses: bounded time.
    int to = Math.min(text.length(), end + MAX_CLEANED_CHARS);
    int[] found = newFound();
    for (int round = 0; ; round++) {
      int cut = beforeLooseSpanRunningPast(text, beforeUrlRunningPast(text, end), to, found);
      if (cut == end) {
        return text.substring(0, end) + " ...";
      }
      end = round < 4 ? cut : lineStart(text, cut);
    }
  }

  /** Where the line of {@code s[at]} starts. */
  private static int lineStart(String s, int at) {
    int i = at;
    while (i > 0 && !isLineBreak(s.charAt(i - 1))) {
      i--;
    }
    return i;
  }

  /**
   * {@code end}, or the start of the first word on its line that begins a span running past it
   * without a scheme ({@link #looseUrlEnd}: {@code unexpected url: u:correct horse@h/x}, {@code
   * 'u:pw word@h'}, {@code url=//alice:pw word@h/x}): a cut inside it would leave no {@code @}, and
   * the user and the password's first words would be written as they are ({@code u:correct}).
   * Decided on the text past the cut too, up to {@code to}: such a word's span runs past the cut
   * when its look-ahead finds an {@code @} before a stop or a line break (a quoted one's closing
   * quote not before the cut), or finds none of them before {@code to} with text left after it. Not
   * bound by {@link #MAX_URL_SPAN}: a secret value redacted before urlEnd runs brings a farther
   * {@code @} near.
   */
  private static int beforeLooseSpanRunningPast(String text, int end, int to, int[] found) {
    int i = lineStart(text, end);
    while (i < end) {
      if (isDelimiter(text.charAt(i))) {
        i++;
        continue;
      }
      int start = i;
      i = Math.min(wordEnd(text, i), end);
      int body = looseBody(text, start, i, lastAfterColon(text, start));
      if (body == RELATIVE || body >= 0 && loosePastCut(text, start, i, end, to, found)) {
        return start;
      }
    }
    return end;
  }

  /**
   * Whether the span {@link #looseUrlEnd} gives the word {@code text[start, wordEnd)} (one {@link
   * #looseBody} takes) may reach past {@code cut}, no line break between them.
   */
  private static boolean loosePastCut(
      String text, int start, int wordEnd, int cut, int to, int[] found) {
    char first = text.charAt(start);
    boolean quoted = first == '"' || first == '\'';
    int at = wordEnd;
    if (quoted) {
      // Stops at the next quote of its kind, which the next such word opens with: no overlap.
      while (at < to
          && !(text.charAt(at) == first && isClosingQuote(text, at))
          && !isOfKind(text, at, AT_OR_STOP)) {
        at++;
      }
    } else {
      at = nextOf(text, wordEnd, to, AT_OR_STOP, found);
    }
    if (at >= to) {
      return to < text.length(); // nothing found in reach: what lies further is not known
    }
    if (text.charAt(at) != '@') {
      return false; // a stop, a line break or its closing quote first: the span is the word
    }
    if (!quoted) {
      return true; // to its line's end, past the cut
    }
    for (int j = at + 1; j <= cut && j < text.length(); j++) {
      if (text.charAt(j) == first && isClosingQuote(text, j) || isLineBreak(text.charAt(j))) {
        return false; // closed at or before the cut
      }
    }
    return true;
  }

  /**
   * {@code end}, or the start of the last URL before it when that URL may go on past {@code end}: a
   * URL quoted, or written first or after {@code ": "}, is followed past blanks to the end of its
   * line ({@link #urlEnd}) and loses everything up to its last {@code @}, so a cut at a blank
   * inside its user-info ({@code "http://alice:correct horse@h/"}) would leave no {@code @}, and
   * the user and half the password would read as a host. Such a URL is dropped whole, from its
   * scheme's name (or its {@code //}), unless a line break lies between it and the cut:
   * over-redacting near the cut, which a message's {@value #MAX_MESSAGE_CHARS} characters rarely
   * reach. Not only when it is within {@link #MAX_URL_SPAN} of the cut: a secret value redacted
   * between them before urlEnd runs brings the cut nearer. Only the last URL matters: an earlier
   * one's user-info ends before the next URL's separator ({@link #nextUrl}), which lies before the
   * new cut's scheme's name.
   */
  private static int beforeUrlRunningPast(String text, int end) {
    int separator =
        Math.max(text.lastIndexOf("://", end - 3), text.lastIndexOf(":\\/\\/", end - 5));
    // A scheme-relative URL (//user:pa ss@h/x) written last: a word starting with "//". Its
    // user-info does not end at a later URL's separator, nor an earlier URL's at it: both looked
    // at.
    for (int i = end - 2; i > separator; i--) {
      if (text.charAt(i) == '/'
          && text.charAt(i + 1) == '/'
          && (i == 0 || isDelimiter(text.charAt(i - 1)))
          && runsOn(text, i, end)) {
        return beforeUrlRunningPast(text, i);
      }
    }
    if (separator < 0) {
      return end;
    }
    int start = separator;
    while (start > 0 && isSchemeChar(text.charAt(start - 1))) {
      start--;
    }
    return runsOn(text, start, end) ? start : end;
  }

  /**
   * Whether {@code s[start]} follows a colon and blanks: {@code ": "}, or a tab, or more than one
   * blank (r32: {@code failed:\tu:pw word@h/x} and {@code failed: http://u:pw word@h/x} wrote the
   * password's first word). Walks back over the blanks before one word only: linear in all.
   */
  private static boolean lastAfterColon(String s, int start) {
    int i = start - 1;
    // Any blank a word ends at, not only ' ' and a tab: an em space or an ideographic one
    // (failed:\u2003u:pw word@h/x wrote the password, r35); a line break is none.
    while (i >= 0 && isDelimiter(s.charAt(i)) && !isLineBreak(s.charAt(i))) {
      i--;
    }
    return i < start - 1 && i >= 0 && s.charAt(i) == ':';
  }

  /** Whether the URL at {@code start} may go on past blanks ({@link #urlEnd}) up to {@code end}. */
  private static boolean runsOn(String text, int start, int end) {
    char before = start > 0 ? text.charAt(start - 1) : 0;
    boolean runsOn =
        start == 0
            || before == '"'
            || before == '\''
            || before == '='
            // Bracketed: followed to the closing bracket (<http://alice:pw word@h/x>).
            || before == '<'
            || before == '('
            || isDelimiter(before) && lastAfterColon(text, start);
    if (!runsOn) {
      return false; // it ends at its word's end, a blank at or before the cut
    }
    // Quoted or bracketed, it ends at its closer, as urlEnd ends it: one before the cut closes it
    // there (r34: a line of quoted URLs over 4 KiB lost URL after URL, then all but "..."). A
    // quote is looked for from the scheme's name, as urlEnd does; a scheme-relative URL's quote
    // from its word's end, as looseUrlEnd does.
    char closer = 0;
    int closerFrom = end;
    boolean relative = text.startsWith("//", start);
    if (before == '"' || before == '\'') {
      closer = before;
      closerFrom = relative ? Math.min(wordEnd(text, start), end) : start;
    } else if ((before == '<' || before == '(') && !relative) {
      // urlEnd follows a bracketed URL past its word only when the word ends in a user-info's
      // ':' part (a ':' after the separator, no '/'), then to the closing bracket after the word.
      int word = Math.min(wordEnd(text, start), end);
      int auth = start;
      while (auth < word && isSchemeChar(text.charAt(auth))) {
        auth++;
      }
      auth += text.startsWith("://", auth) ? 3 : 5;
      boolean colon = false;
      for (int i = auth; i < word; i++) {
        if (text.charAt(i) == '/') {
          return false; // a path: the URL is its word, which ends before the cut
        }
        colon |= text.charAt(i) == ':';
      }
      if (!colon) {
        return false;
      }
      closer = before == '<' ? '>' : ')';
      closerFrom = word;
    }
    for (int i = start; i < end; i++) {
      char c = text.charAt(i);
      if (c == '\n' || c == '\r') {
        return false; // it ends at the line's end; no redaction before urlEnd removes a \n
      }
      if (c == closer
          && i >= closerFrom
          && (closer == ')' || closer == '>' || isClosingQuote(text, i))) {
        return false; // closed at or before the cut
      }
    }
    return true;
  }

  /**
   * The values of {@link #SECRET_KEYS} redacted, a quoted one whole with its quotes kept. A bare
   * word after a bare key and a colon is prose ("invalid token: expired"), not a credential, unless
   * the key is written as a header's name, with a '-' ({@code X-Vault-Token: hvs.x}).
   */
  private static String secretValues(String s) {
    Matcher m = SECRET_KEYS.matcher(s);
    if (!m.find()) {
      return s;
    }
    StringBuilder b = new StringBuilder(s.length());
    int last = 0;
    int from = 0;
    while (from <= s.length() && m.find(from)) {
      from = m.end();
      String value = m.group(4);
      char first = value.charAt(0);
      int slashes = 0;
      while (slashes < value.length() && value.charAt(slashes) == '\\') {
        slashes++;
      }
      // A value of backslashes only (password=\) opens no quote: a plain value, redacted below.
      boolean escapedQuote = slashes < value.length();
      if (escapedQuote && (slashes >= 2 || slashes == 1 && value.charAt(1) == '\'')) {
        // Escaped twice or more (\\\"a b\\\"), or a single quote escaped (\'a b\'): written
        // \\\"<redacted>\\\", its quotes kept.
        String quote = value.substring(0, slashes + 1);
        b.append(s, last, m.start(4)).append(quote).append(REDACTED);
        if (slashes >= 2 && value.charAt(slashes) == '"') {
          // The value ends at its own closing quote, not at the first quote: a quote of its text
          // is escaped once more (7 backslashes before it where the value's quotes have 3), and
          // what followed it was written (r33).
          int close = closingQuote(s, m.start(4) + slashes + 1, slashes);
          if (close >= 0) {
            b.append(quote);
            from = close + 1;
          } else {
            // Unclosed: redacted to the line's real end, as closingQuote looked for the quote
            // there (lineEnd stops MAX_URL_SPAN past, and the rest of a long value was written).
            from = m.start(4);
            while (from < s.length() && !isLineBreak(s.charAt(from))) {
              from++;
            }
          }
          last = from;
          continue;
        }
        if (value.length() > quote.length()
            && value.charAt(value.length() - 1) == quote.charAt(slashes)) {
          b.append(quote);
        }
        last = m.end();
        continue;
      }
      if (value.startsWith("\\\"")) {
        // A quote escaped in JSON (\"a b\"): written \"<redacted>\", as a quoted value is.
        b.append(s, last, m.start(4)).append("\\\"").append(REDACTED);
        if (value.length() > 3 && value.endsWith("\\\"")) {
          b.append("\\\"");
        }
        last = m.end();
        continue;
      }
      boolean quoted = first == '"' || first == '\'';
      // A key with a '-' is a header's name (X-Vault-Token: ..., Client-Secret: ...), no prose.
      if (!quoted
          && m.group(1).isEmpty()
          && m.group(3).indexOf(':') >= 0
          && m.group(2).indexOf('-') < 0) {
        continue;
      }
      b.append(s, last, m.start(4));
      if (quoted) {
        b.append(first).append(REDACTED);
        if (value.length() > 1 && value.charAt(value.length() - 1) == first) {
          b.append(first);
        }
      } else {
        b.append(REDACTED);
      }
      last = m.end();
    }
    return last == 0 ? s : b.append(s, last, s.length()).toString();
  }

  /**
   * The index of the quote that closes a value opened by {@code slashes} backslashes and a quote (a
   * JSON text escaped again and again: 3 for twice, 7 for three times), looked for from {@code
   * from} to the line's end; or -1. A quote of the value's own text is escaped once more than its
   * quotes, and a backslash of it so too: a run of backslashes before a quote closes the value when
   * it is the closing quote's {@code slashes} after whole pairs of the text's escaped backslashes
   * ({@code 2 * (slashes + 1)} each); any other run is the text's.
   */
  private static int closingQuote(String s, int from, int slashes) {
    for (int i = from; i < s.length() && s.charAt(i) != '\r' && s.charAt(i) != '\n'; i++) {
      if (s.charAt(i) != '"') {
        continue;
      }
      int n = 0;
      while (i - n - 1 >= from && s.charAt(i - n - 1) == '\\') {
        n++;
      }
      if (n >= slashes && (n - slashes) % (2 * (slashes + 1)) == 0) {
        return i;
      }
    }
    return -1;
  }

  private static Pattern extraHeader(String header) {
    String key = header.toLowerCase(Locale.ROOT);
    Pattern p = EXTRA_HEADERS.get(key);
    if (p == null) {
      p = headerPattern(Pattern.quote(key));
      // Header names come from the configuration: a handful. The bound only guards the cache.
      if (EXTRA_HEADERS.size() < 64) {
        EXTRA_HEADERS.putIfAbsent(key, p);
      }
    }
    return p;
  }

  /**
   * A host as the agent writes it (log lines, dead letters, metrics, breaker keys, spans): a host
   * never holds an {@code @}, so what comes before its last one is what a client left in it of a
   * URL's user-info, written {@code <redacted>}. Apache HttpClient (4.5 and 5.x) cuts the user-info
   * of {@code http://user:pa@ss@h.example/} at its first {@code @} and takes {@code ss@h.example},
   * part of the password, as the host; written {@code <redacted>@h.example}, still a host of its
   * own. Null stays null.
   */
  public static String host(String host) {
    int at = host == null ? -1 : host.lastIndexOf('@');
    return at < 0 ? host : REDACTED + host.substring(at);
  }

  /**
   * A circuit breaker's key as log lines and {@code CircuitBreakerOpenException}'s message write
   * it: a route-scoped one's name ({@code route:NAME}) as {@link #routeName} writes it ({@code
   * route:"Payments API"}), a host's on one line and cut past {@value #MAX_HOST_CHARS} characters
   * ({@link #boundedHost}). One place, so that both write a key the same. Null gives "".
   */
  public static String breakerKey(String key) {
    return key != null && key.startsWith(ROUTE_KEY)
        ? ROUTE_KEY + routeName(key.substring(ROUTE_KEY.length()))
        : oneLine(boundedHost(key));
  }

  private static final String ROUTE_KEY = "route:";

  /**
   * {@code text} ({@code host}, {@code host:port} or {@code scheme://host:port}) with a host over
   * {@value #MAX_HOST_CHARS} characters cut there and followed by {@code ...}: no DNS name is that
   * long, and a 64 KB host (from a URL an attacker chose) is not written whole into every retry and
   * give-up line and dead letter. As it was otherwise (a route key {@code route:NAME} included).
   */
  public static String boundedHost(String text) {
    if (text == null || text.length() <= MAX_HOST_CHARS) {
      return text; // the common case: no host part can be too long
    }
    if (text.startsWith("route:")) {
      return text;
    }
    int scheme = text.indexOf("://");
    int start = scheme < 0 ? 0 : scheme + 3;
    int end = text.length();
    int colon = text.lastIndexOf(':');
    if (colon > start && colon < end - 1) {
      boolean port = true;
      for (int i = colon + 1; i < end && port; i++) {
        port = text.charAt(i) >= '0' && text.charAt(i) <= '9';
      }
      if (port) {
        end = colon;
      }
    }
    if (end - start <= MAX_HOST_CHARS) {
      return text;
    }
    return text.substring(0, start + MAX_HOST_CHARS) + "..." + text.substring(end);
  }

  /**
   * A path without query or fragment (in case an adapter passed one), without path parameters (a
   * servlet container's {@code ;jsessionid=...} is a session's credential, as a cookie is), and on
   * one line.
   */
  public static String path(String path) {
    return path(path, PathMask.NONE);
  }

  /** As {@link #path(String)}, with the segments {@code mask} matches written masked. */
  public static String path(String path, PathMask mask) {
    return path(path, mask, false);
  }

  /**
   * As {@link #path(String, PathMask)}, for a path whose request has an {@code @} in its query or
   * fragment when {@code atPastPath} ({@link dev.retryagent.engine.RequestInfo#atPastPath}): the
   * path is then written {@code /<redacted>}, as if that {@code @} were the path's last ({@link
   * #withoutAmbiguousUserInfo}).
   */
  public static String path(String path, PathMask mask, boolean atPastPath) {
    if (path == null) {
      return "";
    }
    if (path.length() > MAX_CLEANED_CHARS) {
      return cutPath(path, mask, atPastPath);
    }
    if (!path.startsWith("/") && path.contains("://")) {
      // A whole URL where a path was expected (Apache HttpClient 5 keeps a URI it could not parse
      // as the request's path): its user-info goes too, as in a message.
      if (atPastPath) {
        // The adapter cut it at its first '?' or '#', and an '@' lies past the cut: a password
        // with a '?' or '#' (http://user:pa?ss@h/x) was cut in two, its '@' and host cut off, and
        // what is left (http://user:pa) has no user-info left to find. Nothing of it is written
        // (the path is at most MAX_CLEANED_CHARS long here).
        return oneLine(path.substring(0, path.indexOf("://") + 3) + REDACTED);
      }
      return oneLine(cleanWord(path, mask));
    }
    // The user-info of a URL inside it first: its password may hold the '?' or '#' cut at below.
    String p = withoutEncodedUserInfo(path);
    int end = p.length();
    int q = p.indexOf('?');
    if (q >= 0) {
      end = q;
    }
    int f = p.indexOf('#');
    if (f >= 0 && f < end) {
      end = f;
    }
    // The path's own encoded '?' (/a/b%3Ftoken%3DS, or encoded twice, %253F), something after it:
    // a query a client encoded into the path, dropped as a message's word drops it; a lone
    // trailing one (/files/what%3F) hides nothing and is kept.
    int cut = encodedQueryCut(p, 0, end, false);
    if (cut >= 0) {
      end = cut;
    }
    int nested = nextSeparator(p, 0);
    if (nested >= 0 && nested < end) {
      // A URL inside the path, percent-encoded (/fetch/http%3A%2F%2Fh%2Fx%3Ftoken%3DS): its query
      // and fragment are encoded too. Found by index: a path with nothing to drop allocates
      // nothing here.
      cut = encodedQueryCut(p, nested, end, true);
      if (cut >= 0) {
        end = cut;
      }
    }
    // An '@' in the query or fragment cut off here is past the path, as the request's own is.
    boolean past = atPastPath || p.indexOf('@', end) >= 0;
    return oneLine(
        masked(withoutPathParameters(withoutAmbiguousUserInfo(p.substring(0, end), past)), mask));
  }

  /**
   * {@code path} (over {@link #MAX_CLEANED_CHARS} long) cut after its last {@code /} within that
   * length, written as {@link #path(String, PathMask, boolean)} writes it, then {@code ...}: a path
   * comes from the request, which an attacker may have chosen, and is written on the caller's
   * thread into every retry and give-up line, dead letter and span. Cut at a {@code /}, a segment a
   * mask or a known token's shape matches whole is not matched in part. When the part cut off holds
   * an {@code @} (or {@code %40}), the user-info of the path ({@link #withoutAmbiguousUserInfo}) or
   * of a URL inside it ({@link #withoutNestedUserInfo}) may end there, and what is kept of it would
   * have no {@code @} left to show it is one: nothing but the scheme or the first {@code /} is
   * written.
   */
  private static String cutPath(String path, PathMask mask, boolean atPastPath) {
    int slash = path.lastIndexOf('/', MAX_CLEANED_CHARS - 1);
    int scheme = path.startsWith("/") ? -1 : path.indexOf("://");
    // A scheme only when it is one: what comes before "://" is written as it is (r25: 1 MB of it;
    // r26: admin:hunter2@h/cb?next=https://...).
    boolean url = scheme > 0 && scheme < MAX_URL_SPAN && isScheme(path, scheme);
    if (path.indexOf('@', slash + 1) >= 0
        || lastIndexOfIgnoreCase(path, "%40", slash + 1, path.length()) >= 0) {
      return url
          ? oneLine(path.substring(0, scheme + 3) + REDACTED + "...")
          : "/" + REDACTED + "...";
    }
    return path(path.substring(0, slash + 1), mask, atPastPath) + "...";
  }

  /**
   * Whether {@code s}'s first {@code end} characters are a URL scheme's (a letter, then
   * [a-z0-9+.-]).
   */
  private static boolean isScheme(String s, int end) {
    if (!Character.isLetter(s.charAt(0)) || s.charAt(0) > 'z') {
      return false;
    }
    for (int i = 1; i < end; i++) {
      if (!isSchemeChar(s.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  /**
   * {@code path} with {@link #withoutKnownTokens} applied, then {@code mask}: first, so that a
   * configured mask of a segment the known shapes look at does not hide their shape.
   */
  private static String masked(String path, PathMask mask) {
    return mask.apply(withoutKnownTokens(path));
  }

  /**
   * {@code path} with the path segments that are credentials in the URLs of widely used APIs
   * written {@value PathMask#MASK}, whatever {@code agent.redact.pathSegments} says: a Telegram bot
   * token ({@code /bot123456:AA...}, a segment {@code bot}, digits, {@code :} and 30 or more of
   * {@code [A-Za-z0-9_-]}), a Slack incoming webhook's secret ({@code /services/T.../B.../secret}:
   * the segment after {@code services}, a {@code T...} and a {@code B...} one, 16 or more of those
   * characters) and a Discord webhook's token ({@code /webhooks/<digits>/token}, 30 or more, a UUID
   * excepted). Such a URL is the credential whole, and a retry or give-up line of a call to it
   * would write it. The shapes are narrow, so that a path like them that holds no token is rarely
   * masked. Segments end at a {@code /}, also escaped as JSON writes it ({@code \/}), or at an
   * encoded one ({@code %2F}, a URL nested in a path), and the Telegram {@code :} may be {@code
   * %3A}; what follows the token's characters in its segment (a message's {@code `}, {@code |}, an
   * ellipsis or {@code ": 503"}) is kept. Walked by index: a path without {@code bot} and a digit,
   * {@code services/T} or {@code webhooks/} and a digit is returned at once, and one that has them
   * but no token allocates nothing either (Sanitizer.path runs per call with OpenTelemetry on).
   */
  static String withoutKnownTokens(String path) {
    if (path == null || !mayHoldKnownToken(path)) {
      return path;
    }
    StringBuilder b = null;
    int done = 0;
    // The four segments before the current one, [start, end) each (-1 for none).
    int s4 = -1;
    int e4 = -1;
    int s1 = -1;
    int e1 = -1;
    int s2 = -1;
    int e2 = -1;
    int s3 = -1;
    int e3 = -1;
    int start = 0;
    while (true) {
      int sep = start;
      while (sep < path.length() && separatorLength(path, sep) == 0) {
        sep++;
      }
      int end = sep;
      if (end > start && end < path.length() && path.charAt(end) == '/') {
        if (path.charAt(end - 1) == '\\') {
          end--; // JSON's escaped slash: the backslash is the separator's
        }
      }
      int mask = -1;
      int runEnd = -1;
      // Each Telegram token in the segment, found from its ':' (or %3A) back over its digits to a
      // "bot" before them: after any character (a quote, a bracket, a backtick, '|', '.', '@', an
      // encoded quote %22, r34), also one a token holds (an escape's last letter: \n, %3A, r35),
      // and each of many in one segment ([T1,T2], {"a":"T1","b":"T2"}: only the first was masked,
      // r35). What precedes the "bot" or the digits is kept. Each character is looked at a bounded
      // number of times: the digits walked back over lie after the last ':' looked at.
      int from = start;
      boolean telegram = false;
      while (from < end) {
        int colon = from;
        while (colon < end && telegramColonLength(path, colon) == 0) {
          colon++;
        }
        if (colon >= end) {
          break;
        }
        int tokenStart = colon + telegramColonLength(path, colon);
        int digits = colon;
        while (digits > from && isDigit(path.charAt(digits - 1))) {
          digits--;
        }
        boolean bot = digits - 3 >= from && path.regionMatches(true, digits - 3, "bot", 0, 3);
        int tokenEnd = tokenRunEnd(path, tokenStart, end);
        if (colon - digits >= (bot ? 1 : 6) && tokenEnd - tokenStart >= 30) {
          if (b == null) {
            b = new StringBuilder(path.length());
          }
          b.append(path, done, bot ? digits - 3 : digits).append(PathMask.MASK);
          done = tokenEnd;
          telegram = true;
          from = tokenEnd;
        } else {
          from = tokenStart;
        }
      }
      if (!telegram && s3 >= 0) {
        runEnd = tokenRunEnd(path, start, end);
        if (runEnd - start >= 16
            && (regionIs(path, s3, e3, "services")
                    && isIdOf(path, s2, e2, 'T')
                    && isIdOf(path, s1, e1, 'B')
                // A Slack workflow trigger's webhook: /triggers/T.../<digits>/<secret>.
                || regionIs(path, s3, e3, "triggers")
                    && isIdOf(path, s2, e2, 'T')
                    && isDigits(path, s1, e1)
                // A Slack workflow's webhook: /workflows/T.../A.../<digits>/<secret>.
                || s4 >= 0
                    && regionIs(path, s4, e4, "workflows")
                    && isIdOf(path, s3, e3, 'T')
                    && isIdOf(path, s2, e2, 'A')
                    && isDigits(path, s1, e1))) {
          mask = start;
        }
      }
      if (!telegram && mask < 0 && s2 >= 0) {
        runEnd = tokenRunEnd(path, start, end);
        if (runEnd - start >= 30
            && !isUuid(path, start, runEnd)
            && regionIs(path, s2, e2, "webhooks")
            && isDigits(path, s1, e1)) {
          mask = start;
        }
      }
      if (mask >= 0) {
        if (b == null) {
          b = new StringBuilder(path.length());
        }
        b.append(path, done, mask).append(PathMask.MASK);
        done = runEnd;
      }
      if (sep >= path.length()) {
        break;
      }
      s4 = s3;
      e4 = e3;
      s3 = s2;
      e3 = e2;
      s2 = s1;
      e2 = e1;
      s1 = start;
      e1 = end;
      start = sep + separatorLength(path, sep);
    }
    return b == null ? path : b.append(path, done, path.length()).toString();
  }

  /**
   * Whether {@code path} holds {@code bot} and a digit, {@code services} then a separator and
   * {@code T}, or {@code webhooks} then a separator and a digit: the cheap test before the walk.
   */
  private static boolean mayHoldKnownToken(String path) {
    int i = path.indexOf("bot");
    while (i >= 0) {
      if (i + 3 < path.length() && isDigit(path.charAt(i + 3))) {
        return true;
      }
      i = path.indexOf("bot", i + 3);
    }
    if (followedByIdOf(path, "services", 'T')
        || followedByIdOf(path, "workflows", 'T')
        || followedByIdOf(path, "triggers", 'T')) {
      return true;
    }
    // A Telegram token written without its "bot" (123456789:AA...): a digit, then ':' or %3A.
    i = path.indexOf(':');
    while (i >= 0) {
      if (i > 0 && isDigit(path.charAt(i - 1))) {
        return true;
      }
      i = path.indexOf(':', i + 1);
    }
    i = indexOfIgnoreCase(path, "%3A", 0, path.length());
    while (i >= 0) {
      if (i > 0 && isDigit(path.charAt(i - 1))) {
        return true;
      }
      i = indexOfIgnoreCase(path, "%3A", i + 3, path.length());
    }
    i = path.indexOf("webhooks");
    while (i >= 0) {
      int next = afterSeparator(path, i + 8);
      if (next >= 0 && next < path.length() && isDigit(path.charAt(next))) {
        return true;
      }
      i = path.indexOf("webhooks", i + 8);
    }
    return false;
  }

  /**
   * Whether {@code word}, a separator and {@code first} (any case) lie somewhere in {@code path}.
   */
  private static boolean followedByIdOf(String path, String word, char first) {
    int i = path.indexOf(word);
    while (i >= 0) {
      int next = afterSeparator(path, i + word.length());
      if (next >= 0 && next < path.length() && Character.toUpperCase(path.charAt(next)) == first) {
        return true;
      }
      i = path.indexOf(word, i + word.length());
    }
    return false;
  }

  /**
   * Where what follows a separator at {@code i} ({@code /}, {@code \/}, {@code %2F}) starts, or -1.
   */
  private static int afterSeparator(String s, int i) {
    if (i < s.length() && s.charAt(i) == '\\') {
      return i + 1 < s.length() && s.charAt(i + 1) == '/' ? i + 2 : -1;
    }
    int n = separatorLength(s, i);
    return n == 0 ? -1 : i + n;
  }

  /** 1 for a {@code /} at {@code i}, 3 for a {@code %2F} (any case), else 0. */
  private static int separatorLength(String s, int i) {
    char c = s.charAt(i);
    if (c == '/') {
      return 1;
    }
    return c == '%' && s.regionMatches(true, i, "%2F", 0, 3) ? 3 : 0;
  }

  /**
   * 1 for a {@code :}, 3 for a {@code %3A} (any case), at {@code i} right after a digit: where a
   * Telegram token's secret may start (a bot's id, its digits, then {@code :}); else 0.
   */
  private static int telegramColonLength(String s, int i) {
    if (i == 0 || !isDigit(s.charAt(i - 1))) {
      return 0;
    }
    char c = s.charAt(i);
    if (c == ':') {
      return 1;
    }
    return c == '%' && s.regionMatches(true, i, "%3A", 0, 3) ? 3 : 0;
  }

  /** Where the run of {@code [A-Za-z0-9_-]} from {@code from} ends, at most at {@code end}. */
  private static int tokenRunEnd(String s, int from, int end) {
    int i = from;
    while (i < end && isTokenChar(s.charAt(i))) {
      i++;
    }
    return i;
  }

  /** Whether {@code c} is one of {@code [A-Za-z0-9_-]}, a known token's characters. */
  private static boolean isTokenChar(char c) {
    return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '-';
  }

  /** Whether {@code s[start, end)} is {@code word}. */
  private static boolean regionIs(String s, int start, int end, String word) {
    return end - start == word.length() && s.startsWith(word, start);
  }

  /**
   * A Slack id: {@code first}, then one or more letters or digits; any case (a URL written lower
   * case is the same credential).
   */
  private static boolean isIdOf(String s, int start, int end, char first) {
    if (end - start < 2 || Character.toUpperCase(s.charAt(start)) != first) {
      return false;
    }
    for (int i = start + 1; i < end; i++) {
      char c = s.charAt(i);
      if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || isDigit(c))) {
        return false;
      }
    }
    return true;
  }

  private static boolean isDigits(String s, int start, int end) {
    if (end <= start) {
      return false;
    }
    for (int i = start; i < end; i++) {
      if (!isDigit(s.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  /** A UUID (8-4-4-4-12 hex digits): an id, never a Discord token (68 characters). */
  private static boolean isUuid(String s, int start, int end) {
    if (end - start != 36) {
      return false;
    }
    for (int i = 0; i < 36; i++) {
      char c = s.charAt(start + i);
      boolean dash = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash ? c != '-' : Character.digit(c, 16) < 0) {
        return false;
      }
    }
    return true;
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  /**
   * Whether the query or fragment of a path as a client holds it ({@code /ca?nary@h/x}: Apache
   * HttpClient 5's request path) holds an {@code @}: for {@link
   * dev.retryagent.engine.RequestInfo#atPastPath}.
   */
  public static boolean atPastPath(String pathAndQuery) {
    if (pathAndQuery == null) {
      return false;
    }
    int at = pathAndQuery.lastIndexOf('@');
    if (at < 0) {
      return false;
    }
    int q = pathAndQuery.indexOf('?');
    int f = pathAndQuery.indexOf('#');
    return (q >= 0 && q < at) || (f >= 0 && f < at);
  }

  /** Whether a URI's raw query or fragment, either null, holds an {@code @}. */
  public static boolean atPastPath(String rawQuery, String rawFragment) {
    return rawQuery != null && rawQuery.indexOf('@') >= 0
        || rawFragment != null && rawFragment.indexOf('@') >= 0;
  }

  /**
   * {@code path} (without query) with what comes before its last {@code @} written {@code
   * <redacted>}, unless that {@code @} is the path's first character after its {@code /} ({@code
   * /@scope/pkg}: nothing comes before it). A password with an unencoded {@code /} is no user-info
   * to a client: {@code https://u:12/canary@h/x} goes to host {@code u}, port 12, with the path
   * {@code /canary@h/x}, which every reader of a log line or a span's {@code url.full} reads back
   * as user-info. Written {@code /<redacted>@h/x}, as a message's URL is cut at its last {@code @}
   * ({@link #userInfoEnd}). An {@code @} that begins a later segment is no exception: a password
   * may end with its {@code /} ({@code https://u:12/canary/@h/x}). A path that holds an address
   * ({@code /users/a@b.example}) or a handle ({@code /users/@me}) is over-redacted rather than a
   * password shown: nothing in the text tells them apart (guarantees.md). The host and port are
   * written as the client connects to them.
   *
   * <p>When {@code atPastPath}, the URL's last {@code @} is in its query or fragment, past the
   * path: a password with a {@code /} and then a {@code ?} or {@code #} ({@code
   * https://u:12/ca?nary@h/x} goes to host {@code u}, port 12, with the path {@code /ca}, the rest
   * in the query). The whole path comes before that {@code @} and is written {@code /<redacted>} (a
   * path {@code /} alone holds nothing and is kept).
   */
  static String withoutAmbiguousUserInfo(String path, boolean atPastPath) {
    if (!path.startsWith("/")) {
      return path;
    }
    if (atPastPath) {
      return path.length() > 1 ? "/" + REDACTED : path;
    }
    int at = path.lastIndexOf('@');
    if (at <= 1) {
      return path;
    }
    int semicolon = path.indexOf(';', path.lastIndexOf('/', at));
    if (semicolon >= 0 && semicolon < at) {
      // The '@' is inside a path parameter (/x;jsessionid=AB@CD/y; or a password's /ca;nary@h/x):
      // that value goes on past it to the segment's end, removed with it, not written as a host.
      int slash = path.indexOf('/', at);
      return "/" + REDACTED + (slash < 0 ? "" : path.substring(slash));
    }
    return "/" + REDACTED + path.substring(at);
  }

  /**
   * {@code path} without the user-info of a URL inside it ({@link #withoutNestedUserInfo}), also of
   * one percent-encoded any number of times, and without a user-info percent-encoded without a
   * scheme or after an encoded {@code //} ({@link #withoutEncodedBareUserInfo}). For a path, and
   * for the path of a URL in a message.
   */
  static String withoutEncodedUserInfo(String path) {
    String p = withoutNestedUserInfo(path);
    if (!hasEncodedAt(p)) {
      return p; // the common case: nothing encoded ends a user-info; nothing allocated
    }
    if (indexOfIgnoreCase(p, "%25", 0, p.length()) >= 0
        && (p.indexOf("://") >= 0 || hasEncodedSeparator(p))) {
      // A URL encoded twice or more in the path (/fetch/http%253A%252F%252Fu%253Apw%2540h): its
      // '%'s encoded too, its separator and '@' are not seen. Read with every level but the last
      // decoded at once (r35: three levels were decoded, one at a time, and a URL encoded five
      // times wrote its password), it is a URL encoded once; when that one has a user-info, the
      // path is written so, without it. Decoded from the text already cleaned, so that removals
      // add up: a user-info removed there (r34: /p/http://a:b@h/n/http%253A...%253ACANARY%2540h2)
      // does not stop the encoded one from being looked at.
      String next = percentLevelsCollapsed(p);
      String cur = withoutNestedUserInfo(next);
      if (!cur.equals(next)) {
        p = cur;
      }
    }
    return withoutEncodedBareUserInfo(p);
  }

  /**
   * {@code s} with what comes before the last percent-encoded {@code @} (once or more: {@code %40},
   * {@code %2540}) of a segment (between plain {@code /}) written {@code <redacted>} when a {@code
   * :} (plain or encoded) lies before it in that segment: a user-info encoded as a path segment
   * without a scheme ({@code /p/u%3Apw%40h}) or scheme-relative ({@code /p/%2F%2Fu%3Apw%40h}),
   * which no separator shows (r35: written whole). An address ({@code /users/a%40b.example}) has no
   * {@code :} before its {@code @} and is kept. Found by index; allocates only when one is found.
   */
  private static String withoutEncodedBareUserInfo(String s) {
    // The scan ends at the first plain '?' or '#': the query and fragment are dropped later, and a
    // segment running on into them (?q=from:alice%40x&key=S) made everything up to that %40
    // <redacted>, the '?' with it, so the rest of the query was written (r49).
    int limit = s.length();
    for (int i = 0; i < limit; i++) {
      char c = s.charAt(i);
      if (c == '?' || c == '#') {
        limit = i;
      }
    }
    StringBuilder b = null;
    int done = 0;
    int segment = 0;
    while (segment <= limit) {
      int slash = s.indexOf('/', segment);
      if (slash >= limit) {
        slash = -1;
      }
      int end = slash < 0 ? limit : slash;
      int at = -1;
      boolean colon = false;
      boolean colonBeforeAt = false;
      for (int i = segment; i < end; i++) {
        char c = s.charAt(i);
        if (c == ':') {
          colon = true;
        } else if (c == '%') {
          if (encodedCharEnd(s, i, "40") >= 0) {
            at = i;
            colonBeforeAt = colon;
          } else if (encodedCharEnd(s, i, "3A") >= 0) {
            colon = true;
          }
        }
      }
      if (at >= 0 && colonBeforeAt && !isTimeOrDigestAt(s, segment, end)) {
        if (b == null) {
          b = new StringBuilder(s.length());
        }
        b.append(s, done, segment).append(REDACTED);
        done = at;
      }
      if (slash < 0) {
        break;
      }
      segment = slash + 1;
    }
    return b == null ? s : b.append(s, done, s.length()).toString();
  }

  /**
   * Whether the segment {@code s[start, end)}, decoded, has a time ({@code 12:30}, hours not after
   * a digit) right before its last {@code @}, or an image's digest after it: a file named by its
   * time ({@code 2026-12-07T12%3A30%40utc.log}) or an image's reference, no user-info. A password
   * of two digits after a user name ending in one or two digits is kept so: the time's shape.
   */
  private static boolean isTimeOrDigestAt(String s, int start, int end) {
    String seg = percentDecoded(percentLevelsCollapsed(s.substring(start, end)));
    int at = seg.lastIndexOf('@');
    if (at < 0) {
      return false;
    }
    if (isDigest(seg, at + 1)) {
      return true;
    }
    if (at < 4 || seg.charAt(at - 3) != ':' || !isDigits(seg, at - 2, at)) {
      return false;
    }
    int hours = at - 3;
    while (hours > 0 && isDigit(seg.charAt(hours - 1))) {
      hours--;
    }
    // The time starts the segment or follows a date's 'T' or a name's '-' or '_', and no other ':'
    // comes before it: after a letter it is a password's end (admin:Summer12:30@db, r49: written).
    return at - 3 - hours >= 1
        && at - 3 - hours <= 2
        && (hours == 0 || "T-_".indexOf(seg.charAt(hours - 1)) >= 0)
        && seg.lastIndexOf(':', at - 4) < 0;
  }

  /**
   * A path with the user-info of each URL inside it removed: a proxy's or a redirector's path
   * carries its target whole ({@code /fetch/https://user:password@target/x}), or percent-encoded as
   * a path segment must be ({@code /fetch/https%3A%2F%2Fuser%3Apassword%40target%2Fx}: its
   * user-info ends at its last {@code %40} or {@code @}).
   */
  static String withoutNestedUserInfo(String path) {
    // The next plain separator, looked for again only once passed: each encoded URL looking for it
    // to the path's end made a path of many of them quadratic to clean.
    int plain = path.indexOf("://");
    int scheme = nextSeparator(path, 0, plain);
    if (scheme < 0) {
      return path;
    }
    // Made only when a user-info is found: a proxy's path with none (/fetch/http%3A%2F%2Fh%2Fx)
    // allocates nothing (Sanitizer.path runs per call with OpenTelemetry on).
    StringBuilder b = null;
    int done = 0;
    while (scheme >= 0) {
      boolean encoded = !path.startsWith("://", scheme);
      int authStart = scheme + (encoded ? ENCODED_SEPARATOR.length() : 3);
      if (plain >= 0 && plain < authStart) {
        plain = path.indexOf("://", authStart);
      }
      int next = nextSeparator(path, authStart, plain);
      int end = next < 0 ? path.length() : next;
      int at = userInfoEnd(path, authStart, end);
      int userInfoEnd = at < 0 ? -1 : at + 1;
      if (encoded) {
        int encodedAt = lastIndexOfIgnoreCase(path, "%40", authStart, end);
        if (encodedAt >= 0 && encodedAt + 3 > userInfoEnd) {
          userInfoEnd = encodedAt + 3;
        }
      }
      if (userInfoEnd >= 0) {
        if (b == null) {
          b = new StringBuilder(path.length());
        }
        b.append(path, done, authStart);
        done = userInfoEnd;
        int parameterEnd = parameterEnd(path, authStart, userInfoEnd, end);
        if (parameterEnd >= 0) {
          // That '@' (or %40) lies inside a path parameter (a session id holding one): the rest of
          // it would be written as the nested URL's host. It goes, as withoutUserInfoTo does.
          b.append(REDACTED);
          done = parameterEnd;
        }
      }
      scheme = next;
    }
    return b == null ? path : b.append(path, done, path.length()).toString();
  }

  /**
   * {@code word} cut at its first {@code %3F} (an encoded {@code ?}, any case) that something
   * follows, and, when {@code urlLike}, at its first {@code %23} (an encoded {@code #}): a URL
   * quoted percent-encoded in a message ({@code http://h/x%3Ftoken%3DS}, a redirect's or a proxy's
   * target, or a URL encoded twice) carries its query so. An encoded {@code ?} in a word of prose
   * or a path is rare; over-redacting it is preferred to writing a token.
   */
  static String withoutEncodedQuery(String word, boolean urlLike) {
    int cut = encodedQueryCut(word, 0, word.length(), urlLike);
    return cut < 0 ? word : word.substring(0, cut);
  }

  /** Where {@link #withoutEncodedQuery} cuts {@code s[from, to)}, or -1: found by index. */
  private static int encodedQueryCut(String s, int from, int to, boolean urlLike) {
    int percent = s.indexOf('%', from);
    if (percent < 0 || percent >= to) {
      return -1; // the common case: nothing encoded
    }
    int cut = encodedCut(s, percent, to, "3F");
    if (urlLike) {
      int f = encodedCut(s, percent, to, "23");
      if (f >= 0 && (cut < 0 || f < cut)) {
        cut = f;
      }
    }
    return cut;
  }

  /**
   * The first {@code %} that starts the character {@code hex} encoded once or more ({@code %3F},
   * the same character encoded twice, as a URL encoded whole into another's query carries it:
   * {@code %253F}, or more: {@code %25253F}) in {@code s[from, to)} that something follows there,
   * or -1: a lone trailing one hides nothing, as a lone '?' does not. Any level (r49: three or more
   * were not cut, and a query encoded so was written). Each run of "25" belongs to one '%', so the
   * scan is linear.
   */
  private static int encodedCut(String s, int from, int to, String hex) {
    for (int i = s.indexOf('%', from); i >= 0 && i < to; i = s.indexOf('%', i + 1)) {
      int end = encodedCharEnd(s, i, hex);
      if (end >= 0 && end < to) {
        return i;
      }
    }
    return -1;
  }

  /**
   * When a {@code ;} or {@code %3B} lies between {@code authStart} and {@code userInfoEnd} (just
   * past the {@code @} or {@code %40} taken as the user-info's end) in the same path segment, so
   * that the {@code @} may be inside a path parameter's value: where that segment ends (a {@code
   * /}, {@code %2F}, {@code ?}, {@code #} or {@code end}); else -1.
   */
  private static int parameterEnd(String s, int authStart, int userInfoEnd, int end) {
    int semicolon = -1;
    for (int i = authStart; i < userInfoEnd; i++) {
      char c = s.charAt(i);
      if (c == '/' || s.regionMatches(true, i, "%2F", 0, 3)) {
        semicolon = -1; // a ';' of an earlier segment: that parameter ended there
      } else if (semicolon < 0 && (c == ';' || encodedSemicolonAt(s, i))) {
        semicolon = i;
      }
    }
    if (semicolon < 0) {
      return -1;
    }
    int i = userInfoEnd;
    while (i < end
        && "/?#".indexOf(s.charAt(i)) < 0
        && !s.regionMatches(true, i, "%2F", 0, 3)
        && !s.regionMatches(true, i, "%3F", 0, 3)
        && !s.regionMatches(true, i, "%23", 0, 3)) {
      i++;
    }
    return i;
  }

  /**
   * Whether {@code s} holds {@code ://} percent-encoded once or more, each of its three characters
   * either way ({@code %3A%2F%2F}, {@code %253A%252F%252F}), any case. Looked for by index before
   * anything is decoded: a path with an encoded '@' and '%' and no URL in it ({@code
   * /users/a%2540b.example}) allocates nothing.
   */
  private static boolean hasEncodedSeparator(String s) {
    for (int i = s.indexOf('%'); i >= 0; i = s.indexOf('%', i + 1)) {
      int j = encodedCharEnd(s, i, "3A");
      j = j < 0 ? -1 : encodedCharEnd(s, j, "2F");
      j = j < 0 ? -1 : encodedCharEnd(s, j, "2F");
      if (j >= 0) {
        return true;
      }
    }
    return false;
  }

  /**
   * Where {@code %XX} or {@code %25XX} ({@code hex} the two hex digits, any case) starting at
   * {@code i} ends, or -1.
   */
  private static int encodedCharEnd(String s, int i, String hex) {
    if (i >= s.length() || s.charAt(i) != '%') {
      return -1;
    }
    if (s.regionMatches(true, i + 1, hex, 0, 2)) {
      return i + 3;
    }
    // Encoded more than twice too (%25253A): each level adds a "25".
    int j = i + 1;
    while (s.regionMatches(true, j, "25", 0, 2) && !s.regionMatches(true, j, hex, 0, 2)) {
      j += 2;
    }
    return s.regionMatches(true, j, hex, 0, 2) ? j + 2 : -1;
  }

  /**
   * Whether {@code word} holds from {@code from} a content digest, {@code sha256:} or {@code
   * sha512:} and hex digits, to its end or a punctuation mark.
   */
  private static boolean isDigest(String word, int from) {
    if (!word.startsWith("sha256:", from) && !word.startsWith("sha512:", from)) {
      return false;
    }
    int i = from + 7;
    while (i < word.length() && Character.digit(word.charAt(i), 16) >= 0) {
      i++;
    }
    // At least 12 digits (a digest shortened in a log line, as an image id is), not all decimal
    // (sha256:5432 reads as a host and port).
    return i - from - 7 >= 12
        && !isDigits(word, from + 7, i)
        && (i == word.length() || ".,;)]}'\"".indexOf(word.charAt(i)) >= 0);
  }

  /** Where the next {@code ://} or {@link #ENCODED_SEPARATOR} (any case) from {@code from} is. */
  private static int nextSeparator(String s, int from) {
    return nextSeparator(s, from, s.indexOf("://", from));
  }

  /** As {@link #nextSeparator(String, int)}, with {@code plain} the next {@code ://} from there. */
  private static int nextSeparator(String s, int from, int plain) {
    int encoded = indexOfIgnoreCase(s, ENCODED_SEPARATOR, from, plain < 0 ? s.length() : plain);
    return encoded >= 0 ? encoded : plain;
  }

  /** The first {@code needle} (ASCII, any case) starting in {@code [from, to)}, or -1. */
  private static int indexOfIgnoreCase(String s, String needle, int from, int to) {
    int last = Math.min(to, s.length() - needle.length() + 1);
    for (int i = from; i < last; i++) {
      if (s.charAt(i) == '%' && s.regionMatches(true, i, needle, 0, needle.length())) {
        return i;
      }
    }
    return -1;
  }

  /** The last {@code needle} (ASCII, any case) lying whole in {@code [from, to)}, or -1. */
  private static int lastIndexOfIgnoreCase(String s, String needle, int from, int to) {
    for (int i = to - needle.length(); i >= from; i--) {
      if (s.charAt(i) == '%' && s.regionMatches(true, i, needle, 0, needle.length())) {
        return i;
      }
    }
    return -1;
  }

  /**
   * Where the user-info of a URL ends: the last {@code @} between {@code authStart} (just past its
   * {@code ://}) and {@code end} (where the URL ends: its word's end, or where another URL begins),
   * or -1 when there is none. Not the last {@code @} before the first {@code /}, {@code ?} or
   * {@code #}: a password may hold them unencoded ({@code redis://u:pa/ss#x@cache:6379}, which a
   * Redis client reads up to the last {@code @} as {@link dev.retryagent.config.RedisUrl} does),
   * and the rest of it would be printed as the host and path. So a URL whose path or query holds an
   * {@code @} ({@code https://h/@user}) loses what comes before it too: over-redacting rather than
   * printing part of a password.
   */
  static int userInfoEnd(String s, int authStart, int end) {
    // Not lastIndexOf('@', end - 1): it goes on to the text's start when the URL has no '@', and a
    // text of many URLs took the square of its length to clean.
    for (int i = end - 1; i >= authStart; i--) {
      if (s.charAt(i) == '@') {
        return i;
      }
    }
    return -1;
  }

  /**
   * {@code /app;jsessionid=X/items;v=2} as {@code /app/items}: each segment's {@code ;...} goes.
   */
  static String withoutPathParameters(String path) {
    int semicolon = path.indexOf(';');
    if (semicolon < 0) {
      return path;
    }
    StringBuilder b = new StringBuilder(path.length());
    int i = 0;
    while (semicolon >= 0) {
      b.append(path, i, semicolon);
      int slash = path.indexOf('/', semicolon);
      if (slash < 0) {
        // A lone ';' at the end is a sentence's ("failed on http://h/x; retrying"), no parameter.
        return semicolon == path.length() - 1 ? b.append(';').toString() : b.toString();
      }
      i = slash;
      semicolon = path.indexOf(';', i);
    }
    return b.append(path, i, path.length()).toString();
  }

  /**
   * A route's name in a line of text (logs, the exit summary, the CLI): as it is when it is a name
   * of the earlier rule ({@code [A-Za-z0-9][A-Za-z0-9._-]{0,63}}, every name before version 1's
   * names were let in), so those lines stay byte for byte; any other in double quotes, {@code "}
   * and backslash escaped and a control character as backslash-u and four hex digits, so that a
   * name such as {@code x, observe} or {@code a] calls=0} reads as one name ({@code [route="x,
   * observe"]}).
   */
  public static String routeName(String name) {
    if (name == null) {
      return "";
    }
    if (isPlainRouteName(name)) {
      return name;
    }
    StringBuilder b = new StringBuilder(name.length() + 2).append('"');
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (Character.isISOControl(c) || c == 0x2028 || c == 0x2029) {
        String hex = Integer.toHexString(c);
        b.append("\\u").append("0000", hex.length(), 4).append(hex);
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }

  /** {@code [A-Za-z0-9][A-Za-z0-9._-]{0,63}}. */
  private static boolean isPlainRouteName(String name) {
    if (name.isEmpty() || name.length() > 64) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      boolean alnum = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9';
      if (!alnum && (i == 0 || c != '.' && c != '_' && c != '-')) {
        return false;
      }
    }
    return true;
  }

  /**
   * Text from the configuration or the request (route names, hosts) on one line: control and
   * line-separator characters become spaces.
   */
  public static String oneLine(String text) {
    if (text == null) {
      return "";
    }
    StringBuilder b = null;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isISOControl(c) || c == '\u2028' || c == '\u2029') {
        if (b == null) {
          b = new StringBuilder(text);
        }
        b.setCharAt(i, ' ');
      }
    }
    return b == null ? text : b.toString();
  }

  /**
   * Each word (run of characters between blanks) cleaned by {@link #cleanWord}. Only blanks end a
   * word, so a query is dropped up to the next blank even past quotes or brackets. A URL that may
   * hold blanks (one a parser refused, quoted: {@link #urlEnd}) loses a user-info with a blank in
   * it, and a query or fragment up to where it ends.
   */
  private static String stripUrlParts(String text, PathMask mask) {
    String s = text;
    StringBuilder out = new StringBuilder(s.length());
    int[] found = newFound();
    int i = 0;
    while (i < s.length()) {
      if (isDelimiter(s.charAt(i))) {
        out.append(s.charAt(i++));
        continue;
      }
      int start = i;
      i = wordEnd(s, i);
      int end = urlEnd(s, start, i, found);
      if (end > i) {
        String url = s.substring(start, end);
        String joined = segmentsMasked(withoutUserInfo(url), mask);
        if (!joined.equals(url)) {
          s = s.substring(0, start) + joined + s.substring(end);
          found = newFound(); // what was found is at other indices now
          end = start + joined.length();
          i = wordEnd(s, start);
        }
        String word = s.substring(start, i);
        if (i < end
            && (word.indexOf('?') >= 0
                || word.indexOf('#') >= 0
                || withoutEncodedQuery(word, true) != word)) {
          // An encoded one (%3F, %23) too: http://h/x%3Ftoken%3DSE CRET goes on past its blank.
          // The query (or fragment) goes on past the blank, to the URL's end.
          out.append(cleanWord(word, mask));
          i = end;
          continue;
        }
        if (i < end) {
          out.append(cleanWord(word, mask));
          i = urlGoesOn(s, i, end, inParameter(word), mask, out);
          continue;
        }
      }
      out.append(cleanWord(s.substring(start, i), mask));
    }
    return out.toString();
  }

  /**
   * The words of a URL after its first, up to {@code end} (a blank in its authority or path: {@code
   * Illegal character in authority at index 7: http://bad host/tok?sig=S S2}), appended to {@code
   * out} as the rest of a path: each masked as a path, a path parameter dropped, and from a query
   * or fragment on, everything dropped to {@code end}. Returns where the caller goes on: {@code
   * end}, or the start of a word that begins another URL (cleaned on its own, user-info and all). A
   * segment with a blank in it was masked whole already when the mask matches it whole ({@link
   * #segmentsMasked}); a word's part of it is masked here too when it matches on its own.
   */
  private static int urlGoesOn(
      String s, int from, int end, boolean parameter, PathMask mask, StringBuilder out) {
    int i = from;
    boolean inParameter = parameter;
    while (i < end) {
      if (isDelimiter(s.charAt(i))) {
        out.append(s.charAt(i++));
        continue;
      }
      int start = i;
      i = Math.min(wordEnd(s, i), end);
      String word = s.substring(start, i);
      if (word.indexOf("://") >= 0 || word.indexOf(":\\/\\/") >= 0) {
        return start;
      }
      if (inParameter) {
        // A path parameter (;jsessionid=...) with a blank in it goes on to the next '/'.
        int slash = word.indexOf('/');
        if (slash < 0) {
          continue;
        }
        word = word.substring(slash);
      }
      int cut = word.indexOf('#');
      int q = word.indexOf('?');
      if (q >= 0 && q < word.length() - 1 && (cut < 0 || q < cut)) {
        cut = q;
      }
      String path = cut >= 0 ? word.substring(0, cut) : word;
      String unencoded = withoutEncodedQuery(path, true);
      if (unencoded != path) {
        // A query or fragment percent-encoded (b%3Ftoken%3DS): dropped to the end as a plain one.
        path = unencoded;
        cut = path.length();
      }
      inParameter = inParameter(path);
      out.append(masked(withoutPathParameters(path), mask));
      if (cut >= 0) {
        return end;
      }
    }
    return end;
  }

  /**
   * {@code url} (one a parser quoted, blanks and all: {@link #urlEnd}) with each segment of its
   * path that {@code mask} matches whole written masked, a segment with a blank in it included:
   * {@code agent.redact.pathSegments} matches the text between two {@code /}, and the words of such
   * a segment, cleaned one by one after this, would each be matched alone ({@code tok_a b} as
   * {@code <redacted> b} under {@code tok_.*}). Only a path with a blank is looked at (one without
   * is masked word by word the same); its query or fragment is dropped after, unmasked.
   */
  private static String segmentsMasked(String url, PathMask mask) {
    if (mask.isNone()) {
      return url;
    }
    int pathStart;
    int scheme = url.indexOf("://");
    if (scheme >= 0) {
      pathStart = url.indexOf('/', scheme + 3);
    } else {
      pathStart = url.startsWith("/") ? 0 : -1;
    }
    if (pathStart < 0) {
      return url;
    }
    int pathEnd = url.length();
    for (int k = pathStart; k < url.length(); k++) {
      char c = url.charAt(k);
      if (c == '?' || c == '#') {
        pathEnd = k;
        break;
      }
    }
    String path = url.substring(pathStart, pathEnd);
    if (wordEnd(path, 0) == path.length()) {
      return url; // no blank: masked word by word as any other path
    }
    return url.substring(0, pathStart) + mask.apply(path) + url.substring(pathEnd);
  }

  /** True when {@code word} ends inside a path parameter ({@code /a;jsessionid=SE}). */
  private static boolean inParameter(String word) {
    int semicolon = word.lastIndexOf(';');
    // A lone ';' at the end is a sentence's, as in withoutPathParameters.
    return semicolon > word.lastIndexOf('/') && semicolon < word.length() - 1;
  }

  private static int wordEnd(String s, int from) {
    int i = from;
    while (i < s.length() && !isDelimiter(s.charAt(i))) {
      i++;
    }
    return i;
  }

  /**
   * Where the URL in the word {@code s[start, wordEnd)} ends, when it may go on past blanks: a
   * parser quotes the text it refused, blanks and all (the blank is often what it refused), either
   * in quotes (Spring's {@code I/O error on GET request for "URL": ...}, OkHttp's {@code Invalid
   * URL host: "..."}): up to the closing quote; or last, after a colon (the JDK's {@code
   * URISyntaxException}: {@code Illegal character in query at index 20: URL}, Apache HttpClient's
   * {@code Invalid redirect URI: URL}): up to the end of the line; a relative URL (a redirect's
   * {@code Location: /path}) so quoted last too. Otherwise {@code wordEnd}.
   */
  private static int urlEnd(String s, int start, int wordEnd, int[] found) {
    // Looked for in the word alone: a search to the text's end for every word would be quadratic.
    String word = s.substring(start, wordEnd);
    boolean last = lastAfterColon(s, start);
    int inWord = word.indexOf("://");
    if (inWord < 0) {
      inWord = word.indexOf(":\\/\\/");
      if (inWord < 0) {
        return looseUrlEnd(s, start, wordEnd, last, found);
      }
    }
    int scheme = start + inWord;
    int lineEnd = lineEnd(s, wordEnd);
    int name = scheme;
    while (name > start && isSchemeChar(s.charAt(name - 1))) {
      name--;
    }
    char before = name > 0 ? s.charAt(name - 1) : 0;
    if (before == '"' || before == '\'') {
      int close = scheme;
      // A quote inside the password ("http://u:p"w@h/x") closes nothing (r35): see isClosingQuote.
      while (close < lineEnd && !(s.charAt(close) == before && isClosingQuote(s, close))) {
        close++;
      }
      return Math.max(close, wordEnd);
    }
    if (before == '<' || before == '(') {
      // Bracketed (<http://alice:pw word@h/x>, as mail and Markdown write a URL): up to the closing
      // bracket when the word ends in a user-info's ':' part (no '/' after the separator) and an
      // '@' follows before it; otherwise the word, so that prose in parentheses (http://h/x for
      // a@b.example) is not read as a user-info.
      int authStart = scheme + (s.startsWith("://", scheme) ? 3 : 5);
      int colon = s.indexOf(':', authStart);
      if (colon < 0 || colon >= wordEnd) {
        return wordEnd;
      }
      for (int i = authStart; i < wordEnd; i++) {
        if (s.charAt(i) == '/') {
          // A path: the word is a URL of its own. Looked for in the word alone: indexOf to the
          // text's end gave -1 when no '/' followed anywhere (<http://alice:pw word@h> was kept).
          return wordEnd;
        }
      }
      // Any number of blanks before the '@' (<http://alice:correct horse battery@h/x>, r33): the
      // closing bracket bounds it. Found through the memo: a line of such words stays linear.
      int close = nextOf(s, wordEnd, s.length(), before == '<' ? CLOSE_ANGLE : CLOSE_PAREN, found);
      if (close >= lineEnd || isLineBreak(s.charAt(close))) {
        return wordEnd;
      }
      return nextOf(s, wordEnd, s.length(), AT, found) < close ? close : wordEnd;
    }
    if (name == 0 || (name == start && last) || before == '=') {
      // After '=' too (url=http://alice:pw word@h/x): a key's value, quoted by no one.
      return lineEnd;
    }
    return wordEnd;
  }

  /**
   * As {@link #urlEnd}, for a word without {@code ://}: a relative URL quoted last after {@code ":
   * "} runs to the line's end; a scheme-relative one ({@code "//alice:pw word@h/x"}) or a user-info
   * written without a scheme ({@code u:pw word@h/x}), quoted or last after {@code ": "}, to the
   * closing quote or the line's end when an {@code @} lies there past the word: a blank in its
   * password would otherwise end it, the rest read as prose.
   */
  private static int looseUrlEnd(String s, int start, int wordEnd, boolean last, int[] found) {
    int body = looseBody(s, start, wordEnd, last);
    if (body == RELATIVE) {
      return lineEnd(s, wordEnd);
    }
    if (body < 0) {
      return wordEnd;
    }
    // The '@' must end the password with no ", ", " (" or " [" before it (isStop): past those it is
    // another text's (pool-1@3a4b), and following it would write the whole line as a redacted
    // user-info. One inside a word ends nothing: a password's (u:pw CAN,ARY@h/x, r35).
    // Any number of blanks may lie before it: a passphrase (u:correct horse battery staple@h/x)
    // is one password, and when at most two were followed its words were written whole (r33).
    // Prose whose ':' word is followed on its line by an address (failed: key:x for ops@b.example)
    // is over-redacted so: nothing in the text tells it from a password.
    int limit = Math.min(s.length(), wordEnd + MAX_URL_SPAN);
    char first = s.charAt(start);
    if (first == '"' || first == '\'') {
      // Up to the closing quote at most: a scan that stops at the next quote of its kind, which
      // the next quoted word of that kind opens with, so the quoted words' scans do not overlap.
      for (int i = wordEnd; i < limit; i++) {
        char c = s.charAt(i);
        if (isLineBreak(c) || c == first && isClosingQuote(s, i) || isStop(s, i)) {
          return wordEnd;
        }
        if (c == '@') {
          int end = lineEnd(s, wordEnd);
          int close = s.indexOf(first, i);
          return Math.max(close >= 0 && close < end ? close : end, wordEnd);
        }
      }
      return wordEnd;
    }
    // Found through the memo: many such words on one line each look to the same '@' or stop.
    int at = nextOf(s, wordEnd, s.length(), AT_OR_STOP, found);
    if (at >= limit || s.charAt(at) != '@') {
      return wordEnd;
    }
    return Math.max(lineEnd(s, wordEnd), wordEnd);
  }

  /** {@link #looseBody}'s answer for a relative URL ({@code /x y}) last after a colon. */
  private static final int RELATIVE = -2;

  /**
   * Where the user-info in the word {@code s[start, wordEnd)} starts when it may be one that goes
   * on past blanks ({@link #looseUrlEnd}): a scheme-relative URL ({@code //alice:pw}) or a
   * user-info without a scheme ({@code u:pw}), quoted, last after {@code ": "} ({@code last}) or a
   * key's value ({@code url=u:pw}); {@link #RELATIVE} for a relative URL last after a colon, which
   * runs to the line's end; else -1. Looks at the word alone, not at what follows it.
   */
  private static int looseBody(String s, int start, int wordEnd, boolean last) {
    char first = s.charAt(start);
    boolean quoted = first == '"' || first == '\'';
    int body = quoted ? start + 1 : start;
    if (body >= wordEnd) {
      return -1;
    }
    if (!quoted && !last) {
      // A key's value (url=//alice:pw word@h/x, url=alice:pw word@h/x), quoted by no one: as one
      // last after ": ", from after the '='.
      int eq = start;
      while (eq < wordEnd && s.charAt(eq) != '=') {
        eq++; // in the word alone: indexOf to the text's end, per word, was quadratic
      }
      if (eq + 1 >= wordEnd) {
        return -1;
      }
      body = eq + 1;
    } else if (!quoted && s.charAt(body) == '/' && !s.startsWith("//", body)) {
      return RELATIVE;
    }
    boolean userInfo = s.startsWith("//", body);
    if (!userInfo) {
      int colon = body;
      while (colon < wordEnd && s.charAt(colon) != ':') {
        colon++; // in the word alone, as the '=' above
      }
      userInfo = colon > body && colon < wordEnd - 1 && s.charAt(colon + 1) != '/';
      // No '@' in the word (it ends the user-info there: cleanWord sees it), no '/' before the ':'.
      for (int i = body; i < wordEnd && userInfo; i++) {
        char c = s.charAt(i);
        userInfo = c != '@' && (c != '/' || i > colon);
      }
      // A host and port (localhost:6379, 10.0.0.5:443) or a time (12:30:01) is no user-info: an
      // '@' later on the line (NioEventLoop@5e9f23b4, ops@example.com) belongs to other text.
      userInfo = userInfo && !isDigits(s, colon + 1, wordEnd) && !isDigits(s, body, colon);
      // Nor a word a ',' or ';' ends (api:v2, contact ops@example.com): a list or sentence goes on.
      userInfo = userInfo && ",;".indexOf(s.charAt(wordEnd - 1)) < 0;
    }
    if (!userInfo) {
      return -1;
    }
    for (int i = body; quoted && i < wordEnd; i++) {
      if (s.charAt(i) == first && isClosingQuote(s, i)) {
        return -1; // closed within the word: cleaned as a word
      }
    }
    return body;
  }

  /** Kinds of character {@link #nextOf} looks for, each its two slots in the memo. */
  private static final int AT = 0; // '@'

  private static final int AT_OR_STOP = 2; // '@', or a stop as prose writes one (isStop)

  private static final int CLOSE_PAREN = 4; // ')'

  private static final int CLOSE_ANGLE = 6; // '>'

  /** A memo for {@link #nextOf}, nothing found yet. */
  private static int[] newFound() {
    return new int[] {-1, -1, -1, -1, -1, -1, -1, -1};
  }

  /**
   * The first index in {@code [from, to)} of a character of {@code kind} or a line break, or {@code
   * to} (the same {@code to} for all searches through one memo). {@code found[kind]} and {@code
   * found[kind + 1]} remember the last search (where it started, what it found): a search starting
   * between them has the same answer without a scan. The words of a text ask in order, so each
   * character is looked at about once per kind: a line of many words that each look ahead to an '@'
   * stays linear to clean.
   */
  private static int nextOf(String s, int from, int to, int kind, int[] found) {
    if (from >= found[kind] && from <= found[kind + 1]) {
      return found[kind + 1];
    }
    int i = from;
    while (i < to && !isOfKind(s, i, kind)) {
      i++;
    }
    found[kind] = from;
    found[kind + 1] = i;
    return i;
  }

  private static boolean isOfKind(String s, int i, int kind) {
    char c = s.charAt(i);
    if (isLineBreak(c)) {
      return true;
    }
    switch (kind) {
      case AT:
        return c == '@';
      case AT_OR_STOP:
        return c == '@' || isStop(s, i);
      case CLOSE_PAREN:
        return c == ')';
      default:
        return c == '>';
    }
  }

  /**
   * Whether {@code s[i]} ends a password of many words looked for up to an {@code @} ({@link
   * #looseUrlEnd}): a {@code ,} before a blank or the end, or a {@code (} or {@code [} after a
   * blank or at the start, as prose writes them ({@code api:v2 unavailable, contact
   * ops@example.com}, {@code 10.0.0.5:443 (conn pool-1@3a4b)}). One inside a word is a password's
   * (r35: {@code u:pw CAN,ARY@h/x} stopped there and wrote {@code u:pw CAN}).
   */
  private static boolean isStop(String s, int i) {
    char c = s.charAt(i);
    if (c == ',') {
      return i + 1 >= s.length() || isDelimiter(s.charAt(i + 1));
    }
    if (c == ')' || c == ']') {
      // A bracket closing a word, as prose writes one (Thread[pool-1-thread-1,5,main] for
      // Connection@6d06d69c, r49: the whole text up to that '@' was written <redacted>). Decided
      // on the next character only, for linear time; a password's bracket inside a word
      // (CAN(A)RY@h) goes on.
      return i + 1 >= s.length()
          || isDelimiter(s.charAt(i + 1))
          || ",.;".indexOf(s.charAt(i + 1)) >= 0;
    }
    return (c == '(' || c == '[') && (i == 0 || isDelimiter(s.charAt(i - 1)));
  }

  /** Where the line of {@code from} ends, at most MAX_URL_SPAN past it. */
  private static int lineEnd(String s, int from) {
    // At most MAX_URL_SPAN past the word, so that a long line of URLs stays linear to clean.
    int limit = Math.min(s.length(), from + MAX_URL_SPAN);
    int lineEnd = from;
    while (lineEnd < limit && !isLineBreak(s.charAt(lineEnd))) {
      lineEnd++;
    }
    return lineEnd;
  }

  /** {@code url} without its user-info, found up to the authority's end also past blanks. */
  private static String withoutUserInfo(String url) {
    int scheme = url.indexOf("://");
    int separator = 3;
    if (scheme < 0) {
      scheme = url.indexOf(":\\/\\/");
      separator = 5;
      if (scheme < 0) {
        // A scheme-relative URL (//user:pa ss@h/x, quoted last or in quotes) has an authority, a
        // user-info written without a scheme (u:pa ss@h/x) one too (looseUrlEnd); any other
        // relative URL has none.
        if (url.indexOf('@') < 0) {
          return url;
        }
        return withoutLooseUserInfo(url);
      }
    }
    String out = url;
    int name = scheme;
    while (name > 0 && isSchemeChar(out.charAt(name - 1))) {
      name--;
    }
    if (name > 0 && out.lastIndexOf('@', name - 1) >= 0) {
      // A scheme-relative URL or a user-info without a scheme first in the span, a URL later on
      // its line (failed: //alice:pw word@h/x then http://b/y): its user-info ends before that
      // URL's scheme, and is its own.
      String head = out.substring(0, name);
      String clean = withoutLooseUserInfo(head);
      if (!clean.equals(head)) {
        out = clean + out.substring(name);
        scheme += clean.length() - head.length();
      }
    }
    // Each URL of the span: one nested in a quoted URL's path ("http://h/fetch/http://a:p q@t/")
    // has a user-info of its own, which nextUrl ends the first one's at. Where the next of each
    // kind of separator lies is kept from one URL to the next and searched again only once passed
    // (or the text changed): searched from each URL to the span's end, a span of many URLs (each
    // a key's value, =http://a =http://a ...) took the square of its length.
    int plain = out.indexOf("://", scheme + separator);
    int escaped = out.indexOf(":\\/\\/", scheme + separator);
    while (scheme >= 0) {
      int authStart = scheme + separator;
      int at = userInfoEnd(out, authStart, nextUrl(out, authStart, plain, escaped));
      if (at >= 0) {
        out = withoutUserInfoTo(out, authStart, at);
        plain = out.indexOf("://", authStart);
        escaped = out.indexOf(":\\/\\/", authStart);
      }
      if (plain >= 0 && (escaped < 0 || plain < escaped)) {
        scheme = plain;
        separator = 3;
        plain = out.indexOf("://", scheme + separator);
      } else if (escaped >= 0) {
        scheme = escaped;
        separator = 5;
        escaped = out.indexOf(":\\/\\/", scheme + separator);
      } else {
        scheme = -1;
      }
    }
    return out;
  }

  /**
   * {@code s} without what lies between {@code authStart} and the {@code @} at {@code at}, taken as
   * user-info ({@link #userInfoEnd}). When that {@code @} lies after a {@code ;} in its path
   * segment ({@code http://h/x;jsessionid=AB@CD/y}), it may as well be inside a path parameter's
   * value, which goes on past it to the segment's end: not written as a host, that rest of the
   * segment goes too ({@code http://<redacted>/y}), as a path's does ({@link
   * #withoutAmbiguousUserInfo}).
   */
  private static String withoutUserInfoTo(String s, int authStart, int at) {
    int slash = s.lastIndexOf('/', at);
    // In the authority too: http://h;jsessionid=AB@CD/y is a session id after the host, not a
    // user-info (a password with a ';', http://u:pa;ss@h/x, loses its host with it: over-redacted).
    // Encoded too (http://h%3Bjsessionid=AB@CD/y): a client may encode the ';' it quotes.
    int from = Math.max(slash, authStart);
    int semicolon = s.indexOf(';', from);
    int encoded = encodedSemicolon(s, from, semicolon < 0 || semicolon > at ? at : semicolon);
    if (encoded >= 0) {
      semicolon = encoded;
    }
    if (semicolon < 0 || semicolon > at) {
      return s.substring(0, authStart) + s.substring(at + 1);
    }
    int end = at + 1;
    while (end < s.length() && "/?#".indexOf(s.charAt(end)) < 0) {
      end++;
    }
    return s.substring(0, authStart) + REDACTED + s.substring(end);
  }

  /**
   * The first ';' percent-encoded once or more ({@code %3B}, {@code %253B}, {@code %25253B}, any
   * case) starting in {@code [from, to)}, or -1: a URL quoted in another's query or path, and that
   * one in another's, carries its session id's ';' so (r33: %253Bjsessionid=AB@CD wrote CD as the
   * host).
   */
  private static int encodedSemicolon(String s, int from, int to) {
    for (int i = s.indexOf('%', from); i >= 0 && i < to; i = s.indexOf('%', i + 1)) {
      if (encodedSemicolonAt(s, i)) {
        return i;
      }
    }
    return -1;
  }

  /** Whether a ';' percent-encoded once or more starts at {@code i}. */
  private static boolean encodedSemicolonAt(String s, int i) {
    if (s.charAt(i) != '%') {
      return false;
    }
    int j = i + 1;
    while (s.regionMatches(true, j, "25", 0, 2)) {
      j += 2;
    }
    return s.regionMatches(true, j, "3B", 0, 2);
  }

  /**
   * Where the URL whose authority starts at {@code authStart} ends, for {@link #userInfoEnd}: where
   * another URL begins, or at the quote that closes it when one opens it ({@code
   * {"url":"http:\/\/h\/a","user":"a@b"}}: the '@' of the next value is not its).
   */
  private static int nextUrl(String s, int authStart) {
    return nextUrl(s, authStart, s.indexOf("://", authStart), s.indexOf(":\\/\\/", authStart));
  }

  /** As {@link #nextUrl(String, int)}, the next separators of each kind already found. */
  private static int nextUrl(String s, int authStart, int next, int escaped) {
    int end = s.length();
    if (next >= 0) {
      end = next;
    }
    if (escaped >= 0 && escaped < end) {
      end = escaped;
    }
    int name = s.lastIndexOf(':', authStart - 1);
    while (name > 0 && isSchemeChar(s.charAt(name - 1))) {
      name--;
    }
    char before = name > 0 ? s.charAt(name - 1) : 0;
    if (before == '"' || before == '\'') {
      // Looked for up to the next URL only: not to the text's end for each URL of a long span.
      for (int i = authStart; i < end; i++) {
        if (s.charAt(i) == before && isClosingQuote(s, i)) {
          return i;
        }
      }
    }
    return end;
  }

  /**
   * Whether the quote at {@code i} may close a quoted URL or user-info: at the end, before a blank,
   * a punctuation mark, a backslash or a quote ({@code "http://h/x",}, {@code \"http://h\"}), or
   * after a blank (the next quoted word's opening one, so that scans for it do not overlap). One
   * between two other characters ({@code "http://u:p"w@h/x"}) is a password's: taken as closing, it
   * cut the URL before its '@' and the user and the password were written (r35).
   */
  private static boolean isClosingQuote(String s, int i) {
    return i + 1 >= s.length()
        || isDelimiter(s.charAt(i + 1))
        // And what follows an attribute's or a parameter's value: an element's end (url="..."/>,
        // "...">), the next attribute or parameter (&, +, =): r49, an XML element's quote was
        // not closed there and the text up to the next element's '@' was read as one URL.
        || ",;:.!?)]}>\\\"'/&+=<".indexOf(s.charAt(i + 1)) >= 0
        || i > 0 && isDelimiter(s.charAt(i - 1));
  }

  private static boolean isSchemeChar(char c) {
    return (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9')
        || c == '+'
        || c == '-'
        || c == '.';
  }

  private static boolean isLineBreak(char c) {
    return Character.isISOControl(c) && c != '\t' || c == '\u2028' || c == '\u2029';
  }

  private static boolean isDelimiter(char c) {
    // isSpaceChar too: isWhitespace leaves out the no-break spaces (U+00A0, U+2007, U+202F), and a
    // password with one after "failed:\u00A0" was written whole (r49).
    return Character.isWhitespace(c) || Character.isSpaceChar(c) || Character.isISOControl(c);
  }

  /**
   * {@code word}, which holds no {@code ://}, without the user-info of a URL written without its
   * two slashes after a scheme: scheme-relative ({@code //user:password@h/x}, a redirect's {@code
   * Location}), or with one slash ({@code http:/u:pw@h/x}, which lenient parsers take as a URL).
   * The user-info is everything up to the last {@code @}, as for any URL ({@link #userInfoEnd}). A
   * one-letter scheme is a Windows drive ({@code C:/Users/a@b}) and is left alone. What comes
   * before such a URL is looked at on its own ({@link #withoutBareUserInfo}): a URL written later
   * in the word ({@code u:pw@h/cb?next=//app/x}, {@code u:pw@h/x/ab:/c}) is not its authority.
   */
  private static String withoutLooseUserInfo(String word) {
    int at = word.lastIndexOf('@');
    if (at < 0) {
      return word;
    }
    int urlStart = -1;
    int authStart = -1;
    int slashes = word.indexOf("//");
    if (slashes >= 0 && (slashes == 0 || "\"'(<[=".indexOf(word.charAt(slashes - 1)) >= 0)) {
      urlStart = slashes;
      authStart = slashes + 2;
    } else {
      int colon = word.indexOf(":/");
      int name = colon;
      while (name > 0 && isSchemeChar(word.charAt(name - 1))) {
        name--;
      }
      if (colon - name >= 2 && Character.isLetter(word.charAt(name))) {
        urlStart = name;
        authStart = colon + 2;
      }
    }
    if (authStart < 0) {
      return withoutBareUserInfo(word, at);
    }
    String url = at >= authStart ? word.substring(0, authStart) + word.substring(at + 1) : word;
    return withoutBareHead(url, urlStart);
  }

  /**
   * {@code word} with the part before {@code urlStart} (where a URL written in it starts) passed
   * through {@link #withoutBareUserInfo}: {@code u:pw@h/cb?next=https://app/x} is a user-info
   * written without a scheme, then a redirect's target; the target's own separator must not hide
   * the first.
   */
  private static String withoutBareHead(String word, int urlStart) {
    if (urlStart <= 0) {
      return word;
    }
    int at = word.lastIndexOf('@', urlStart - 1);
    if (at < 0) {
      return word;
    }
    String head = word.substring(0, urlStart);
    String clean = withoutBareUserInfo(head, at);
    return clean == head ? word : clean + word.substring(urlStart);
  }

  /**
   * Words before a {@code :} that name what follows it as an address, not as a user name before its
   * password: {@code mailto:a@b.example}, {@code sip:alice@pbx}, an AWS ARN ({@code
   * arn:aws:sts::1:assumed-role/R/alice@example.com}), a Google Cloud IAM member's type where no
   * one names a user so ({@code serviceAccount:bot@p.iam.gserviceaccount.com}). Not the IAM types
   * that are also common user names ({@code user}, {@code group}, {@code email}, {@code admin}...):
   * {@code user:hunter2@db.example} is a database URL without its scheme as much as an IAM member,
   * and over-redacting is preferred to leaking ({@code user:alice@example.com} reads {@code
   * <redacted>@example.com}). Nor a mail's header names ({@code to}, {@code from}, {@code cc},
   * {@code bcc}), for the same reason: {@code to:hunter2@db.example} is written {@code
   * <redacted>@db.example}, and so is {@code to:a@b.example}.
   */
  private static final String[] ADDRESS_PREFIXES = {
    "mailto", "sip", "sips", "tel", "xmpp", "acct", "arn", "urn", "serviceAccount", "principalSet"
  };

  /**
   * {@code word} (no scheme, no {@code //}) with a user-info and password written bare, as a URL
   * without its scheme: {@code u:pw@h/x} (OkHttp 3's {@code unexpected url: u:pw@h/x}, a
   * configuration's host field), written {@code <redacted>@h/x}. Taken as one when a {@code :}
   * comes before its last {@code @} (at {@code at}); it starts after a quote, bracket, {@code =},
   * {@code ,} or {@code /} ({@code redis/admin:pw@db}, {@code /proxy/u:pw@h/y}). An address ({@code
   * a@b.example}) has no {@code :} before its {@code @} and is kept, as is a drive's path ({@code
   * C:/Users/a@b}); {@code host:443@x} is over-redacted. Kept too, as no user-info: an address
   * after one of {@link #ADDRESS_PREFIXES} with nothing but punctuation after its domain (a URL's
   * path or port after it is a user-info's host: {@code user:pw@h/x} is redacted); a version after
   * a Maven coordinate ({@code org.acme:lib@1.2.3}: a group with a dot; {@code root:pw@1.2} is a
   * user-info); a time with nothing after its host ({@code 12:30@worker-3}; {@code 12:34@db:5432}
   * is a user-info).
   */
  private static String withoutBareUserInfo(String word, int at) {
    if (isDigest(word, at + 1) && word.lastIndexOf('@', at - 1) < 0) {
      // An image's digest (docker.io/library/redis:7.2@sha256:0123...): a name and tag before it,
      // no user-info; no host is written as sha256 followed by a dozen hex digits or more.
      return word;
    }
    int colon = word.indexOf(':');
    while (colon > 0 && colon < at && isQuote(word.charAt(colon - 1))) {
      // A JSON key's colon ({"email":"a@b.example"}, {"code":400,"email":...}, {"a":{...}}): a
      // user-info starts after it, if anywhere. Told by the key's closing quote alone: a password
      // may start with a brace or a bracket (admin:{pw}@db was written whole, r32).
      colon = word.indexOf(':', colon + 1);
    }
    if (colon < 0 || colon > at || at == word.length() - 1) {
      return word;
    }
    // It starts after a '/' too: a user-info written after a path or a name's '/'
    // (redis/admin:pw@db:6379, a redirect's Location /proxy/user:pw@h/y) is one all the same; the
    // part before it is kept.
    int start = colon;
    while (start > 0 && "\"'(<[=,/".indexOf(word.charAt(start - 1)) < 0) {
      start--;
    }
    char afterColon = word.charAt(colon + 1);
    if (afterColon == '/' || afterColon == '\\' && colon - start == 1) {
      // A drive's path (C:/Users/a@b, C:\Users\a@b), not a password; a password may start with a
      // backslash (admin:\SECRET@h/x): only a one-letter name before it is a drive.
      return word;
    }
    if (start > 0 && word.charAt(start - 1) == '[' && isBracketedHostAndPort(word, start, at)) {
      return word; // [::1]:8080@pool-2: an IPv6 literal and a port, which no user-info holds
    }
    if (isAddress(word, start, colon, at)
        || isVersion(word, start, colon, at)
        || isTime(word, start, colon, at)) {
      return word;
    }
    return word.substring(0, start) + REDACTED + word.substring(at);
  }

  /**
   * Whether {@code word[start, at)} is an IPv6 literal's inside (hex digits, {@code :}, {@code .}),
   * its {@code ]}, {@code :} and a port's digits.
   */
  private static boolean isBracketedHostAndPort(String word, int start, int at) {
    int close = word.indexOf(']', start);
    if (close < 0 || close + 2 >= at || word.charAt(close + 1) != ':') {
      return false;
    }
    for (int i = start; i < close; i++) {
      char c = word.charAt(i);
      if (Character.digit(c, 16) < 0 && c != ':' && c != '.') {
        return false;
      }
    }
    return isDigits(word, close + 2, at);
  }

  private static boolean isQuote(char c) {
    return c == '"' || c == '\'';
  }

  /**
   * Whether {@code word[start, colon)} is one of {@link #ADDRESS_PREFIXES} and the domain after the
   * {@code @} at {@code at} has a dot and ends the word, punctuation aside.
   */
  private static boolean isAddress(String word, int start, int colon, int at) {
    boolean known = false;
    boolean mailto = colon - start == 6 && word.regionMatches(true, start, "mailto", 0, 6);
    for (String prefix : ADDRESS_PREFIXES) {
      if (colon - start == prefix.length()
          && word.regionMatches(true, start, prefix, 0, colon - start)) {
        known = true;
        break;
      }
    }
    if (!known) {
      return false;
    }
    // The address itself has no ':' (sip:alice:pw@pbx is a SIP URI's user and password, RFC 3261),
    // nor a second address or user-info after a ',' or ';' (mailto:a@b.example,admin:pw@db); an
    // ARN's has its ':' and '/' (arn:aws:sts::1:assumed-role/R/alice@example.com).
    boolean arn = colon - start == 3 && word.regionMatches(true, start, "arn", 0, 3);
    for (int i = colon + 1; i < at; i++) {
      char c = word.charAt(i);
      if (c == ','
          || c == ';'
          || c == '@'
          || Character.isWhitespace(c)
          || (!arn && (c == ':' || c == '/'))) {
        return false;
      }
    }
    int end = hostEnd(word, at + 1);
    if (word.indexOf('.', at + 1) < 0 || word.indexOf('.', at + 1) >= end) {
      return false; // a bare host (user:pw@localhost) is a user-info's
    }
    if (mailto && end < word.length() && word.charAt(end) == '?') {
      return true; // a mailto's headers (?subject=hi, RFC 6068): the query rule drops them
    }
    return onlyPunctuationAfter(word, end);
  }

  /**
   * Whether {@code word} holds nothing but a sentence's punctuation from {@code end} on: a path,
   * port or query after a host makes it a URL's host, and what comes before its {@code @} a
   * user-info.
   */
  private static boolean onlyPunctuationAfter(String word, int end) {
    for (int i = end; i < word.length(); i++) {
      if (".,;:)]}>\"'!`*|".indexOf(word.charAt(i)) < 0) {
        return false;
      }
    }
    return true;
  }

  /**
   * Whether what follows the {@code @} at {@code at} is a version ({@code 1.2.3}, {@code
   * 1.2.3-SNAPSHOT}): numbers and dots, not the four of an IPv4 address.
   */
  private static boolean isVersion(String word, int start, int colon, int at) {
    if (word.lastIndexOf('.', colon) < start) {
      // A Maven coordinate's group is a reversed domain (org.acme:lib@1.2.3); a user name without
      // a dot before a host that reads as a number (root:hunter2@1.2) is a user-info.
      return false;
    }
    int i = at + 1;
    int labels = 0;
    while (i < word.length() && word.charAt(i) >= '0' && word.charAt(i) <= '9') {
      labels++;
      while (i < word.length() && word.charAt(i) >= '0' && word.charAt(i) <= '9') {
        i++;
      }
      if (i + 1 < word.length()
          && word.charAt(i) == '.'
          && word.charAt(i + 1) >= '0'
          && word.charAt(i + 1) <= '9') {
        i++;
      } else {
        break;
      }
    }
    if (labels < 2 || labels == 4) {
      return false;
    }
    return i == word.length() || "-+,;)]}>\"'!".indexOf(word.charAt(i)) >= 0;
  }

  /**
   * Whether {@code word[start, at)} is a time (one or two digits, {@code :} and two digits) and the
   * host after the {@code @} ends the word.
   */
  private static boolean isTime(String word, int start, int colon, int at) {
    int hours = colon - start;
    if (hours < 1 || hours > 2 || at - colon != 3) {
      return false;
    }
    if (!onlyPunctuationAfter(word, hostEnd(word, at + 1))) {
      return false; // 12:34@db:5432/x: a port or path after the host, a user-info's
    }
    for (int i = start; i < at; i++) {
      char c = word.charAt(i);
      if (i != colon && (c < '0' || c > '9')) {
        return false;
      }
    }
    return true;
  }

  /** Where the host starting at {@code from} ends: the first character no host holds. */
  private static int hostEnd(String word, int from) {
    int i = from;
    while (i < word.length()) {
      char c = word.charAt(i);
      if (!(c >= 'a' && c <= 'z'
          || c >= 'A' && c <= 'Z'
          || c >= '0' && c <= '9'
          || c == '.'
          || c == '-'
          || c == '_')) {
        break;
      }
      i++;
    }
    // A trailing dot is a sentence's.
    while (i > from && word.charAt(i - 1) == '.') {
      i--;
    }
    return i;
  }

  /**
   * {@code word} with what comes before the first URL in it ({@code ://} or {@code :\/\/} and its
   * scheme's name) passed through {@link #withoutLooseUserInfo}: {@code
   * u:pw@h/cb?next=https://app/x} is a user-info written without a scheme, then a redirect's
   * target, and the target's separator must not hide the first (its user-info is found after it).
   */
  private static String withoutUserInfoBeforeUrl(String word) {
    int scheme = word.indexOf("://");
    int escaped = word.indexOf(":\\/\\/");
    if (escaped >= 0 && (scheme < 0 || escaped < scheme)) {
      scheme = escaped;
    }
    int name = scheme;
    while (name > 0 && isSchemeChar(word.charAt(name - 1))) {
      name--;
    }
    if (name <= 0 || word.lastIndexOf('@', name - 1) < 0) {
      return word;
    }
    String head = word.substring(0, name);
    String clean = withoutLooseUserInfo(head);
    return clean == head ? word : clean + word.substring(name);
  }

  /**
   * Drops a query (from any {@code ?} followed by something), and for URL-like words also the
   * fragment, the user-info and the path parameters. A lone trailing {@code ?} ("is it up?") stays.
   */
  static String cleanWord(String w, PathMask mask) {
    String clean = cleanWordAsIs(w, mask);
    // Checked on what the pass above left, not only when it left the word as it was: dropping a
    // query (u%3Apw%40h?x=1) must not hide the encoded user-info still in front of it. Not on a
    // word holding a plain URL: once that is parsed, a %40 in its path (/users/a%40b.example) is
    // a character of the path, and decoding it would read it as the end of a user-info and write
    // what follows it as the host.
    if (!hasEncodedAt(clean) || clean.contains("://") || clean.contains(":\\/\\/")) {
      return clean;
    }
    // A user-info percent-encoded (u%3Apw%40h%2Fx), or a URL encoded twice
    // (http%253A%252F%252Fu%253Apw%2540h): the rules above read '@', ':' and '://' and those
    // encoded once in a URL's place. Decoded once, then twice: when cleaning the decoded word
    // removes something, that is what the word hid, and the decoded word is written cleaned.
    // Every level but the last decoded at once (u%25253Apw%252540h, r33; five levels or more,
    // r35: four were decoded one at a time), then the last: each looked at only when it changes.
    String collapsed = percentLevelsCollapsed(clean);
    if (!collapsed.equals(clean)) {
      String cleanCollapsed = cleanWordAsIs(collapsed, mask);
      if (!cleanCollapsed.equals(collapsed)) {
        // What changed may be only the query cut (u%253Apw%2540h%253Fa at three levels or more,
        // r49): the user-info left in front of it is read once decoded, as below.
        String decodedClean = percentDecoded(cleanCollapsed);
        if (!decodedClean.equals(cleanCollapsed)) {
          String again = cleanWordAsIs(decodedClean, mask);
          if (!again.equals(decodedClean)) {
            return again;
          }
        }
        return cleanCollapsed;
      }
    }
    String decoded = percentDecoded(collapsed);
    if (!decoded.equals(collapsed)) {
      String cleanDecoded = cleanWordAsIs(decoded, mask);
      if (!cleanDecoded.equals(decoded)) {
        return cleanDecoded;
      }
    }
    return clean;
  }

  /**
   * Whether {@code w} holds an {@code @} percent-encoded once or more ({@code %40}, {@code %2540}).
   */
  private static boolean hasEncodedAt(String w) {
    for (int i = w.indexOf('%'); i >= 0; i = w.indexOf('%', i + 1)) {
      if (encodedCharEnd(w, i, "40") >= 0) {
        return true;
      }
    }
    return false;
  }

  /**
   * {@code s} with each {@code %XX} (two hex digits) standing for an ASCII character decoded; any
   * other {@code %} and what follows it kept as it is.
   */
  private static String percentDecoded(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%' && i + 2 < s.length()) {
        int hi = Character.digit(s.charAt(i + 1), 16);
        int lo = Character.digit(s.charAt(i + 2), 16);
        if (hi >= 0 && hi < 8 && lo >= 0) {
          b.append((char) (hi * 16 + lo));
          i += 2;
          continue;
        }
      }
      b.append(c);
    }
    return b.toString();
  }

  /**
   * {@code s} with each {@code %} followed by one or more {@code 25} and two hex digits written
   * {@code %} and those two digits: every level of percent-encoding but the last decoded at once,
   * in one pass ({@code %2525253A} as {@code %3A}). A {@code %25} followed by no hex digits stays.
   */
  static String percentLevelsCollapsed(String s) {
    StringBuilder b = null;
    int done = 0;
    for (int i = s.indexOf('%'); i >= 0; i = s.indexOf('%', i + 1)) {
      int j = i + 1;
      while (s.startsWith("25", j) && isHexAt(s, j + 2) && isHexAt(s, j + 3)) {
        j += 2;
      }
      if (j > i + 1) {
        if (b == null) {
          b = new StringBuilder(s.length());
        }
        b.append(s, done, i + 1);
        done = j;
        i = j - 1;
      }
    }
    return b == null ? s : b.append(s, done, s.length()).toString();
  }

  private static boolean isHexAt(String s, int i) {
    return i < s.length() && Character.digit(s.charAt(i), 16) >= 0;
  }

  /** As {@link #cleanWord}, on the word as it is written (no percent-decoding). */
  private static String cleanWordAsIs(String w, PathMask mask) {
    String word = withoutUserInfoBeforeUrl(w);
    int scheme = word.indexOf("://");
    int separator = 3;
    if (scheme < 0) {
      // A URL inside JSON whose encoder escapes '/' (http:\/\/user:password@host\/path).
      scheme = word.indexOf(":\\/\\/");
      separator = 5;
    }
    if (scheme < 0) {
      word = withoutLooseUserInfo(word);
    }
    int pathStart = word.startsWith("/") ? 0 : -1;
    if (scheme >= 0) {
      int authStart = scheme + separator;
      int at = userInfoEnd(word, authStart, nextUrl(word, authStart));
      if (at >= 0) {
        word = withoutUserInfoTo(word, authStart, at);
      }
      int authEnd = authStart;
      // A ';' too: http://host;jsessionid=S is a session's credential, as in a path.
      while (authEnd < word.length() && "/?#;".indexOf(word.charAt(authEnd)) < 0) {
        authEnd++;
      }
      pathStart = authEnd;
    }
    if (pathStart >= 0) {
      // Before the query is cut: a password of a URL inside the path may hold a '?' or '#'.
      // Encoded any number of times, or without a scheme, as a path's (r35: a URL encoded three
      // times or more in a URL's path, or %2F%2Fu%3Apw%40h, wrote the password).
      word = word.substring(0, pathStart) + withoutEncodedUserInfo(word.substring(pathStart));
    } else {
      word = withoutNestedUserInfo(word); // a percent-encoded URL (http%3A%2F%2Fu%3Ap%40h)
    }
    int q = word.indexOf('?');
    if (q >= 0 && q < word.length() - 1) {
      word = word.substring(0, q);
    }
    word = withoutEncodedQuery(word, pathStart >= 0 || nextSeparator(word, 0) >= 0);
    if (pathStart >= 0) {
      int f = word.indexOf('#');
      if (f >= 0) {
        word = word.substring(0, f);
      }
      if (pathStart < word.length()) {
        word =
            word.substring(0, pathStart)
                + masked(withoutPathParameters(word.substring(pathStart)), mask);
      }
    }
    // A token's shape anywhere in the word: a URL percent-encoded whole
    // (https%3A%2F%2F...%2Fbot1%3A
    // AA...), a token written alone (bot1:AA..., 1234567:AA...) has no path to be masked as.
    return withoutKnownTokens(word);
  }
}
