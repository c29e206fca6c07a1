package dev.retryagent.internal.observe;

import dev.retryagent.engine.FleetLimits;
import dev.retryagent.engine.FleetRouteCounters;
import dev.retryagent.engine.RetryEngine;

/**
 * Fleet mode's counters per route ({@link FleetLimits#counters()}) for the exporters: Prometheus
 * families {@code retryagent_fleet_permits_total{route,result}}, {@code
 * retryagent_fleet_pauses_total{route,kind}} and the gauge {@code retryagent_fleet_shared}; JMX
 * attributes {@code Fleet*} on each route's MBean. Nothing at all without fleet mode.
 */
final class FleetStats {
  /** JMX attribute names, in the order of {@link #values}. */
  static final String[] ATTRIBUTES = {
    "FleetGranted",
    "FleetWaited",
    "FleetRefused",
    "FleetFallbacks",
    "FleetPausesSet",
    "FleetPausesHonoured"
  };

  static final String[] HELP = {
    "Permits of the route's fleet limit given (at once or after a wait).",
    "Of those, given after a wait.",
    "Refused: the wait would have passed maxWait or the deadline.",
    "Decided by this JVM's local share: Redis did not answer in time.",
    "429 pauses this JVM set or extended for the whole fleet.",
    "Acquisitions that waited for (or were refused by) a fleet pause."
  };

  private FleetStats() {}

  /** The route's counters in {@link #ATTRIBUTES} order; zeros when it has no fleet limit. */
  static long[] values(RetryEngine engine, String route) {
    FleetLimits fleet = engine == null ? null : engine.fleet();
    if (fleet != null) {
      for (FleetRouteCounters c : fleet.counters()) {
        if (c.route().equals(route)) {
          return new long[] {
            c.granted(), c.waited(), c.refused(), c.fallbacks(), c.pausesSet(), c.pausesHonoured()
          };
        }
      }
    }
    return new long[ATTRIBUTES.length];
  }

  /** Appends the Prometheus families, or nothing without fleet mode. */
  static void render(StringBuilder b, RetryEngine engine) {
    FleetLimits fleet = engine.fleet();
    if (fleet == null) {
      return;
    }
    String p = PrometheusText.PREFIX;
    PrometheusText.family(
        b, "fleet_shared", "gauge", "1 while fleet limits are shared in Redis, 0 while local.");
    b.append(p).append("fleet_shared ").append(fleet.shared() ? 1 : 0).append('\n');
    PrometheusText.family(
        b,
        "fleet_permits_total",
        "counter",
        "Acquisitions of a route's fleet limit in this JVM, by result:"
            + " granted (waited is a part of it), refused, fallback (decided locally).");
    for (FleetRouteCounters c : fleet.counters()) {
      permit(b, c.route(), "granted", c.granted());
      permit(b, c.route(), "waited", c.waited());
      permit(b, c.route(), "refused", c.refused());
      permit(b, c.route(), "fallback", c.fallbacks());
    }
    PrometheusText.family(
        b,
        "fleet_pauses_total",
        "counter",
        "Fleet-wide 429 pauses: set (or extended) by this JVM; honoured by its acquisitions.");
    for (FleetRouteCounters c : fleet.counters()) {
      pause(b, c.route(), "set", c.pausesSet());
      pause(b, c.route(), "honoured", c.pausesHonoured());
    }
  }

  private static void permit(StringBuilder b, String route, String result, long v) {
    b.append(PrometheusText.PREFIX).append("fleet_permits_total{route=\"");
    PrometheusText.escape(b, route).append("\",result=\"").append(result).append("\"} ");
    b.append(v).append('\n');
  }

  private static void pause(StringBuilder b, String route, String kind, long v) {
    b.append(PrometheusText.PREFIX).append("fleet_pauses_total{route=\"");
    PrometheusText.escape(b, route).append("\",kind=\"").append(kind).append("\"} ");
    b.append(v).append('\n');
  }
}
