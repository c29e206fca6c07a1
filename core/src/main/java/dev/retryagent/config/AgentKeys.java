package dev.retryagent.config;

import static dev.retryagent.config.ValueType.BOOLEAN;
import static dev.retryagent.config.ValueType.enumOf;
import static dev.retryagent.config.ValueType.integer;
import static dev.retryagent.config.ValueType.listOf;

import dev.retryagent.config.ConfigSchema.KeyRef;
import dev.retryagent.policy.Mode;

/**
 * The {@code agent} section: how the agent itself behaves, which clients it instruments, its log,
 * metrics and dead letters. Each key is written once, with where its value goes ({@link
 * KeyVisitor}); defaults and meanings are in docs/configuration.md.
 */
final class AgentKeys {
  private AgentKeys() {}

  /** Read before the rest of an invalid file: may the problem stop the JVM? */
  static final KeyRef STRICT = new KeyRef();

  private static final String IPV4 =
      "(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}"
          + "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";

  // An IPv6 literal as InetAddress reads it (RFC 4291 2.2), h a group of 1 to 4 hex digits: eight
  // groups, or fewer with one "::" standing for one group or more; the last two may be an IPv4
  // address (::ffff:10.0.0.1). Then a zone, as a link-local bind needs: a scope id or an
  // interface's name (%1, %eth0, %br-0a1b), whose existence is the bind's to check (validate may
  // run on another host). BindHostTest compares it with InetAddress.
  private static final String IPV6 =
      ("(?:(?:h:){7}h|(?:h:){1,7}:|(?:h:){1,6}:h|(?:h:){1,5}(?::h){1,2}|(?:h:){1,4}(?::h){1,3}"
                  + "|(?:h:){1,3}(?::h){1,4}|(?:h:){1,2}(?::h){1,5}|h:(?::h){1,6}|:(?:(?::h){1,7}|:)"
                  + "|(?:h:){6}v4|::(?:h:){0,5}v4|h::(?:h:){0,4}v4|(?:h:){1}h::(?:h:){0,3}v4"
                  + "|(?:h:){2}h::(?:h:){0,2}v4|(?:h:){3}h::(?:h:)?v4|(?:h:){4}h::v4)")
              .replace("h", "[0-9A-Fa-f]{1,4}")
              .replace("v4", IPV4)
          + "(?:%[A-Za-z0-9_.-]{1,64})?";

  // What the endpoint can bind, so that `validate` refuses what would fail at run time: a host
  // name of labels that neither start nor end with '-', and not made of digits and dots alone
  // (`999.1.1.1` is an IPv4 address out of range, no name); an IPv4 address of four bytes; an IPv6
  // literal (`::1`; `127.0.0.1:9000`, a port written into the host, is none), its brackets both or
  // neither (`[::1` is none).
  static final ValueType BIND_HOST =
      ValueType.host(
          "(?=.{1,253}$)(?![0-9.]+$)"
              + "[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
              + "(?:\\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\\.?"
              + "|"
              + IPV4
              + "|"
              + IPV6
              + "|\\["
              + IPV6
              + "\\]",
          "a host name or IP address such as 127.0.0.1 or 0.0.0.0");
  static final ValueType SEGMENT_REGEX =
      new RegexType("a regular expression such as [0-9a-f]{32} or tok_.*");
  static final ValueType FILE_PATH =
      ValueType.deadLetterPath(
          "[^\\x00]{1,4096}", "a file path such as /var/log/retry-dead-letters.jsonl");

  /**
   * The least {@code deadLetter.maxBytes}: a few lines (one is ~300 B). Below it the value is most
   * likely a unit left out (100 meant as MB), and would drop nearly every line.
   */
  static final long MIN_DEAD_LETTER_BYTES = 1L << 10;

  /** The most {@code deadLetter.maxBytes}: 1 TiB, written 1024GiB (the largest unit is GiB). */
  static final long MAX_DEAD_LETTER_BYTES = 1L << 40;

  static void visit(KeyVisitor parent, ConfigDraft d) {
    KeyVisitor k = parent.section("agent", "How the agent itself behaves.");
    if (k.key("mode", enumOf(Mode.class))) {
      d.mode = (Mode) k.value();
    }
    if (k.key("strict", BOOLEAN, STRICT)) {
      d.strict = k.bool();
    }
    if (k.key("reload", BOOLEAN)) {
      d.reload = k.bool();
    }
    KeyVisitor clients = k.section("clients", "Per-client switches.");
    if (clients.key("jdk-http", BOOLEAN)) {
      d.jdkHttp = clients.bool();
    }
    if (clients.key("okhttp", BOOLEAN)) {
      d.okhttp = clients.bool();
    }
    if (clients.key("url-connection", BOOLEAN)) {
      d.urlConnection = clients.bool();
    }
    if (clients.key("apache-httpclient", BOOLEAN)) {
      d.apacheHttpClient = clients.bool();
    }
    KeyVisitor log = k.section("log", "Agent log lines: one per retry, give-up, breaker change.");
    if (log.key("level", enumOf(LogLevel.class))) {
      d.logLevel = (LogLevel) log.value();
    }
    KeyVisitor metrics = k.section("metrics", "Where the agent publishes its counters.");
    if (metrics.key("jmx", BOOLEAN)) {
      d.jmx = metrics.bool();
    }
    KeyVisitor prometheus =
        metrics.section("prometheus", "A Prometheus text endpoint served by the agent.");
    if (prometheus.key("enabled", BOOLEAN)) {
      d.prometheusEnabled = prometheus.bool();
    }
    if (prometheus.key("host", BIND_HOST)) {
      d.prometheusHost = prometheus.text();
    }
    if (prometheus.key("port", integer(1, 65535))) {
      d.prometheusPort = prometheus.intValue();
    }
    KeyVisitor deadLetter = k.section("deadLetter", "A record of calls that gave up.");
    if (deadLetter.noneOr("path", FILE_PATH)) {
      d.deadLetterPath = deadLetter.text();
    }
    if (deadLetter.noneOr(
        "maxBytes", ValueType.size(MIN_DEAD_LETTER_BYTES, MAX_DEAD_LETTER_BYTES))) {
      Long max = (Long) deadLetter.value();
      d.deadLetterMaxBytes = max == null ? 0 : max;
    }
    KeyVisitor redact = k.section("redact", "What the agent masks in what it writes.");
    if (redact.key("pathSegments", listOf(SEGMENT_REGEX))) {
      d.redactPathSegments = redact.<String>list();
    }
  }
}
