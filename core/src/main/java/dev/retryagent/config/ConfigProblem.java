package dev.retryagent.config;

import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One thing wrong with a configuration: where it is (source, 1-based line and column, key path such
 * as {@code routes[1].retry.maxAttempts}) and what is wrong (what was found, what is allowed).
 * Immutable and thread-safe.
 */
public final class ConfigProblem {
  private static final Pattern PLAIN = Pattern.compile("[A-Za-z0-9_.:/*%@+$!\\[\\]{}-]+");
  private static final int MAX_SHOWN = 60;

  /** What {@link #shownHost} shows after a host's one colon: a port, a glob, or nothing. */
  private static final Pattern NOT_A_PASSWORD = Pattern.compile("\\s*([0-9]*|\\*)\\s*");

  /**
   * What {@link #withoutUserInfo} shows of a URL's authority without '@': a host name (a {@code
   * ${NAME}} or a glob's {@code *} in it too), a bracketed IPv6 address, a port of digits (not
   * none: {@code user:/pass}); or nothing ({@code file:///x}). Anything else there may be {@code
   * user:password}.
   */
  static final Pattern AUTHORITY =
      Pattern.compile("(([A-Za-z0-9._~$}{*-]+|\\[[0-9A-Fa-f:.*]+\\])(:[0-9]+|:\\*)?)?");

  private final String source;
  private final int line;
  private final int column;
  private final String path;
  private final String message;

  /**
   * @param source file name, {@code agent argument}, a property or variable name
   * @param line 1-based, or 0 when unknown
   * @param column 1-based, or 0 when unknown
   * @param path key path such as {@code routes[1].retry.maxAttempts}; empty when the problem is not
   *     about one key (a YAML syntax error, an unreadable file); a URL in it is kept without its
   *     user-info and query, as {@link #shown} shows one
   * @param message what was found and what is allowed
   */
  ConfigProblem(String source, int line, int column, String path, String message) {
    this.source = Objects.requireNonNull(source, "source");
    this.line = Math.max(0, line);
    this.column = Math.max(0, column);
    // A key is part of the path, and a URL written where its key belongs (a ':' too many) is a
    // key: its user-info and query go as in a value shown.
    this.path = withoutUserInfo(Objects.requireNonNull(path, "path"));
    this.message = Objects.requireNonNull(message, "message");
  }

  public String source() {
    return source;
  }

  /** 1-based line, or 0 when unknown. */
  public int line() {
    return line;
  }

  /** 1-based column, or 0 when unknown. */
  public int column() {
    return column;
  }

  /** Key path such as {@code routes[1].retry.maxAttempts}, or empty. */
  public String path() {
    return path;
  }

  /** What was found and what is allowed. */
  public String message() {
    return message;
  }

  /** {@code config.yml:12:5: routes[1].retry.maxAttempts: found 0; allowed 1..10}. */
  @Override
  public String toString() {
    StringBuilder out = new StringBuilder(source);
    if (line > 0) {
      out.append(':').append(line);
      if (column > 0) {
        out.append(':').append(column);
      }
    }
    out.append(": ");
    if (!path.isEmpty()) {
      out.append(path).append(": ");
    }
    return out.append(message).toString();
  }

