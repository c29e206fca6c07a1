package dev.retryagent.config;

import dev.retryagent.internal.Units;
import dev.retryagent.internal.observe.Sanitizer;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A complete, valid configuration: the file-level {@code agent} settings, the default policy and
 * the routes, each route's policy already merged over the defaults. Immutable and thread-safe;
 * obtained from {@link ConfigLoader}, {@link ConfigSources} or {@link #defaults()}.
 */
public final class AgentConfig {
  /** {@link #source()} of the built-in defaults. */
  public static final String BUILT_IN = "built-in defaults";

  /**
   * A URL's scheme followed by one {@code /}: {@link java.nio.file.Path} writes a URL's {@code //}
   * as {@code /} ({@code https:/user:password@host/x}); or by one or two {@code \}, a Windows habit
   * ({@code https:\\user:1234}). Two characters at least: {@code C:/} is a drive. The scheme starts
   * at a letter, also after a digit ({@code 1https:/user:1234}, a variable's junk before it). In a
   * class of its own: this class loads before the application's main, and a path with {@code :/} or
   * {@code :\} in it is rare, so the pattern is compiled only for one.
   */
  private static final class OneSlashUrl {
    static final Pattern PATTERN =
        Pattern.compile(
            "(?<![A-Za-z+.-])([A-Za-z][A-Za-z0-9+.-]+):(?:/(?!/)|\\\\{1,2}(?![\\\\/]))");

    /**
     * A URL's authority without user-info ending the value (a query or fragment may follow), its
     * scheme not part of a longer one nor after an {@code @} (a user-info's, redacted as such):
     * {@code x:https://}, a variable's junk before it, or a directory. Group 1 the scheme, 2 its
     * slashes, 3 the authority.
     */
    static final Pattern AUTHORITY_ALONE =
        Pattern.compile(
            "(?<![A-Za-z+.@-])([A-Za-z][A-Za-z0-9+.-]+):(//|/|\\\\{1,2})(?![/\\\\])"
                + "([^/\\\\?#@]+)(?:[?#].*)?$");
  }

  private static final AgentConfig DEFAULTS =
      new AgentConfig(
          1,
          Mode.ENFORCE,
          false,
          true,
          ClientSwitches.defaults(),
          LogLevel.INFO,
          MetricsSettings.defaults(),
          null,
          0,
          PathMask.NONE,
          null,
          null, // Policy.defaults(), when first asked for (BuiltIn)
          Collections.emptyList(),
          BUILT_IN,
          Collections.emptyList());

  /**
   * The built-in default policy, made when first asked for (at the first call), not when this class
   * is loaded: without a file, {@code premain} then loads none of the ~20 policy classes.
   */
  private static final class BuiltIn {
    static final Policy POLICY = Policy.defaults();
  }

  private final int version;
  private final Mode mode;
  private final boolean strict;
  private final boolean reload;
  private final ClientSwitches clients;
  private final LogLevel logLevel;
  private final MetricsSettings metrics;
  private final String deadLetterPath;
  private final long deadLetterMaxBytes;
  private final PathMask pathMask;
  private final FleetConfig fleet;

  /** Null for the built-in one: {@link #defaultPolicy()}. */
  private final Policy defaultPolicy;

  private final List<Route> routes;
  private final Route[] routeArray;
  private final String source;
  private final List<ConfigProblem> warnings;

  AgentConfig(
      int version,
      Mode mode,
      boolean strict,
      boolean reload,
      ClientSwitches clients,
      LogLevel logLevel,
      MetricsSettings metrics,
      String deadLetterPath,
      long deadLetterMaxBytes,
      PathMask pathMask,
      FleetConfig fleet,
      Policy defaultPolicy,
      List<Route> routes,
      String source,
      List<ConfigProblem> warnings) {
    this.version = version;
    this.mode = Objects.requireNonNull(mode, "mode");
    this.strict = strict;
    this.reload = reload;
    this.clients = Objects.requireNonNull(clients, "clients");
    this.logLevel = Objects.requireNonNull(logLevel, "logLevel");
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    this.deadLetterPath = deadLetterPath;
    this.deadLetterMaxBytes = deadLetterMaxBytes;
    this.pathMask = Objects.requireNonNull(pathMask, "pathMask");
    this.fleet = fleet;
    this.defaultPolicy = defaultPolicy;
    this.routeArray = routes.toArray(new Route[0]);
    this.routes = List.of(routeArray);
    this.source = Objects.requireNonNull(source, "source");
    this.warnings = List.copyOf(warnings);
  }

  /** The contract's built-in defaults: no routes, every key at its default. */
  public static AgentConfig defaults() {
    return DEFAULTS;
  }

  /** Format version; always 1. */
  public int version() {
    return version;
  }

  /** {@code agent.mode}: enforce (the default), observe or off. */
  public Mode mode() {
    return mode;
  }

  /** True: an invalid configuration at start stops the JVM. */
  public boolean strict() {
    return strict;
  }

  /** True: the file is watched and valid edits apply to new calls. */
  public boolean reload() {
    return reload;
  }

  /** {@code agent.clients}: which clients the agent instruments. */
  public ClientSwitches clients() {
    return clients;
  }

  /** {@code agent.log.level}: the most detailed log line written. */
  public LogLevel logLevel() {
    return logLevel;
  }

  /** {@code agent.metrics}: the JMX and Prometheus exporters. */
  public MetricsSettings metrics() {
    return metrics;
  }

  /**
   * File that receives one JSON line per call that gave up, or null when unset. Shown in a line
   * only as {@link #shownPath} shows it.
   */
  public String deadLetterPath() {
    return deadLetterPath;
  }

  /**
   * A dead-letter path ({@link #deadLetterPath()}, or the text of a {@link java.nio.file.Path} made
   * of it) as every line shows it: on one line, and what may be a password in it (a variable meant
   * for another key, {@code ${DLQ_URL}}, written there by mistake) written {@code ***}:
   *
   * <ul>
   *   <li>a URL's user-info and query, as a configuration problem shows a value; without an
   *       {@code @}, all that follows the scheme unless it reads as a host without a port followed
   *       by a path ({@code https://user:password}, {@code https://user:1234}: a port has no place
   *       in a file path; {@code https://secret}, also after {@code x:} or before a {@code #} or
   *       {@code ?}: a host alone names no file, a password whose {@code @host} was left out may
   *       stand there). Also where a {@code Path} wrote the URL's {@code //} as {@code /}, or it
   *       was written {@code \\}; for a host alone after one {@code /} or {@code \}, only a URL's
   *       scheme ({@code logs:/dlq} is a directory {@code logs:}'s file);
   *   <li>else a user-info without a scheme ({@code user:password@host:/dlq}, scp's form, or {@code
   *       user:password@host/dlq}): a {@code :} before the last {@code @} makes what runs from the
   *       start of its path segment to that {@code @} {@code ***}. A drive's {@code :} ({@code
   *       C:\}, {@code C:/}) is none, unless another {@code :} follows the {@code @} with a
   *       separator after it (no Windows path has one: {@code u:/password@host:/dlq} is user {@code
   *       u}'s). One in the last segment may be an NTFS stream's ({@code C:\data@x\f:s}): only the
   *       {@code @}'s segment is hidden ({@code C:\***@x\f:s}). A file path with a {@code :} in a
   *       directory before an {@code @} ({@code /data/10:00/app@1}) is shown so too; one with an
   *       {@code @} and no such {@code :} ({@code /var/log/app@1/dlq}) as written;
   *   <li>and one encoded: a {@code %3A} with an {@code @} or {@code %40} after it in its path
   *       segment ({@code u%3Apw%40host/x} shows {@code ***%40host/x}; {@code /srv/a%3Ab/app@1} as
   *       written).
   * </ul>
   *
   * <p>A file path is otherwise shown as written; {@code none} for null. So is a Windows path that
   * a one-letter user's password starting with a separator would read as ({@code C:\pw@host}): a
   * file named {@code pw@host} on drive {@code C:} is a real path an operator needs to see.
   */
  public static String shownPath(String path) {
    if (path == null) {
      return "none";
    }
    return withoutPassword(Sanitizer.oneLine(path));
  }

  /**
   * {@link #shownPath} but for its one line: also for a configuration problem about the path, which
   * {@link ConfigProblem#shown} then quotes (a NUL, say, that the key refused).
   */
  static String withoutPassword(String text) {
    // No ':' (nor a '%' of %3A): neither a URL nor user:password. A plain path ends here, before
    // any pattern loads.
    if (text.indexOf(':') < 0 && text.indexOf('%') < 0) {
      return text;
    }
    String shown = text;
    if (text.indexOf(":/") >= 0 || text.indexOf(":\\") >= 0) {
      String alone = withoutAuthorityAlone(text);
      if (alone != null) {
        shown = alone;
      } else {
        String url = OneSlashUrl.PATTERN.matcher(text).replaceAll("$1://");
        String redacted = ConfigProblem.withoutUserInfo(url, true);
        // Nothing redacted: the path as written, its single slashes kept.
        shown = redacted.equals(url) ? text : redacted;
      }
    }
    // Also after a URL's redaction: in user:password@host:/var/app@1 the "URL" is host://var/...
    return withoutEncodedUserInfo(withoutSchemelessUserInfo(shown));
  }

  /**
   * {@code text} with a URL's authority alone at its end ({@code https://secret}, also after a
   * space or {@code x:}, or followed by a query or fragment) shown {@code scheme://***}, or null
   * for none: a host alone names no file, a password whose {@code @host} was left out may. Written
   * {@code //}, any scheme but {@code file}; with one {@code /} (as a {@code Path} writes a URL) or
   * {@code \}, only a URL's scheme: {@code logs:/dlq} and {@code ab:\dlq} are local paths.
   */
  private static String withoutAuthorityAlone(String text) {
    Matcher m = OneSlashUrl.AUTHORITY_ALONE.matcher(text);
    while (m.find()) {
      String scheme = m.group(1);
      if (!scheme.equalsIgnoreCase("file") && (m.group(2).equals("//") || isUrlScheme(scheme))) {
        return text.substring(0, m.end(1)) + "://***";
      }
    }
    return null;
  }

  /** Whether {@code scheme} is one a URL written for another key (a DLQ's, a broker's) has. */
  private static boolean isUrlScheme(String scheme) {
    switch (scheme.toLowerCase(Locale.ROOT)) {
      case "http":
      case "https":
      case "ftp":
      case "ftps":
      case "sftp":
      case "ws":
      case "wss":
      case "smb":
      case "s3":
      case "gs":
      case "amqp":
      case "amqps":
      case "redis":
      case "rediss":
      case "ldap":
      case "ldaps":
      case "mongodb":
      case "postgresql":
      case "mysql":
        return true;
      default:
        return false;
    }
  }

  /**
   * {@code text} with a user-info whose {@code :} or {@code @} is percent-encoded ({@code
   * u%3Apw@host}, {@code u%3Apw%40host}) redacted from its path segment's start to the last
   * {@code @} or {@code %40} in that segment. An encoded user-info encodes a {@code /} too, so a
   * {@code %3A} with the {@code @} in a later segment ({@code /srv/a%3Ab/app@1}) is a file name.
   */
  private static String withoutEncodedUserInfo(String text) {
    String shown = text;
    int from = 0;
    int colon;
    while ((colon = colon(shown, from)) >= 0) {
      int start = segmentStart(shown, colon);
      int end = segmentEnd(shown, colon);
      int at = -1;
      for (int i = colon + 1; i < end; i++) {
        if (shown.charAt(i) == '@' || shown.regionMatches(true, i, "%40", 0, 3)) {
          at = i;
        }
      }
      if (at < 0 || isDrive(shown, colon)) {
        from = colon + 1;
        continue;
      }
      shown = shown.substring(0, start) + "***" + shown.substring(at);
      from = start + 3;
    }
    return shown;
  }

  /** The index just after the last '/' or '\' up to {@code at}, or 0. */
  private static int segmentStart(String text, int at) {
    return Math.max(text.lastIndexOf('/', at), text.lastIndexOf('\\', at)) + 1;
  }

  /** The index of the first '/' or '\' after {@code from}, or the text's length. */
  private static int segmentEnd(String text, int from) {
    for (int i = from; i < text.length(); i++) {
      if (text.charAt(i) == '/' || text.charAt(i) == '\\') {
        return i;
      }
    }
    return text.length();
  }

  /**
   * {@code text} with a user-info written without a scheme redacted, as {@link #shownPath} says.
   */
  private static String withoutSchemelessUserInfo(String text) {
    int at = text.lastIndexOf('@');
    if (at < 0) {
      return text;
    }
    // A literal ':' only: an encoded one is withoutEncodedUserInfo's.
    int first = text.indexOf(':');
    int colon = first;
    // A drive's colon, or a scheme's (a URL's user-info is redacted as a URL's), is none.
    while (colon >= 0 && colon < at && (isDrive(text, colon) || text.startsWith("://", colon))) {
      colon = text.indexOf(':', colon + 1);
    }
    if (colon < 0 || at < colon) {
      // A drive with another ':' after the '@' is no drive (u:/password@host:/dlq), unless that
      // ':' may be an NTFS stream's (C:\data@x\f:stream): in the last segment. Both read, the
      // password's side wins, but only the '@''s segment is hidden: the drive and directories stay.
      int after = text.indexOf(':', at);
      if (first < 0 || at < first || !isDrive(text, first) || after < 0) {
        return text;
      }
      if (segmentEnd(text, after) == text.length()) {
        int segment = segmentStart(text, at);
        return text.substring(0, segment) + "***" + text.substring(at);
      }
      colon = first;
    }
    // The user may be written after a directory; the password may hold a '/' or an '@'.
    int segment = segmentStart(text, colon);
    return text.substring(0, segment) + "***" + text.substring(at);
  }

  /**
   * The index of the first ':' or %3A (any case: a colon a URL's user-info encoded) from {@code
   * from}.
   */
  private static int colon(String text, int from) {
    for (int i = from; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == ':' || (c == '%' && text.regionMatches(true, i, "%3A", 0, 3))) {
        return i;
      }
    }
    return -1;
  }

  /** Whether the ':' at {@code colon} is a drive's: C:\, C:/, C: alone, also after \\?\ or \\.\. */
  private static boolean isDrive(String text, int colon) {
    if (text.charAt(colon) != ':') {
      return false;
    }
    int letter = colon - 1;
    boolean driveStart =
        letter == 0 || (letter == 4 && (text.startsWith("\\\\?\\") || text.startsWith("\\\\.\\")));
    if (!driveStart || !isAsciiLetter(text.charAt(letter))) {
      return false;
    }
    return colon + 1 == text.length()
        || text.charAt(colon + 1) == '/'
        || text.charAt(colon + 1) == '\\';
  }

  private static boolean isAsciiLetter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }

  /**
   * {@code agent.deadLetter.maxBytes}: the size the dead-letter file is not written past (a line
   * that would take it past is dropped and counted), or 0 when unset (no limit, the default).
   */
  public long deadLetterMaxBytes() {
    return deadLetterMaxBytes;
  }

  /**
   * {@code agent.redact.pathSegments}: how paths are masked in log lines, dead letters and {@code
   * explain}; {@link PathMask#NONE} by default.
   */
  public PathMask pathMask() {
    return pathMask;
  }

  /**
   * The {@code fleet} section: the Redis shared by the routes whose {@code rateLimit.scope} is
   * {@code fleet}; null when the file names none (no fleet code runs then).
   */
  public FleetConfig fleet() {
    return fleet;
  }

  /** The policy of calls no route claims; its route name is {@value Policy#DEFAULT_ROUTE}. */
  public Policy defaultPolicy() {
    Policy p = defaultPolicy;
    return p != null ? p : BuiltIn.POLICY;
  }

  /** The routes in file order; the first that matches a request wins. */
  public List<Route> routes() {
    return routes;
  }

  /**
   * The policy of a request: the first matching route's, else {@link #defaultPolicy()}. Returns an
   * existing object and allocates nothing, so it can run on every call.
   *
   * @param method any case
   * @param host any case; an IPv6 literal with or without brackets
   * @param port the effective port (80 or 443 when the URL has none)
   * @param path the request path without the query string (a query is ignored anyway); may be null
   *     when no route matches on the path ({@link #routesByPath()})
   */
  public Policy resolve(String method, String host, int port, String path) {
    for (Route route : routeArray) {
      if (route.matches(method, host, port, path)) {
        return route.policy();
      }
    }
    return defaultPolicy();
  }

  /**
   * True when some route matches on the path: {@link #resolve} reads its {@code path} only then
   * (otherwise it may be null).
   */
  public boolean routesByPath() {
    for (Route route : routeArray) {
      if (route.readsPath()) {
        return true;
      }
    }
    return false;
  }

  /** The file this came from, or {@value #BUILT_IN}. */
  public String source() {
    return source;
  }

  /**
   * What the file sets that is valid but most likely not what was meant (a {@code
   * retryOn.exceptions} name without its package, which matches nothing), in file order; said at
   * start-up, on reload and by {@code validate}, never refused (the configuration applies as
   * written). Empty for most files.
   */
  public List<ConfigProblem> warnings() {
    return warnings;
  }

  /** A copy with {@link #warnings()}. */
  AgentConfig withWarnings(List<ConfigProblem> warnings) {
    return copy(mode, strict, warnings);
  }

  /** A copy with another mode (an override from the agent argument, property or environment). */
  public AgentConfig withMode(Mode mode) {
    return mode == this.mode ? this : copy(mode, strict, warnings);
  }

  /** A copy with another {@code strict}. */
  public AgentConfig withStrict(boolean strict) {
    return strict == this.strict ? this : copy(mode, strict, warnings);
  }

  private AgentConfig copy(Mode mode, boolean strict, List<ConfigProblem> warnings) {
    return new AgentConfig(
        version,
        mode,
        strict,
        reload,
        clients,
        logLevel,
        metrics,
        deadLetterPath,
        deadLetterMaxBytes,
        pathMask,
        fleet,
        defaultPolicy,
        routes,
        source,
        warnings);
  }

  /** Equal when every setting is equal; {@link #source()} and the warnings are not compared. */
  @Override
  public boolean equals(Object o) {
    if (!(o instanceof AgentConfig)) {
      return false;
    }
    AgentConfig t = (AgentConfig) o;
    return version == t.version
        && mode == t.mode
        && strict == t.strict
        && reload == t.reload
        && clients.equals(t.clients)
        && logLevel == t.logLevel
        && metrics.equals(t.metrics)
        && Objects.equals(deadLetterPath, t.deadLetterPath)
        && deadLetterMaxBytes == t.deadLetterMaxBytes
        && pathMask.equals(t.pathMask)
        && Objects.equals(fleet, t.fleet)
        && defaultPolicy().equals(t.defaultPolicy())
        && routes.equals(t.routes);
  }

  @Override
  public int hashCode() {
    return Objects.hash(mode, strict, reload, clients, logLevel, metrics, defaultPolicy(), routes);
  }

  /** A multi-line summary for the start-up log: settings, then each route and its policy. */
  @Override
  public String toString() {
    StringBuilder out =
        new StringBuilder("retry-agent configuration from ")
            .append(source)
            .append(": mode=")
            .append(mode.configName())
            .append(", strict=")
            .append(strict)
            .append(", reload=")
            .append(reload)
            .append(", ")
            .append(clients)
            .append(", log=")
            .append(logLevel.configName())
            .append(", ")
            .append(metrics)
            .append(", deadLetter=")
            .append(shownPath(deadLetterPath))
            .append(
                deadLetterMaxBytes == 0
                    ? ""
                    : " (maxBytes " + Units.formatSize(deadLetterMaxBytes) + ")")
            .append(", redact.pathSegments=")
            .append(pathMask);
    if (fleet != null) {
      out.append(", ").append(fleet);
    }
    for (Route r : routeArray) {
      out.append("\n  ").append(r).append(" -> ").append(r.policy());
    }
    out.append("\n  default -> ").append(defaultPolicy());
    return out.toString();
  }
}
