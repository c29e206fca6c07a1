package dev.retryagent.cli;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigProblem;
import dev.retryagent.config.Route;
import dev.retryagent.internal.Units;
import dev.retryagent.internal.engine.TargetKey;
import dev.retryagent.internal.observe.Sanitizer;
import java.util.ArrayList;
import java.util.List;

/**
 * A configuration in one line, for {@code validate} and the reload line: {@code mode=enforce; 3
 * routes (llm, payments, auth); reload=on}, then only the settings that differ from the defaults an
 * operator is likely to look for (log level, clients off, Prometheus, dead letters).
 */
public final class ConfigSummary {
  /** Route names listed at most; more are counted. */
  static final int MAX_NAMES = 12;

  private ConfigSummary() {}

  public static String of(AgentConfig c) {
    StringBuilder b = new StringBuilder("mode=").append(c.mode().configName()).append("; ");
    b.append(routes(c.routes()));
    b.append("; reload=").append(c.reload() ? "on" : "off");
    if (!c.logLevel().equals(AgentConfig.defaults().logLevel())) {
      b.append("; log=").append(c.logLevel().configName());
    }
    List<String> off = new ArrayList<>();
    if (!c.clients().jdkHttp()) {
      off.add("jdk-http");
    }
    if (!c.clients().okhttp()) {
      off.add("okhttp");
    }
    if (!c.clients().apacheHttpClient()) {
      off.add("apache-httpclient");
    }
    if (!c.clients().urlConnection()) {
      off.add("url-connection");
    }
    if (!off.isEmpty()) {
      b.append("; clients off: ").append(String.join(", ", off));
    }
    if (!c.metrics().jmx()) {
      b.append("; jmx=off");
    }
    if (c.metrics().prometheusEnabled()) {
      // An IPv6 literal in brackets, as every line writes a host with a port after it.
      b.append("; prometheus=")
          .append(TargetKey.bracketed(c.metrics().prometheusHost()))
          .append(':')
          .append(c.metrics().prometheusPort());
    }
    if (c.deadLetterPath() != null) {
      // On one log line, a URL written there by mistake without its password.
      b.append("; deadLetter=").append(AgentConfig.shownPath(c.deadLetterPath()));
      if (c.deadLetterMaxBytes() > 0) {
        b.append(" (maxBytes ").append(Units.formatSize(c.deadLetterMaxBytes())).append(')');
      }
    }
    if (!c.pathMask().isNone()) {
      b.append("; path segments masked by ").append(c.pathMask().expressions().size());
      b.append(c.pathMask().expressions().size() == 1 ? " expression" : " expressions");
    }
    return b.toString();
  }

  /**
   * What follows the start-up, reload, {@code validate} or {@code explain} line when the
   * configuration has {@link AgentConfig#warnings()}: {@code "; 1 warning (loaded; each says what
   * applies):"} and one indented line each, as a problem is shown; empty without any.
   */
  public static String warnings(AgentConfig c) {
    List<ConfigProblem> warnings = c.warnings();
    if (warnings.isEmpty()) {
      return "";
    }
    StringBuilder b =
        new StringBuilder("; ")
            .append(warnings.size())
            .append(warnings.size() == 1 ? " warning" : " warnings")
            // Not "applied as written": a backoff.initial above backoff.max is applied capped.
            .append(" (loaded; each says what applies):");
    for (ConfigProblem p : warnings) {
      b.append(System.lineSeparator()).append("  warning: ").append(p);
    }
    return b.toString();
  }

  /** {@code 3 routes (llm, payments, auth)}, {@code 1 route (llm)}, {@code no routes}. */
  static String routes(List<Route> routes) {
    if (routes.isEmpty()) {
      return "no routes (every call gets the defaults)";
    }
    StringBuilder b = new StringBuilder().append(routes.size());
    b.append(routes.size() == 1 ? " route (" : " routes (");
    int shown = Math.min(routes.size(), MAX_NAMES);
    for (int i = 0; i < shown; i++) {
      b.append(i == 0 ? "" : ", ").append(Sanitizer.routeName(routes.get(i).name()));
    }
    if (routes.size() > shown) {
      b.append(", ... ").append(routes.size() - shown).append(" more");
    }
    return b.append(')').toString();
  }
}