  /**
   * A value as a message shows it after "found": bare when it is one simple token, else quoted with
   * control characters escaped; long values cut. A URL's user-info is replaced by {@code ***}
   * wherever the value stands (a Redis URL written as {@code fleet.redis} rather than {@code
   * fleet.redis.url} holds a password), and before the cut, which could leave a password without
   * its {@code @}.
   */
  static String shown(String text) {
    String r = withoutUserInfo(text);
    String t = r.length() > MAX_SHOWN ? r.substring(0, MAX_SHOWN) + "..." : r;
    if (PLAIN.matcher(t).matches()) {
      return t;
    }
    StringBuilder out = new StringBuilder("\"");
    for (int i = 0; i < t.length(); i++) {
      char c = t.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (Character.isISOControl(c) || c == 0x2028 || c == 0x2029) {
        // Every control character by its code (C1 and the line separators too: a terminal or a
        // log reader may act on them), never as it is.
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }

  /**
   * A host as {@link #shown} shows it, its user-info ({@code user:password@}, up to the last
   * {@code @}) written {@code ***} also without a scheme: {@code match.hosts} is an authority.
   * Without an {@code @}, a port that is not one (digits or {@code *}) is written {@code ***}: in
   * {@code user:password}, the {@code @host} left out, the password stands where the port would.
   */
  static String shownHost(String text) {
    return shown(hostHidden(text));
  }

  /**
   * {@link #shownHost} before {@link #shown} quotes and cuts it: its user-info, or a port that is
   * not one, {@code ***} (a URL's user-info is left to {@link #withoutUserInfo}).
   */
  private static String hostHidden(String text) {
    int at = text.lastIndexOf('@');
    int scheme = text.indexOf("://");
    if (at < 0 && scheme < 0) {
      int colon = text.indexOf(':');
      boolean onePort = colon >= 0 && colon == text.lastIndexOf(':');
      return onePort && !NOT_A_PASSWORD.matcher(text.substring(colon + 1)).matches()
          ? text.substring(0, colon + 1) + "***"
          : text;
    }
    return at < 0 || (scheme >= 0 && scheme < at) ? text : "***" + text.substring(at);
  }

  /**
   * A path as {@link #shown} shows it, what follows its first {@code ?} or {@code #} (a query, a
   * fragment) written {@code ***} also without a scheme: {@code match.paths} is a path.
   */
  static String shownPath(String text) {
    // User-info first: a password may hold a '?' (https://user:pa?ss@host).
    return shown(queryHidden(withoutUserInfo(text)));
  }

  /** {@code text} with what follows its first {@code ?} or {@code #} written {@code ***}. */
  private static String queryHidden(String text) {
    int q = text.indexOf('?');
    int f = text.indexOf('#');
    int cut = q < 0 ? f : f < 0 ? q : Math.min(q, f);
    return cut < 0 || cut == text.length() - 1 ? text : text.substring(0, cut + 1) + "***";
  }

  /**
   * A value whose key type is not known (written where a section, the list of routes or a route
   * belongs) as a problem shows it: what any key type hides is hidden, as {@link #shownHost} and
   * {@link #shownPath} hide it, also without a scheme. {@code fleet: { redis: "user:pw@cache" }}
   * and {@code match: "/v1/x?token=..."} are a password and a query written one level too high.
   */
  static String shownAny(String text) {
    return shown(withoutSecrets(text, false));
  }

  /**
   * {@code text} without what any key type hides: user-info with or without a scheme, a port that
   * is not one, a URL's authority that is not host[:port] ({@link #withoutUserInfo}, with {@code
   * portIsPassword}), a query or fragment. Not quoted nor cut.
   */
  static String withoutSecrets(String text, boolean portIsPassword) {
    return queryHidden(withoutUserInfo(hostHidden(text), portIsPassword));
  }

  /**
   * {@code text} with the user-info of each URL-like word ({@code scheme://user:password@host})
   * replaced by {@code ***}, up to the text's last {@code @} (a password may hold a {@code /}, a
   * blank or a {@code ://}: the text is one value or key), and its query or fragment by {@code
   * ?***} ({@code redis://host?password=...} is how other clients take a password). A URL whose
   * {@code @host} was left out ({@code https://user:password}, an empty variable say) holds its
   * password where the host and port would be: without an {@code @}, what follows the scheme up to
   * its path, query or fragment is shown only where it reads as {@code host[:port]}, else all that
   * follows is {@code ***}. A password written as a host name alone ({@code https://secret}) or
   * made of digits ({@code https://user:1234}) reads as one and is shown. A {@code redis://} or
   * {@code rediss://} word is first redacted as {@link RedisUrl#redact} does, which also checks its
   * database.
   */
  static String withoutUserInfo(String text) {
    return withoutUserInfo(text, false);
  }

  /**
   * {@link #withoutUserInfo(String)}, and where {@code portIsPassword}, a port in an authority
   * without {@code @} read as a password too (all that follows the scheme {@code ***}): for a value
   * that is never a URL (a file path), where {@code https://user:1234} is more likely a mistaken
   * variable's password than a port meant there.
   */
  static String withoutUserInfo(String text, boolean portIsPassword) {
    int scheme = text.indexOf("://");
    if (scheme < 0) {
      return text;
    }
    text = withoutRedisPasswords(text, scheme);
    scheme = text.indexOf("://");
    StringBuilder out = new StringBuilder(text.length());
    int done = 0;
    while (scheme >= 0) {
      int start = scheme + 3;
      // The text is one value or key: a blank or a "://" after the scheme may be the password's.
      int at = text.lastIndexOf('@');
      int from = start;
      if (at >= start) {
        out.append(text, done, start).append("***");
        done = at;
        from = at + 1;
      } else {
        int host = start;
        while (host < text.length() && "/?#".indexOf(text.charAt(host)) < 0) {
          host++;
        }
        Matcher authority = AUTHORITY.matcher(text.substring(start, host));
        if (!authority.matches() || (portIsPassword && authority.group(3) != null)) {
          return out.append(text, done, start).append("***").toString();
        }
      }
      int end = from;
      while (end < text.length() && !Character.isWhitespace(text.charAt(end))) {
        end++;
      }
      int query = from;
      while (query < end && text.charAt(query) != '?' && text.charAt(query) != '#') {
        query++;
      }
      if (query < end) {
        out.append(text, done, query).append("?***");
        done = end;
      }
      scheme = text.indexOf("://", end);
    }
    return out.append(text, done, text.length()).toString();
  }

  /** {@code text} with each whitespace-delimited word that starts {@code redis(s)://} redacted. */
  private static String withoutRedisPasswords(String text, int firstScheme) {
    StringBuilder out = null;
    int done = 0;
    for (int scheme = firstScheme; scheme >= 0; scheme = text.indexOf("://", scheme + 3)) {
      int word = scheme;
      while (word > 0 && !Character.isWhitespace(text.charAt(word - 1))) {
        word--;
      }
      if (word < done || !RedisUrl.isRedisScheme(text.substring(word, scheme))) {
        continue;
      }
      int end = scheme + 3;
      while (end < text.length() && !Character.isWhitespace(text.charAt(end))) {
        end++;
      }
      if (out == null) {
        out = new StringBuilder(text.length());
      }
      out.append(text, done, word).append(RedisUrl.redact(text.substring(word, end)));
      done = end;
    }
    return out == null ? text : out.append(text, done, text.length()).toString();
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ConfigProblem)) {
      return false;
    }
    ConfigProblem t = (ConfigProblem) o;
    return line == t.line
        && column == t.column
        && source.equals(t.source)
        && path.equals(t.path)
        && message.equals(t.message);
  }

  @Override
  public int hashCode() {
    return Objects.hash(source, line, column, path, message);
  }
}
