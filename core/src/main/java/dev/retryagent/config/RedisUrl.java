package dev.retryagent.config;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A {@code redis://} or {@code rediss://} (TLS) URL, as the IANA {@code redis} scheme writes it:
 * {@code redis://[[user]:password@]host[:port][/database]}. A user-info without a colon is a
 * password (the Redis 5 form, as Jedis reads it). User and password may be percent-encoded.
 *
 * <p>Neither {@link #toString()} nor any message of {@link #parse} ever contains the user-info:
 * those strings go to logs. Immutable.
 */
public final class RedisUrl {
  /** Redis's own default port. */
  public static final int DEFAULT_PORT = 6379;

  /**
   * A scheme as {@link #redact} shows it: a word at the start. A "://" after anything else (a
   * {@code user:pa://ss@cache} written without its scheme) is inside the user-info. (A password
   * alone with a "://", {@code pa://ss@cache}, reads as a scheme: what precedes it is shown.)
   */
  private static final Pattern SCHEME = Pattern.compile("\\s*[A-Za-z][A-Za-z0-9+.-]*");

  /**
   * What {@link #redact} shows of an authority without '@': a host name (a {@code ${NAME}} in it
   * too) or a bracketed IPv6 address (no zone: {@code [::1:%pw]} is a password as much as a zone),
   * and a port of digits (out of range or empty: still no password). An empty host is not shown:
   * {@code redis://:1234} is a password as much as a port.
   */
  private static final Pattern AUTHORITY =
      Pattern.compile("([A-Za-z0-9._~$}{-]+|\\[[0-9A-Fa-f:.]+\\])(:[0-9]*)?");

  private static final Pattern DATABASE = Pattern.compile("/[0-9]*");

  private final boolean tls;
  private final String host;
  private final int port;
  private final String user;
  private final String password;
  private final int database;

  private RedisUrl(boolean tls, String host, int port, String user, String password, int database) {
    this.tls = tls;
    this.host = host;
    this.port = port;
    this.user = user;
    this.password = password;
    this.database = database;
  }

  /**
   * Parses {@code url}.
   *
   * @throws IllegalArgumentException naming what is wrong, without the user-info
   */
  public static RedisUrl parse(String url) {
    if (url == null || url.trim().isEmpty()) {
      throw new IllegalArgumentException("fleet.redis.url must be set");
    }
    String s = url.trim();
    String lower = s.toLowerCase(Locale.ROOT);
    boolean tls;
    if (lower.startsWith("redis://")) {
      tls = false;
      s = s.substring("redis://".length());
    } else if (lower.startsWith("rediss://")) {
      tls = true;
      s = s.substring("rediss://".length());
    } else {
      throw new IllegalArgumentException("fleet.redis.url must start with redis:// or rediss://");
    }
    // The last '@' ends the user-info: a password may hold an unencoded '@', a host never does.
    int at = s.lastIndexOf('@');
    String userInfo = at < 0 ? null : s.substring(0, at);
    String rest = at < 0 ? s : s.substring(at + 1);
    if (rest.indexOf('?') >= 0 || rest.indexOf('#') >= 0) {
      throw new IllegalArgumentException(
          "fleet.redis.url takes no query or fragment: redis://[[user]:password@]host[:port][/db]");
    }
    int slash = rest.indexOf('/');
    String authority = slash < 0 ? rest : rest.substring(0, slash);
    String path = slash < 0 ? "" : rest.substring(slash + 1);
    String host;
    String portText = null;
    if (authority.startsWith("[")) {
      int close = authority.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException("fleet.redis.url has an unclosed IPv6 address");
      }
      host = authority.substring(1, close);
      String after = authority.substring(close + 1);
      if (after.startsWith(":")) {
        portText = after.substring(1);
      } else if (!after.isEmpty()) {
        throw new IllegalArgumentException("fleet.redis.url has text after the IPv6 address");
      }
    } else {
      int colon = authority.lastIndexOf(':');
      host = colon < 0 ? authority : authority.substring(0, colon);
      portText = colon < 0 ? null : authority.substring(colon + 1);
    }
    if (host.isEmpty()) {
      throw new IllegalArgumentException("fleet.redis.url has no host");
    }
    for (int i = 0; i < host.length(); i++) {
      char c = host.charAt(i);
      // A YAML scalar folded across lines gives "redis://cache :6379": no host has a blank, and
      // the JVMs would each find out only at their first call through the fleet limit.
      if (Character.isWhitespace(c) || Character.isISOControl(c)) {
        throw new IllegalArgumentException(
            "fleet.redis.url has a blank or a control character in its host"
                + " (a value folded across lines?): redis://[[user]:password@]host[:port][/db]");
      }
    }
    int port = portText == null ? DEFAULT_PORT : number("port", portText, 1, 65535);
    int database = path.isEmpty() ? 0 : number("database", path, 0, Integer.MAX_VALUE);
    String user = null;
    String password = null;
    if (userInfo != null) {
      int colon = userInfo.indexOf(':');
      if (colon < 0) {
        password = decode(userInfo);
      } else {
        user = colon == 0 ? null : decode(userInfo.substring(0, colon));
        password = decode(userInfo.substring(colon + 1));
      }
      if (password != null && password.isEmpty()) {
        password = null;
      }
    }
    return new RedisUrl(tls, host, port, user, password, database);
  }

  /**
   * {@code text} with anything that may be user-info replaced by {@code ***}, for messages about a
   * URL that could not be parsed: up to the last {@code @} when there is one; without one, what
   * follows the scheme unless it reads as {@code host[:port]}, and a path unless it reads as {@code
   * /database}. A URL whose {@code @host} was left out ({@code redis://user:password}, an empty
   * variable say) holds its password where the host, port or database would be, and a password may
   * hold {@code /}, {@code ?}, {@code #}, {@code :} or {@code [}: so what is shown is checked
   * against what a host, port and database may be, not searched for what a password may be. A
   * password written as a host name alone ({@code redis://secret}) reads as one and is shown.
   * Without an {@code @}, a scheme other than {@code redis} or {@code rediss} may be a user (the
   * password beginning with {@code //}): none of it is shown.
   */
  public static String redact(String text) {
    int scheme = text.indexOf("://");
    int start = scheme >= 0 && SCHEME.matcher(text.substring(0, scheme)).matches() ? scheme + 3 : 0;
    int at = text.lastIndexOf('@');
    if (at >= start) {
      return text.substring(0, start) + "***" + text.substring(at);
    }
    // Without '@', another scheme may be a user and the start of its password: svc://pw is the
    // user svc with the password //pw, its @host left out.
    if (start > 0 && !isRedisScheme(text.substring(0, scheme).trim())) {
      return "***";
    }
    int end = start;
    while (end < text.length() && "/?#".indexOf(text.charAt(end)) < 0) {
      end++;
    }
    if (!AUTHORITY.matcher(text.substring(start, end)).matches()) {
      // What follows is redacted too: a password may hold a '/'.
      return text.substring(0, start) + "***";
    }
    String tail = text.substring(end);
    return tail.isEmpty() || DATABASE.matcher(tail).matches()
        ? text
        : text.substring(0, end + 1) + "***";
  }

  /** True for {@code redis} and {@code rediss}, in any case: the schemes {@link #parse} takes. */
  static boolean isRedisScheme(String word) {
    return word.equalsIgnoreCase("redis") || word.equalsIgnoreCase("rediss");
  }

  /** True for {@code rediss://}. */
  public boolean tls() {
    return tls;
  }

  public String host() {
    return host;
  }

  public int port() {
    return port;
  }

  /** The ACL user, or null for Redis's {@code default} user. */
  public String user() {
    return user;
  }

  /** The password, or null. Never print it. */
  public String password() {
    return password;
  }

  /** The logical database number ({@code SELECT}), 0 by default. */
  public int database() {
    return database;
  }

  /** Equal when every part is equal, the credentials included. */
  @Override
  public boolean equals(Object o) {
    if (!(o instanceof RedisUrl)) {
      return false;
    }
    RedisUrl t = (RedisUrl) o;
    return tls == t.tls
        && host.equals(t.host)
        && port == t.port
        && Objects.equals(user, t.user)
        && Objects.equals(password, t.password)
        && database == t.database;
  }

  @Override
  public int hashCode() {
    return Objects.hash(tls, host, port, database);
  }

  /** {@code redis://host:port[/db]}: safe to log, never with the user-info. */
  @Override
  public String toString() {
    String h = host.indexOf(':') >= 0 ? "[" + host + "]" : host;
    return (tls ? "rediss://" : "redis://")
        + h
        + ":"
        + port
        + (database == 0 ? "" : "/" + database);
  }

  private static int number(String what, String text, int min, int max) {
    try {
      int n = Integer.parseInt(text);
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // reported below, without the text when it could be part of a secret
    }
    throw new IllegalArgumentException(
        "fleet.redis.url has an invalid " + what + " (" + min + ".." + max + ")");
  }

  /** Percent-decoding as in URIs ('+' stays '+', unlike form encoding). */
  private static String decode(String text) {
    if (text.indexOf('%') < 0) {
      return text;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(text.length());
    int i = 0;
    while (i < text.length()) {
      if (text.charAt(i) == '%'
          && i + 2 < text.length()
          && hex(text.charAt(i + 1)) >= 0
          && hex(text.charAt(i + 2)) >= 0) {
        out.write(hex(text.charAt(i + 1)) * 16 + hex(text.charAt(i + 2)));
        i += 3;
      } else {
        int cp = text.codePointAt(i);
        byte[] bytes = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
        out.write(bytes, 0, bytes.length);
        i += Character.charCount(cp);
      }
    }
    return new String(out.toByteArray(), StandardCharsets.UTF_8);
  }

  private static int hex(char c) {
    return Character.digit(c, 16);
  }
}
