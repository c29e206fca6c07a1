package dev.retryagent.internal.observe;

import dev.retryagent.engine.CircuitState;
import dev.retryagent.engine.CircuitTransition;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The metrics in the Prometheus text exposition format 0.0.4: {@code # HELP} and {@code # TYPE}
 * before each family, label values escaped ({@code \\}, {@code \"}, {@code \n}).
 *
 * <p>Counters per route and host are written for every series, zeros included, so {@code rate()}
 * works from the first event; counters that also split by reason or transition are written only
 * where non-zero, to bound the output.
 */
final class PrometheusText {
  static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
  static final String PREFIX = "retryagent_";

  private PrometheusText() {}

  /**
   * @param engine for breaker states and pending async retries; null leaves those out
   */
  static String render(RetryMetrics metrics, RetryEngine engine) {
    StringBuilder b = new StringBuilder(4096);
    List<RetryMetrics.Series> series = metrics.series();
    for (Stat s : Stat.values()) {
      family(b, s.prometheusName, "counter", s.help);
      for (RetryMetrics.Series x : series) {
        if (isHost(x.host())) {
          sample(b, s.prometheusName, x, null, null, x.counters().get(s));
        }
      }
    }
    family(b, "give_ups_total", "counter", "Failed calls returned without another attempt.");
    for (RetryMetrics.Series x : series) {
      for (GiveUpReason r : GiveUpReason.values()) {
        long v = x.counters().giveUps(r);
        if (v > 0) {
          sample(b, "give_ups_total", x, "reason", r.label(), v);
        }
      }
    }
    family(
        b,
        "budget_rejections_total",
        "counter",
        "Retries refused because the host's retry budget was spent.");
    for (RetryMetrics.Series x : series) {
      if (isHost(x.host())) {
        sample(b, "budget_rejections_total", x, null, null, x.counters().budgetRejections());
      }
    }
    family(
        b,
        "breaker_transitions_total",
        "counter",
        "Circuit breaker state changes; host is the breaker's key (route:NAME when route-scoped).");
    for (RetryMetrics.Series x : series) {
      for (CircuitTransition t : CircuitTransition.values()) {
        long v = x.counters().transitions(t);
        if (v > 0) {
          b.append(PREFIX).append("breaker_transitions_total{route=\"");
          escape(b, x.route()).append("\",host=\"");
          escape(b, x.host()).append("\",from=\"").append(t.from().label());
          b.append("\",to=\"").append(t.to().label()).append("\"} ").append(v).append('\n');
        }
      }
    }
    family(b, "tracked_hosts", "gauge", "Hosts counted one by one; later ones count as other.");
    b.append(PREFIX).append("tracked_hosts ").append(metrics.trackedHosts()).append('\n');
    family(
        b,
        "dead_letters_dropped_total",
        "counter",
        "Dead letters (agent.deadLetter.path) lost: queue full, file unwritable or write failed.");
    b.append(PREFIX).append("dead_letters_dropped_total ").append(metrics.deadLettersDropped());
    b.append('\n');
    if (engine != null) {
      engineGauges(b, metrics, engine);
    }
    return b.toString();
  }

  private static void engineGauges(StringBuilder b, RetryMetrics metrics, RetryEngine engine) {
    BreakerStates.Snapshot states = new BreakerStates(engine).snapshot();
    Set<String> hosts = metrics.hosts();
    family(
        b,
        "breaker_state",
        "gauge",
        "1 for the state of each host's circuit breaker; host is its key (route:NAME when"
            + " route-scoped); a host whose routes have breakers of their own shows the worst:"
            + " open, half-open, closed.");
    for (Map.Entry<String, CircuitState> e : states.worstByKey.entrySet()) {
      if (!hosts.contains(e.getKey()) && !e.getKey().startsWith("route:")) {
        continue; // past the host bound: counted in retryagent_breakers only
      }
      for (CircuitState s : CircuitState.values()) {
        b.append(PREFIX).append("breaker_state{host=\"");
        escape(b, e.getKey()).append("\",state=\"").append(s.label()).append("\"} ");
        b.append(e.getValue() == s ? 1 : 0).append('\n');
      }
    }
    family(b, "breakers", "gauge", "Circuit breakers tracked, by state.");
    for (Map.Entry<CircuitState, Integer> e : states.counts.entrySet()) {
      b.append(PREFIX).append("breakers{state=\"").append(e.getKey().label()).append("\"} ");
      b.append(e.getValue()).append('\n');
    }
    family(
        b,
        "pending_async_retries",
        "gauge",
        "Asynchronous retries waiting for their delay right now.");
    b.append(PREFIX).append("pending_async_retries ").append(engine.pendingAsyncRetries());
    b.append('\n');
    family(
        b,
        "tracked_targets",
        "gauge",
        "Hosts (or routes) with breaker, budget or rate-limit state in the engine.");
    b.append(PREFIX).append("tracked_targets ").append(engine.trackedTargets()).append('\n');
    FleetStats.render(b, engine);
  }

  private static boolean isHost(String host) {
    return !host.startsWith("route:");
  }

  static void family(StringBuilder b, String name, String type, String help) {
    b.append("# HELP ").append(PREFIX).append(name).append(' ');
    for (int i = 0; i < help.length(); i++) {
      char c = help.charAt(i);
      if (c == '\\') {
        b.append("\\\\");
      } else if (c == '\n') {
        b.append("\\n");
      } else {
        b.append(c);
      }
    }
    b.append('\n').append("# TYPE ").append(PREFIX).append(name).append(' ').append(type);
    b.append('\n');
  }

  private static void sample(
      StringBuilder b,
      String name,
      RetryMetrics.Series x,
      String extraLabel,
      String extraValue,
      long value) {
    b.append(PREFIX).append(name).append("{route=\"");
    escape(b, x.route()).append("\",host=\"");
    escape(b, x.host()).append('"');
    if (extraLabel != null) {
      b.append(',').append(extraLabel).append("=\"");
      escape(b, extraValue).append('"');
    }
    b.append("} ").append(value).append('\n');
  }

  /** Appends {@code v} escaped for a label value: backslash, double quote, line feed. */
  static StringBuilder escape(StringBuilder b, String v) {
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      switch (c) {
        case '\\':
          b.append("\\\\");
          break;
        case '"':
          b.append("\\\"");
          break;
        case '\n':
          b.append("\\n");
          break;
        default:
          b.append(c);
      }
    }
    return b;
  }
}
