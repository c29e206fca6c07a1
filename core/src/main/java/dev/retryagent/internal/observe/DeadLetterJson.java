package dev.retryagent.internal.observe;

import dev.retryagent.config.PathMask;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.internal.engine.TargetKey;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/**
 * One dead letter as one line of JSON, written by hand (no JSON library in the agent):
 *
 * <pre>
 * {"time":"2026-01-05T10:15:30.123Z","route":"payments","method":"POST","scheme":"https",
 *  "host":"pay.example.com","port":443,"path":"/v1/charges","attempts":1,"status":503,
 *  "outcome":"response","error":null,"reason":"not-idempotent","observe":false}
 * </pre>
 *
 * (on one line). {@code host} is written in one spelling whichever client gave it and however
 * ({@code TargetKey#host}: lower case, no trailing dot, an IPv6 literal as {@code [::1]}). {@code
 * status} is null when the last attempt ended in an exception, {@code outcome} null when no attempt
 * was made; {@code error} is the exception's class name and sanitised message. The path never
 * carries a query; segments {@code agent.redact.pathSegments} matches are written masked.
 */
final class DeadLetterJson {
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'", Locale.ROOT)
          .withZone(ZoneOffset.UTC);

  private DeadLetterJson() {}

  static String line(RetryEvent e, PathMask mask) {
    StringBuilder b = new StringBuilder(256);
    b.append("{\"time\":");
    string(b, TIME.format(Instant.ofEpochMilli(e.wallMillis())));
    b.append(",\"route\":");
    string(b, e.route());
    b.append(",\"method\":");
    string(b, e.method());
    b.append(",\"scheme\":");
    string(b, e.scheme());
    b.append(",\"host\":");
    // As the metrics and the log lines name it: java.net.http gives "[::1]", OkHttp "::1", an
    // application may write API.example.com. or [0:0:0:0:0:0:0:1], and one host is one value.
    string(b, Sanitizer.boundedHost(TargetKey.host(e.host())));
    b.append(",\"port\":").append(e.port());
    b.append(",\"path\":");
    string(b, Sanitizer.path(e.path(), mask, e.atPastPath()));
    b.append(",\"attempts\":").append(e.attempt());
    b.append(",\"status\":");
    if (e.status() >= 0) {
      b.append(e.status());
    } else {
      b.append("null");
    }
    b.append(",\"outcome\":");
    string(
        b,
        e.outcome() == null ? null : e.outcome().name().toLowerCase(Locale.ROOT).replace('_', '-'));
    b.append(",\"error\":");
    string(
        b,
        e.error() == null
            ? null
            : Sanitizer.exception(
                e.error(), true, e.policy().retry().idempotencyKeyHeader(), mask, e.host()));
    b.append(",\"reason\":");
    string(b, e.reason() == null ? null : e.reason().label());
    b.append(",\"observe\":").append(e.observeOnly());
    return b.append('}').toString();
  }

  /** A JSON string (or null): quote, backslash and every control character escaped. */
  static void string(StringBuilder b, String s) {
    if (s == null) {
      b.append("null");
      return;
    }
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"':
          b.append("\\\"");
          break;
        case '\\':
          b.append("\\\\");
          break;
        case '\n':
          b.append("\\n");
          break;
        case '\r':
          b.append("\\r");
          break;
        case '\t':
          b.append("\\t");
          break;
        case '\b':
          b.append("\\b");
          break;
        case '\f':
          b.append("\\f");
          break;
        default:
          // Control characters must be escaped; U+2028/9 too, for readers that are JavaScript.
          if (c < 0x20 || c == 0x7f || c == '\u2028' || c == '\u2029') {
            b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    b.append('"');
  }
}
