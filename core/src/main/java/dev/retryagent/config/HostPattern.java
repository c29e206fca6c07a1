package dev.retryagent.config;

import dev.retryagent.internal.engine.Ipv6Text;
import dev.retryagent.internal.engine.TargetKey;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * One entry of {@code match.hosts}: a host glob, case-insensitive, where {@code *} matches any run
 * of characters (dots included), with an optional {@code :port}; no port (or {@code :*}) matches
 * any port. IPv6 literals are written in brackets, {@code [::1]:8080}, and match a request host
 * given with or without brackets and in any spelling of the address ({@code [0:0:0:0:0:0:0:1]}); a
 * trailing dot names the same host. A name in Unicode ({@code bücher.example}) is the same host as
 * its ASCII form ({@code xn--bcher-kva.example}, as OkHttp sends it), in the pattern and in the
 * request. Compiled once; {@link #matches} does not allocate but for a request's IPv6 address not
 * written as RFC 5952 writes it, or a request's host in Unicode.
 */
final class HostPattern {
  /** Port value meaning "any port". */
  static final int ANY_PORT = -1;

  // What a host pattern and an IPv6 literal may hold; checked without a regular expression (the
  // first one a JVM compiles costs ~35 classes and a lambda, in premain: issue 13).
  private static final String HOST_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_*.-";
  private static final String IPV6_CHARS = "0123456789abcdef:.*";

  /** What {@link #hostOf} names of an authority without '@': host[:port], IPv6 in brackets. */
  private static final Pattern SHOWN_HOST =
      Pattern.compile("([a-z0-9_*.-]+|\\[[0-9a-f:.*]+\\])(:([0-9]+|\\*))?");

  static final String EXAMPLES =
      "a host glob such as api.example.com, *.example.com:8443 or [::1]:8080";

  private final String text;
  private final Glob host;
  private final int port;

  private HostPattern(String text, String host, int port) {
    this.text = text;
    this.host = Glob.ignoringCase(host);
    this.port = port;
  }

  /** {@code [chars]+}: not empty, and every character one of {@code chars}. */
  private static boolean onlyOf(String text, String chars) {
    for (int i = 0; i < text.length(); i++) {
      if (chars.indexOf(text.charAt(i)) < 0) {
        return false;
      }
    }
    return !text.isEmpty();
  }

  /**
   * Compiles one pattern.
   *
   * @throws IllegalArgumentException saying what is allowed; its message never repeats user-info
   *     ({@code user:password@}) the text may hold
   */
  static HostPattern compile(String raw) {
    String s = raw.trim().toLowerCase(Locale.ROOT);
    if (s.isEmpty()) {
      throw new IllegalArgumentException("allowed " + EXAMPLES);
    }
    int scheme = s.indexOf("://");
    // The last '@' ends user-info, as in a URL (a password may hold one).
    int at = s.lastIndexOf('@');
    if (scheme >= 0) {
      throw new IllegalArgumentException(
          "allowed a host without a scheme"
              + (at > scheme ? " or user-info" : "")
              + ": write "
              + hostOf(s, scheme + 3)
              + " and put paths in match.paths");
    }
    if (s.indexOf('/') >= 0) {
      throw new IllegalArgumentException(
          "allowed a host without a path (put paths in match.paths), " + EXAMPLES);
    }
    if (at >= 0) {
      // Checked before the port: in user:password@host the password would pass for one.
      throw new IllegalArgumentException(
          "allowed a host without user-info (user@ or user:password@): a route matches hosts,"
              + " never credentials; write "
              + hostOf(s, 0));
    }
    String host;
    String portText = null;
    if (s.charAt(0) == '[') {
      int close = s.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException("allowed an IPv6 literal closed by ], e.g. [::1]:8080");
      }
      host = s.substring(1, close);
      String rest = s.substring(close + 1);
      if (!rest.isEmpty()) {
        if (rest.charAt(0) != ':') {
          throw new IllegalArgumentException("allowed [IPv6] or [IPv6]:port, e.g. [::1]:8080");
        }
        portText = rest.substring(1);
      }
      if (host.isEmpty() || !onlyOf(host, IPV6_CHARS) || host.indexOf(':') < 0) {
        throw new IllegalArgumentException("allowed an IPv6 address in brackets, e.g. [::1]:8080");
      }
    } else {
      int firstColon = s.indexOf(':');
      if (firstColon >= 0 && firstColon != s.lastIndexOf(':')) {
        // Two colons and no brackets: an IPv6 address, which cannot carry a port this way.
        host = s;
        if (!onlyOf(host, IPV6_CHARS)) {
          throw new IllegalArgumentException("allowed " + EXAMPLES);
        }
      } else if (firstColon >= 0) {
        host = s.substring(0, firstColon);
        portText = s.substring(firstColon + 1);
      } else {
        host = s;
      }
      if (!onlyOf(host, HOST_CHARS) && host.indexOf(':') < 0 && !TargetKey.isAscii(host)) {
        // A name in Unicode (bücher.example): compiled in its ASCII form, as OkHttp sends it and
        // as a request's host is compared (an ASCII pattern does not load TargetKey in premain).
        host = TargetKey.ascii(host);
        if (!onlyOf(host, HOST_CHARS)) {
          // IDNA maps some characters to ASCII ones no host name holds (the full-width colon and
          // at sign: b：8080, user：password＠host): refused, as written in ASCII they are, not read
          // as an IPv6 literal below.
          throw new IllegalArgumentException("allowed " + EXAMPLES);
        }
      }
      if (host.isEmpty() || !(onlyOf(host, HOST_CHARS) || host.indexOf(':') >= 0)) {
        throw new IllegalArgumentException("allowed " + EXAMPLES);
      }
    }
    int port = ANY_PORT;
    if (portText != null && !portText.equals("*")) {
      port = parsePort(portText);
    }
    host = oneSpelling(host);
    String canonical =
        (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + (port == ANY_PORT ? "" : ":" + port);
    return new HostPattern(canonical, host, port);
  }

  /**
   * The pattern's host as {@link #matches} compares a request's: an IPv6 address (no glob) in its
   * one spelling ({@code 0:0:0:0:0:0:0:1} is {@code ::1}, {@code ::ffff:10.0.0.1} is {@code
   * 10.0.0.1}), a name without its trailing dot. A glob over an IPv6 address matches the one
   * spelling; text that is no address is kept as written.
   */
  private static String oneSpelling(String host) {
    if (host.indexOf(':') >= 0) {
      String address = host.indexOf('*') >= 0 ? null : Ipv6Text.canonical(host, 0, host.length());
      return address == null ? host : address;
    }
    int to = host.length();
    return to > 1 && host.charAt(to - 1) == '.' && host.charAt(to - 2) != '*'
        ? host.substring(0, to - 1)
        : host;
  }

  /**
   * The host and port of the URL-like {@code s} whose authority starts at {@code from}, for a hint:
   * after its user-info (up to its last {@code @}: a password may hold one, or a {@code /}) and up
   * to its path, query or fragment, which may hold secrets ({@code ?sslpassword=...}, {@code
   * ;jsessionid=...}); the value itself is shown with them as {@code ***}. {@code the host alone}
   * when there is none, or when a {@code ?} or {@code #} comes before that {@code @}: it may be the
   * query's ({@code ?email=a@b.example&token=...}), and what follows it no host.
   */
  private static String hostOf(String s, int from) {
    int at = s.lastIndexOf('@');
    int start = Math.max(from, at + 1);
    int end = start;
    while (end < s.length() && "/?#".indexOf(s.charAt(end)) < 0) {
      end++;
    }
    for (int i = from; i < at; i++) {
      if (s.charAt(i) == '?' || s.charAt(i) == '#') {
        return "the host alone";
      }
    }
    // Without '@', a URL whose @host was left out (https://user:password) holds the password
    // where the host and port would be: it is named only where it reads as host[:port].
    return end > start && (at >= from || SHOWN_HOST.matcher(s.substring(start, end)).matches())
        ? s.substring(start, end)
        : "the host alone";
  }

  private static int parsePort(String text) {
    if (text.isEmpty() || text.length() > 5) {
      throw new IllegalArgumentException("allowed a port 1..65535 after the colon, or none");
    }
    int port = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < '0' || c > '9') {
        throw new IllegalArgumentException("allowed a port 1..65535 after the colon, or none");
      }
      port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("allowed a port 1..65535 after the colon, or none");
    }
    return port;
  }

  /**
   * True when the request host and port match. The host may be in any case, an IPv6 literal may
   * come with or without brackets, and one trailing dot (a fully qualified name) is ignored.
   */
  boolean matches(String requestHost, int requestPort) {
    if (port != ANY_PORT && port != requestPort) {
      return false;
    }
    if (requestHost == null) {
      return false;
    }
    int from = 0;
    int to = requestHost.length();
    if (to >= 2 && requestHost.charAt(0) == '[' && requestHost.charAt(to - 1) == ']') {
      from = 1;
      to--;
    }
    if (to > from + 1 && requestHost.charAt(to - 1) == '.') {
      to--;
    }
    if (requestHost.indexOf(':', from) >= 0 && !Ipv6Text.isCanonical(requestHost, from, to)) {
      // An IPv6 address in another spelling (rare: the JDK's URI keeps the application's, OkHttp
      // writes the one): compared in the one spelling, as the pattern was compiled, so that no
      // glob tells two spellings of one address apart. Then as written, below, as version 1
      // compared it: a glob written for that spelling ([::ffff:*] for the JDK's mapped
      // [::ffff:10.0.0.7], whose one spelling is 10.0.0.7) still matches what it matched.
      String address = Ipv6Text.canonical(requestHost, from, to);
      if (address != null && host.matches(address, 0, address.length())) {
        return true;
      }
    }
    int zone = requestHost.indexOf('%', from);
    if (zone > from && zone < to && requestHost.indexOf(':', from) >= 0) {
      // An IPv4-mapped address with a zone is written as IPv6 (::ffff:a00:1%eth0: Ipv6Text);
      // version 1 compared it as its IPv4 address, the zone as written (10.0.0.1%eth0), which a
      // glob such as 10.0.0.* matched: it still does.
      String ipv4 = Ipv6Text.canonical(requestHost, from, zone);
      if (ipv4 != null && ipv4.indexOf(':') < 0) {
        String written = ipv4 + requestHost.substring(zone, to);
        if (host.matches(written, 0, written.length())) {
          return true;
        }
      }
    }
    if (!TargetKey.isAscii(requestHost)) {
      // A name in Unicode (bücher.example; OkHttp sends xn--bcher-kva.example): compared in its
      // ASCII form, as the pattern was compiled. Then as written, below, as version 1 compared
      // it: an ASCII glob written for the Unicode text (b*.example) still matches what it did.
      // In lower case first, as TargetKey.host writes it: IDNA folds case only for the characters
      // Unicode 3.2 knew (STRAẞE would be another name than straße, its key strasse).
      String ascii = TargetKey.ascii(requestHost.substring(from, to).toLowerCase(Locale.ROOT));
      if (host.matches(ascii, 0, ascii.length())) {
        return true;
      }
    }
    return host.matches(requestHost, from, to);
  }

  /** True when this pattern matches every host and port. */
  boolean matchesEverything() {
    return port == ANY_PORT && host.matchesEverything();
  }

  /** Canonical text: lower case, IPv6 in brackets, {@code :port} when one was given. */
  @Override
  public String toString() {
    return text;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof HostPattern && text.equals(((HostPattern) o).text);
  }

  @Override
  public int hashCode() {
    return text.hashCode();
  }
}
