package dev.retryagent.it.harness;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The spans the OpenTelemetry Java agent exported with {@code -Dotel.traces.exporter=logging-otlp}:
 * one OTLP JSON document per line of its stderr, after {@code OtlpJsonLoggingSpanExporter - }. Read
 * with a minimal JSON reader (OTLP JSON is plain JSON: objects, arrays, strings, numbers).
 */
public final class ExportedSpans {
  private static final String MARK = "OtlpJsonLoggingSpanExporter - ";

  /** SpanKind in OTLP: 1 INTERNAL, 2 SERVER, 3 CLIENT. */
  public static final int INTERNAL = 1;

  public static final int CLIENT = 3;

  /** One exported span; attribute values as text. */
  public record Span(
      String scope,
      String traceId,
      String spanId,
      String parentSpanId,
      String name,
      int kind,
      Map<String, String> attributes,
      List<Event> events,
      String statusCode) {
    public String attribute(String key) {
      return attributes.get(key);
    }
  }

  /** One span event; attribute values as text. */
  public record Event(String name, Map<String, String> attributes) {}

  private ExportedSpans() {}

  /** Every span in {@code stderr}, in export order. */
  public static List<Span> parse(String stderr) {
    List<Span> spans = new ArrayList<>();
    for (String line : stderr.split("\\R")) {
      int at = line.indexOf(MARK);
      if (at < 0) {
        continue;
      }
      Map<?, ?> resourceSpans = (Map<?, ?>) new Reader(line.substring(at + MARK.length())).value();
      for (Object ss : list(resourceSpans.get("scopeSpans"))) {
        Map<?, ?> scopeSpans = (Map<?, ?>) ss;
        String scope = (String) ((Map<?, ?>) scopeSpans.get("scope")).get("name");
        for (Object o : list(scopeSpans.get("spans"))) {
          Map<?, ?> s = (Map<?, ?>) o;
          List<Event> events = new ArrayList<>();
          for (Object e : list(s.get("events"))) {
            Map<?, ?> event = (Map<?, ?>) e;
            events.add(new Event((String) event.get("name"), attributes(event)));
          }
          Map<?, ?> status = (Map<?, ?>) s.get("status");
          spans.add(
              new Span(
                  scope,
                  (String) s.get("traceId"),
                  (String) s.get("spanId"),
                  s.get("parentSpanId") == null ? "" : (String) s.get("parentSpanId"),
                  (String) s.get("name"),
                  ((Number) s.get("kind")).intValue(),
                  attributes(s),
                  events,
                  status != null && status.get("code") instanceof Number code
                      ? String.valueOf(code.intValue())
                      : ""));
        }
      }
    }
    return spans;
  }

  /** The CLIENT spans whose {@code url.full} ends with {@code path}, in start order. */
  public static List<Span> clientSpansOf(List<Span> spans, String path) {
    return spans.stream()
        .filter(s -> s.kind() == CLIENT && s.attribute("url.full") != null)
        .filter(s -> s.attribute("url.full").endsWith(path))
        .collect(Collectors.toList());
  }

  private static List<?> list(Object o) {
    return o == null ? List.of() : (List<?>) o;
  }

  private static Map<String, String> attributes(Map<?, ?> owner) {
    Map<String, String> out = new LinkedHashMap<>();
    for (Object a : list(owner.get("attributes"))) {
      Map<?, ?> attribute = (Map<?, ?>) a;
      Map<?, ?> value = (Map<?, ?>) attribute.get("value");
      Object v = value == null || value.isEmpty() ? null : value.values().iterator().next();
      out.put((String) attribute.get("key"), String.valueOf(v));
    }
    return out;
  }

  /** Just enough JSON: objects, arrays, strings (with escapes), numbers, booleans, null. */
  private static final class Reader {
    private final String text;
    private int at;

    Reader(String text) {
      this.text = text;
    }

    Object value() {
      skipSpace();
      char c = text.charAt(at);
      switch (c) {
        case '{':
          return object();
        case '[':
          return array();
        case '"':
          return string();
        case 't':
          at += 4;
          return Boolean.TRUE;
        case 'f':
          at += 5;
          return Boolean.FALSE;
        case 'n':
          at += 4;
          return null;
        default:
          return number();
      }
    }

    private Map<String, Object> object() {
      Map<String, Object> m = new LinkedHashMap<>();
      at++;
      skipSpace();
      if (text.charAt(at) == '}') {
        at++;
        return m;
      }
      while (true) {
        skipSpace();
        String key = string();
        skipSpace();
        expect(':');
        m.put(key, value());
        skipSpace();
        if (text.charAt(at++) == '}') {
          return m;
        }
      }
    }

    private List<Object> array() {
      List<Object> l = new ArrayList<>();
      at++;
      skipSpace();
      if (text.charAt(at) == ']') {
        at++;
        return l;
      }
      while (true) {
        l.add(value());
        skipSpace();
        if (text.charAt(at++) == ']') {
          return l;
        }
      }
    }

    private String string() {
      expect('"');
      StringBuilder b = new StringBuilder();
      while (true) {
        char c = text.charAt(at++);
        if (c == '"') {
          return b.toString();
        }
        if (c == '\\') {
          char e = text.charAt(at++);
          switch (e) {
            case 'n' -> b.append('\n');
            case 't' -> b.append('\t');
            case 'r' -> b.append('\r');
            case 'b' -> b.append('\b');
            case 'f' -> b.append('\f');
            case 'u' -> {
              b.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
              at += 4;
            }
            default -> b.append(e);
          }
        } else {
          b.append(c);
        }
      }
    }

    private Number number() {
      int start = at;
      while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
        at++;
      }
      String n = text.substring(start, at);
      return n.contains(".") || n.contains("e") || n.contains("E")
          ? Double.valueOf(n)
          : Long.valueOf(n);
    }

    private void expect(char c) {
      if (text.charAt(at) != c) {
        throw new IllegalArgumentException("expected " + c + " at " + at + " in " + text);
      }
      at++;
    }

    private void skipSpace() {
      while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
        at++;
      }
    }
  }
}
