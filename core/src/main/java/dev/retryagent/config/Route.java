package dev.retryagent.config;

import dev.retryagent.internal.observe.Sanitizer;
import dev.retryagent.policy.Policy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * One entry of {@code routes}: which requests it claims and the policy they get, already merged
 * over {@code defaults}. Every match list that is present must match; an absent list matches
 * anything. Immutable; {@link #matches} does not allocate.
 */
public final class Route {
  private final String name;
  private final HostPattern[] hosts;
  private final String[] methods;
  private final PathPattern[] paths;
  private final Policy policy;

  Route(
      String name,
      Collection<HostPattern> hosts,
      Collection<String> methods,
      Collection<PathPattern> paths,
      Policy policy) {
    this.name = Objects.requireNonNull(name, "name");
    this.hosts = hosts.toArray(new HostPattern[0]);
    this.methods = new LinkedHashSet<>(methods).toArray(new String[0]);
    this.paths = paths.toArray(new PathPattern[0]);
    this.policy = Objects.requireNonNull(policy, "policy");
  }

  public String name() {
    return name;
  }

  /** The merged policy; its {@link Policy#routeName()} is {@link #name()}. */
  public Policy policy() {
    return policy;
  }

  /** Host globs in canonical form (lower case, {@code :port} when given); empty = any host. */
  public List<String> hosts() {
    return texts(hosts);
  }

  /** Methods in upper case; empty = any method. */
  public Set<String> methods() {
    return Collections.unmodifiableSet(new LinkedHashSet<>(Arrays.asList(methods)));
  }

  /** Path globs; empty = any path. */
  public List<String> paths() {
    return texts(paths);
  }

  private static List<String> texts(Object[] patterns) {
    List<String> out = new ArrayList<>(patterns.length);
    for (Object p : patterns) {
      out.add(p.toString());
    }
    return Collections.unmodifiableList(out);
  }

  /**
   * True when this route claims the request.
   *
   * @param method any case
   * @param host any case; an IPv6 literal with or without brackets
   * @param port the effective port (80 or 443 when the URL has none)
   * @param path the request path; anything from {@code ?} on is ignored
   */
  public boolean matches(String method, String host, int port, String path) {
    if (methods.length > 0 && !methodMatches(method)) {
      return false;
    }
    if (hosts.length > 0 && !hostMatches(host, port)) {
      return false;
    }
    return paths.length == 0 || pathMatches(path);
  }

  private boolean methodMatches(String method) {
    for (String m : methods) {
      // Any case, as version 1 matched: the route only picks the policy. Whether a "get" is safe to
      // repeat is its retry.methods' call, which is case-sensitive (RetryPolicy#isIdempotent).
      if (m.equalsIgnoreCase(method)) {
        return true;
      }
    }
    return false;
  }

  private boolean hostMatches(String host, int port) {
    for (HostPattern h : hosts) {
      if (h.matches(host, port)) {
        return true;
      }
    }
    return false;
  }

  private boolean pathMatches(String path) {
    for (PathPattern p : paths) {
      if (p.matches(path)) {
        return true;
      }
    }
    return false;
  }

  /** True when no list narrows the route: it claims every request. */
  /** True when the route matches on the path ({@code paths} set): then it must be given one. */
  boolean readsPath() {
    return paths.length > 0;
  }

  boolean matchesEveryRequest() {
    return methods.length == 0 && allAny(hosts) && allAnyPath();
  }

  private static boolean allAny(HostPattern[] hosts) {
    for (HostPattern h : hosts) {
      if (h.matchesEverything()) {
        return true;
      }
    }
    return hosts.length == 0;
  }

  private boolean allAnyPath() {
    for (PathPattern p : paths) {
      if (p.matchesEverything()) {
        return true;
      }
    }
    return paths.length == 0;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Route)) {
      return false;
    }
    Route t = (Route) o;
    return name.equals(t.name)
        && Arrays.equals(hosts, t.hosts)
        && Arrays.equals(methods, t.methods)
        && Arrays.equals(paths, t.paths)
        && policy.equals(t.policy);
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, Arrays.hashCode(hosts), Arrays.hashCode(paths), policy);
  }

  /** {@code route payments {hosts=[...], methods=[POST], paths=[/v1/charges/**]}}. */
  @Override
  public String toString() {
    return "route "
        + Sanitizer.routeName(name)
        + " {hosts="
        + (hosts.length == 0 ? "any" : hosts())
        + ", methods="
        + (methods.length == 0 ? "any" : methods())
        + ", paths="
        + (paths.length == 0 ? "any" : paths())
        + "}";
  }
}
