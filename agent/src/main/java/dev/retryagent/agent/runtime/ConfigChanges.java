package dev.retryagent.agent.runtime;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigSources;
import dev.retryagent.config.Route;
import dev.retryagent.internal.Units;
import dev.retryagent.internal.observe.Sanitizer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a reload changed, for its log line: {@code agent.mode enforce -> observe, routes: payments
 * changed, llm added}. Names and settings only, never a header or a query.
 */
final class ConfigChanges {
  private ConfigChanges() {}

  /** The changes from {@code a} to {@code b}, or {@code nothing} when only the text changed. */
  static String describe(AgentConfig a, AgentConfig b) {
    List<String> out = new ArrayList<>();
    if (a.mode() != b.mode()) {
      out.add("agent.mode " + a.mode().configName() + " -> " + b.mode().configName());
    }
    if (a.logLevel() != b.logLevel()) {
      out.add("agent.log.level " + a.logLevel().configName() + " -> " + b.logLevel().configName());
    }
    if (a.strict() != b.strict()) {
      // Read only at start (docs/operations.md): said so, rather than "changed: nothing".
      out.add("agent.strict " + a.strict() + " -> " + b.strict() + " (takes effect only at start)");
    }
    if (a.reload() != b.reload()) {
      out.add("agent.reload " + a.reload() + " -> " + b.reload());
    }
    if (!a.clients().equals(b.clients())) {
      out.add("agent.clients");
    }
    if (!a.metrics().equals(b.metrics())) {
      out.add("agent.metrics");
    }
    if (!Objects.equals(a.deadLetterPath(), b.deadLetterPath())) {
      // On one log line, a URL written there by mistake without its password.
      out.add(
          "agent.deadLetter.path "
              + AgentConfig.shownPath(a.deadLetterPath())
              + " -> "
              + AgentConfig.shownPath(b.deadLetterPath()));
    }
    if (a.deadLetterMaxBytes() != b.deadLetterMaxBytes()) {
      out.add(
          "agent.deadLetter.maxBytes "
              + maxBytes(a.deadLetterMaxBytes())
              + " -> "
              + maxBytes(b.deadLetterMaxBytes()));
    }
    if (!a.pathMask().equals(b.pathMask())) {
      // Live (logs and dead letters mask from the next line on); never "nothing" when it changed.
      out.add("agent.redact");
    }
    if (!Objects.equals(a.fleet(), b.fleet())) {
      out.add("fleet");
    }
    if (!a.defaultPolicy().equals(b.defaultPolicy())) {
      out.add("defaults");
    }
    String routes = routes(a.routes(), b.routes());
    if (!routes.isEmpty()) {
      out.add("routes: " + routes);
    }
    return out.isEmpty() ? "nothing" : String.join(", ", out);
  }

  /**
   * {@code agent.mode off in the file is overridden: mode=enforce from the agent argument} when the
   * file's mode differs from the override that wins over it, else empty.
   */
  static String overridden(AgentConfig fromFile, ConfigSources sources) {
    if (sources.mode() == null || sources.mode() == fromFile.mode()) {
      return "";
    }
    return "agent.mode "
        + fromFile.mode().configName()
        + " in the file is overridden: mode="
        + sources.mode().configName()
        + " from the "
        + sources.modeOrigin();
  }

  private static String maxBytes(long bytes) {
    return bytes == 0 ? "none" : Units.formatSize(bytes);
  }

  private static String routes(List<Route> before, List<Route> after) {
    Map<String, Route> old = byName(before);
    Map<String, Route> now = byName(after);
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, Route> e : now.entrySet()) {
      Route r = old.get(e.getKey());
      if (r == null) {
        out.add(Sanitizer.routeName(e.getKey()) + " added");
      } else if (!r.equals(e.getValue())) {
        out.add(Sanitizer.routeName(e.getKey()) + " changed");
      }
    }
    for (String name : old.keySet()) {
      if (!now.containsKey(name)) {
        out.add(Sanitizer.routeName(name) + " removed");
      }
    }
    if (out.isEmpty() && !before.equals(after)) {
      out.add("order changed");
    }
    return String.join(", ", out);
  }

  private static Map<String, Route> byName(List<Route> routes) {
    Map<String, Route> m = new LinkedHashMap<>();
    for (Route r : routes) {
      m.putIfAbsent(r.name(), r);
    }
    return m;
  }
}
