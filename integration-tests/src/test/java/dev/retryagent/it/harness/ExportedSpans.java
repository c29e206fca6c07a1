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
      Map<?, ?> resourceSpans = Json.object(line.substring(at + MARK.length()));
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
}
