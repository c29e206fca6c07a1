package dev.retryagent.config;

import dev.retryagent.config.ConfigSchema.Leaf;
import dev.retryagent.config.ConfigSchema.Part;
import dev.retryagent.config.ConfigWalker.ParsedFile;
import dev.retryagent.config.FilePart.Setting;
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
 * Policy} per route. Problems are reported on the part of the file that caused them, once.
 */
final class ConfigAssembler {
  private final FileProblems problems;
  private final FileProblems warnings;

  /** The file's {@code fleet} section, read before the policies that may need it. */
  private FleetConfig fleet;

  /**
   * @param warnings where keys that bound each other and were written one above the other go: the
   *     file loads, each key with its own meaning ({@link CrossChecks#bounds}); and routes after
   *     one that matches every request (first match wins: they are kept, never chosen)
   */
  ConfigAssembler(FileProblems problems, FileProblems warnings) {
    this.problems = problems;
    this.warnings = warnings;
  }

  /** The configuration, or null when a problem was reported. */
  AgentConfig assemble(ParsedFile file, String source) {
    ConfigDraft top = new ConfigDraft();
    boolean ok = apply(ConfigSchema.FILE, file.file.settings, top, file.file);
    fleet = FleetKeys.build(top);
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
        top.deadLetterMaxBytes,
        PathMask.of(top.redactPathSegments),
        fleet,
        defaultPolicy,
        routes,
        source,
        List.of()); // warnings, added by the loader (ConfigLoader)
  }

  /** {@code agent.strict} as written, when it could be read; false otherwise. */
  static boolean strictRequested(ParsedFile file) {
    Setting s = file.file.get(AgentKeys.STRICT);
    return s != null && s.valid() && Boolean.TRUE.equals(s.value);
  }

  // ---------------------------------------------------------------- routes

  private List<Route> routes(ParsedFile file) {
    List<Route> routes = new ArrayList<>();
    Map<String, FilePart> names = new HashMap<>();
    FilePart catchAll = null;
    boolean ok = true;
    for (int i = 0; i < file.routes.size(); i++) {
      FilePart part = file.routes.get(i);
      ConfigDraft t = new ConfigDraft();
      boolean matchOk = apply(ConfigSchema.ROUTE_OWN, part.settings, t, part);
      ok &= matchOk;
      String name = t.routeName != null ? t.routeName : "route-" + i;
      Setting nameSetting = part.get(RouteKeys.NAME);
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
      FilePart first = names.putIfAbsent(name.toLowerCase(Locale.ROOT), part);
      if (first != null) {
        problems.at(
            nameSetting != null ? nameSetting.node : part.node,
            nameSetting != null ? nameSetting.path : part.name,
            "found the route name "
                + ConfigProblem.shown(name)
                + " a second time (first at "
                + first.name
                + ", line "
                + (first.node.line() + 1)
                + "); route names are unique");
        ok = false;
      }
      if (catchAll != null) {
        // A warning, not a problem: version 1 says only "first match wins", so such a file is
        // valid and loads; the route is kept and never chosen.
        warnings.at(
            part.node,
            part.name,
            "this route can never match: "
                + catchAll.name
                + " before it matches every request (first match wins); put catch-all routes"
                + " last or use defaults");
      }
      Policy policy = policy(name, file.defaults, part);
      Route route =
          new Route(name, t.hosts, t.methods, t.paths, policy != null ? policy : Policy.defaults());
      ok &= policy != null;
      if (catchAll == null && matchOk && route.matchesEveryRequest() && matchWasRead(part)) {
        catchAll = part;
      }
      routes.add(route);
    }
    return ok ? routes : null;
  }

  /**
   * False when the walker reported the route's {@code match} (or the route itself, or a key beside
   * {@code match} that is none of the route's, a misspelt {@code match} say) as unreadable: the
   * route then sets no match and would read as one that matches every request, and every later
   * route would be told it can never match, a second report of the one mistake.
   */
  private boolean matchWasRead(FilePart route) {
    if (problems.isEmpty()) {
      return true;
    }
    if (problems.anyAt(route.name, false) || problems.anyAt(route.name + ".match", true)) {
      return false;
    }
    String prefix = route.name + ".";
    for (ConfigProblem p : problems.sorted()) {
      String path = p.path();
      if (path.startsWith(prefix)) {
        String key = path.substring(prefix.length());
        if (key.indexOf('.') < 0 && key.indexOf('[') < 0 && ConfigSchema.ROUTE.child(key) == null) {
          return false;
        }
      }
    }
    return true;
  }

  // ---------------------------------------------------------------- one policy

  /**
   * The policy of {@code route} merged over {@code defaults} (or of defaults alone when route is
   * null), or null when something in either is invalid.
   */
  private Policy policy(String name, FilePart defaults, FilePart route) {
    FilePart current = route != null ? route : defaults;
    // A route's own keys (name, match) come along; applying the policy part never reads them.
    Map<Leaf, Setting> merged = new LinkedHashMap<>(defaults.settings);
    if (route != null) {
      // A route that switches the window type without a size gets that type's default size.
      if (route.has(CircuitBreakerKeys.WINDOW_TYPE) && !route.has(CircuitBreakerKeys.WINDOW_SIZE)) {
        merged.remove(CircuitBreakerKeys.WINDOW_SIZE.leaf());
      }
      merged.putAll(route.settings);
    }
    int problemsBefore = problems.size();
    ConfigDraft t = new ConfigDraft();
    boolean ok = apply(ConfigSchema.POLICY, merged, t, current);
    CrossChecks checks = new CrossChecks(problems, warnings, merged, current, t);
    Integer countWindow = checks.window();
    ok &= countWindow != null || t.windowType == WindowType.TIME;
    ok &= checks.bounds(countWindow);
    ok &= checks.fleetScope(fleet != null);
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

  /**
   * Sets what {@code settings} hold for the keys of {@code part} by running the part's key
   * statements; false when one of those keys is invalid (already reported) or its setter refused it
   * (reported here when written in {@code current}).
   */
  private boolean apply(
      Part part, Map<Leaf, Setting> settings, ConfigDraft draft, FilePart current) {
    KeyVisitor.Applier applier = new KeyVisitor.Applier(part.leaves(), settings);
    try {
      ConfigSchema.visit(part, applier, draft);
    } catch (IllegalArgumentException e) {
      // The walker checks the builders' own bounds, so this is a safety net: the key is
      // reported and the part is not built.
      Setting s = applier.current();
      if (s.part == current) {
        problems.at(s.node, s.path, e.getMessage());
      }
      return false;
    }
    return !applier.sawInvalid();
  }
}
