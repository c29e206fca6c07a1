package dev.retryagent.config;

import dev.retryagent.config.ConfigWalker.ParsedFile;
import dev.retryagent.config.Layer.Setting;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy.WindowType;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Builds the immutable configuration from what the walker collected: merges each route's keys over
 * {@code defaults} key by key, cross-checks keys that constrain each other, and builds one {@link
 * Policy} per route. Problems are reported on the layer that caused them, once.
 */
final class ConfigAssembler {
  static final String WINDOW_TYPE = "circuitBreaker.window.type";
  static final String WINDOW_SIZE = "circuitBreaker.window.size";

  private static final String[] POLICY_PREFIXES = {
    "retry.", "budget.", "circuitBreaker.", "rateLimit."
  };

  private final Problems problems;

  ConfigAssembler(Problems problems) {
    this.problems = problems;
  }

  /** The configuration, or null when a problem was reported. */
  AgentConfig assemble(ParsedFile file, String source) {
    Target top = new Target();
    boolean ok = applyAll(file.file.settings.values(), top, file.file);
    Policy defaultPolicy = policy(Policy.DEFAULT_ROUTE, file.defaults, null);
    List<Route> routes = routes(file);
    if (!ok || defaultPolicy == null || routes == null || !problems.isEmpty()) {
      return null;
    }
    return new AgentConfig(
        top.version,
        top.mode,
        top.strict,
        top.reload,
        new ClientSwitches(top.jdkHttp, top.okhttp, top.urlConnection, top.apacheHttpClient),
        top.logLevel,
        new MetricsSettings(top.jmx, top.prometheusEnabled, top.prometheusHost, top.prometheusPort),
        top.deadLetterPath,
        defaultPolicy,
        routes,
        source);
  }

  /** {@code agent.strict} as written, when it could be read; false otherwise. */
  static boolean strictRequested(ParsedFile file) {
    Setting s = file.file.get("agent.strict");
    return s != null && s.valid() && Boolean.TRUE.equals(s.value);
  }

  // ---------------------------------------------------------------- routes

  private List<Route> routes(ParsedFile file) {
    List<Route> routes = new ArrayList<>();
    Map<String, Layer> names = new HashMap<>();
    Layer catchAll = null;
    boolean ok = true;
    for (int i = 0; i < file.routes.size(); i++) {
      Layer layer = file.routes.get(i);
      Target t = new Target();
      List<Setting> own = new ArrayList<>();
      for (Map.Entry<String, Setting> e : layer.settings.entrySet()) {
        if (!isPolicyKey(e.getKey())) {
          own.add(e.getValue());
        }
      }
      boolean matchOk = applyAll(own, t, layer);
      matchOk &= checkNotEmpty(layer, "match.hosts", "host glob", "host");
      matchOk &= checkNotEmpty(layer, "match.methods", "method", "method");
      matchOk &= checkNotEmpty(layer, "match.paths", "path glob", "path");
      ok &= matchOk;
      String name = t.routeName != null ? t.routeName : "route-" + i;
      Setting nameSetting = layer.get("name");
      if (name.equalsIgnoreCase(Policy.DEFAULT_ROUTE)) {
        problems.at(
            nameSetting.node,
            nameSetting.path,
            "found "
                + name
                + "; allowed any other name: default names the policy of calls that"
                + " no route claims");
        ok = false;
      }
      Layer first = names.putIfAbsent(name.toLowerCase(Locale.ROOT), layer);
      if (first != null) {
        problems.at(
            nameSetting != null ? nameSetting.node : layer.node,
            nameSetting != null ? nameSetting.path : layer.name,
            "found the route name "
                + name
                + " a second time (first at "
                + first.name
                + ", line "
                + (first.node.getStartMark().getLine() + 1)
                + "); route names are unique");
        ok = false;
      }
      if (catchAll != null) {
        problems.at(
            layer.node,
            layer.name,
            "this route can never match: "
                + catchAll.name
                + " before it matches every request (first match wins); put catch-all routes"
                + " last or use defaults");
        ok = false;
      }
      Policy policy = policy(name, file.defaults, layer);
      Route route =
          new Route(name, t.hosts, t.methods, t.paths, policy != null ? policy : Policy.defaults());
      ok &= policy != null;
      if (catchAll == null && matchOk && route.matchesEveryRequest()) {
        catchAll = layer;
      }
      routes.add(route);
    }
    return ok ? routes : null;
  }

  private boolean checkNotEmpty(Layer layer, String key, String what, String noun) {
    Setting s = layer.get(key);
    if (s != null && s.valid() && ((List<?>) s.value).isEmpty()) {
      problems.at(
          s.node,
          s.path,
          "found an empty list, which matches nothing; allowed at least one "
              + what
              + " (leave the key out to match any "
              + noun
              + ")");
      return false;
    }
    return true;
  }

  private static boolean isPolicyKey(String key) {
    for (String prefix : POLICY_PREFIXES) {
      if (key.startsWith(prefix)) {
        return true;
      }
    }
    return false;
  }

  // ---------------------------------------------------------------- one policy

  /**
   * The policy of {@code route} merged over {@code defaults} (or of defaults alone when route is
   * null), or null when something in either is invalid.
   */
  private Policy policy(String name, Layer defaults, Layer route) {
    Layer current = route != null ? route : defaults;
    Map<String, Setting> merged = new LinkedHashMap<>(defaults.settings);
    if (route != null) {
      // A route that switches the window type without a size gets that type's default size.
      if (route.has(WINDOW_TYPE) && !route.has(WINDOW_SIZE)) {
        merged.remove(WINDOW_SIZE);
      }
      for (Map.Entry<String, Setting> e : route.settings.entrySet()) {
        if (isPolicyKey(e.getKey())) {
          merged.put(e.getKey(), e.getValue());
        }
      }
    }
    int problemsBefore = problems.size();
    Target t = new Target();
    boolean ok = applyAll(merged.values(), t, current);
    CrossChecks checks = new CrossChecks(problems, merged, current, t);
    Integer countWindow = checks.window();
    ok &= countWindow != null || t.windowType == WindowType.TIME;
    ok &= checks.bounds(countWindow);
    if (!ok || problems.size() > problemsBefore) {
      return null;
    }
    try {
      RetryPolicy retry = t.retry.backoff(t.backoff.build()).build();
      BudgetPolicy budget = t.budget.build();
      CircuitBreakerPolicy breaker = t.circuitBreaker.build();
      RateLimitPolicy rateLimit = t.rateLimit.build();
      return new Policy(name, retry, budget, breaker, rateLimit);
    } catch (IllegalArgumentException e) {
      // The checks above mirror the builders'; this is the safety net if they ever drift.
      problems.at(current.node, current.name, e.getMessage());
      return null;
    }
  }

  /** Applies every valid setting; false when one is invalid or its setter refused it. */
  private boolean applyAll(Iterable<Setting> settings, Target t, Layer current) {
    boolean ok = true;
    for (Setting s : settings) {
      if (!s.valid()) {
        ok = false;
        continue;
      }
      try {
        s.leaf.setter.apply(t, s.value);
      } catch (IllegalArgumentException e) {
        if (s.layer == current) {
          problems.at(s.node, s.path, e.getMessage());
        }
        ok = false;
      }
    }
    return ok;
  }
}
