package dev.retryagent.internal.observe;

import dev.retryagent.engine.CircuitState;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import java.lang.management.ManagementFactory;
import java.security.AccessController;
import java.security.PrivilegedActionException;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;
import javax.management.JMException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

/**
 * The metrics as MBeans on the platform MBean server, for JConsole and JMX scrapers:
 *
 * <ul>
 *   <li>{@code dev.retryagent:type=Route,name=llm}: the counters of one route (all its hosts);
 *   <li>{@code dev.retryagent:type=Host,name="https://api.example.com:443"}: the counters of one
 *       target host (all routes) and the state of its breaker; {@code name=other} for hosts past
 *       the bound;
 *   <li>{@code dev.retryagent:type=Engine}: pending async retries, tracked hosts and targets,
 *       breakers by state, mode, totals, dead letters dropped.
 * </ul>
 *
 * <p>Counters are read-only {@code long} attributes named after the counter ({@code Calls}, {@code
 * Retries}, {@code GaveUpNotIdempotent}, ...). A route or host seen after {@link #register()} gets
 * its MBean at its first event, on the thread of that call (once per route or host).
 *
 * <p>Never throws into the caller: a registration that fails (the name is taken, a security manager
 * refuses) is reported once on the error sink and skipped.
 */
public final class JmxMetrics implements AutoCloseable {
  /** The ObjectName domain used by the agent. */
  public static final String DEFAULT_DOMAIN = "dev.retryagent";

  /** {@code GaveUpNotIdempotent} to {@code NOT_IDEMPOTENT}, and so on. */
  private static final Map<String, GiveUpReason> GIVE_UP_ATTRIBUTES = giveUpAttributes();

  private final RetryMetrics metrics;
  private final RetryEngine engine;
  private final BreakerStates breakers;
  private final String domain;
  private final ErrorReporter errors;
  private final MBeanServer server;
  private final Set<ObjectName> registered = new LinkedHashSet<>();

  /**
   * Each route registered, and whether its MBean has the fleet attributes ({@link #refresh}); null
   * for one whose registration anew by {@link #refresh} failed: the next refresh tries it again.
   */
  private final Map<String, Boolean> routes = new HashMap<>();

  private final RetryMetrics.KeyListener keyListener =
      new RetryMetrics.KeyListener() {
        @Override
        public void newRoute(String route) {
          registerRoute(route);
        }

        @Override
        public void newHost(String host) {
          registerHost(host);
        }
      };
  private boolean active;

  /**
   * @param engine the engine for the engine MBean and breaker states, or null
   * @param errors receives one line per kind of registration failure; null = stderr
   */
  public JmxMetrics(RetryMetrics metrics, RetryEngine engine, Consumer<String> errors) {
    this(metrics, engine, errors, DEFAULT_DOMAIN);
  }

  /** With another ObjectName domain (tests; several engines in one JVM). */
  public JmxMetrics(
      RetryMetrics metrics, RetryEngine engine, Consumer<String> errors, String domain) {
    this(metrics, engine, errors, domain, engine == null ? null : new BreakerStates(engine));
  }

  /** Test seam: {@code breakers} reads the engine's breakers (tests count the reads). */
  JmxMetrics(
      RetryMetrics metrics,
      RetryEngine engine,
      Consumer<String> errors,
      String domain,
      BreakerStates breakers) {
    this(metrics, engine, errors, domain, breakers, ManagementFactory.getPlatformMBeanServer());
  }

  /** Test seam: registers with {@code server} (tests make a registration fail). */
  JmxMetrics(
      RetryMetrics metrics,
      RetryEngine engine,
      Consumer<String> errors,
      String domain,
      BreakerStates breakers,
      MBeanServer server) {
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    this.engine = engine;
    this.breakers = breakers;
    this.domain = Objects.requireNonNull(domain, "domain");
    this.errors = new ErrorReporter(errors);
    this.server = Objects.requireNonNull(server, "server");
  }

  /**
   * Registers the engine MBean and one per route and host seen so far, and from now on one per new
   * route and host. Idempotent.
   *
   * @return true when every registration succeeded
   */
  public synchronized boolean register() {
    if (active) {
      return true;
    }
    active = true;
    metrics.addKeyListener(keyListener);
    boolean ok = register(engineName(domain), engineBean());
    for (String route : metrics.routes()) {
      ok &= registerRoute(route);
    }
    for (String host : metrics.hosts()) {
      ok &= registerHost(host);
    }
    return ok;
  }

  /** Unregisters every MBean this registered. Idempotent; never throws. */
  public synchronized void unregister() {
    active = false;
    metrics.removeKeyListener(keyListener);
    for (ObjectName name : registered) {
      try {
        server.unregisterMBean(name);
      } catch (JMException | RuntimeException e) {
        // already gone: nothing to do
      }
    }
    registered.clear();
    routes.clear();
  }

  /**
   * Brings the route MBeans in step with fleet mode after a reload turned it on or off: each has
   * the fleet attributes while the engine has fleet limits ({@code docs/fleet.md}), none without. A
   * route MBean that must change is registered anew (a console sees it go and come back, and reads
   * its new attribute list). Idempotent; never throws.
   */
  public synchronized void refresh() {
    if (!active) {
      return;
    }
    boolean fleet = fleetMode();
    for (Map.Entry<String, Boolean> e : new ArrayList<>(routes.entrySet())) {
      Boolean has = e.getValue();
      if (has == null || has != fleet) {
        String route = e.getKey();
        ObjectName name = routeName(domain, route);
        if (has != null) {
          try {
            server.unregisterMBean(name);
          } catch (JMException | RuntimeException gone) {
            // unregistered by someone else: registered anew below all the same
          }
          registered.remove(name);
        }
        // Kept, without an MBean until registerRoute succeeds, for the next refresh to try again
        // should it fail: removed, the route was never registered again (a route's first event
        // registers it, once).
        routes.put(route, null);
        registerRoute(route);
      }
    }
  }

  private boolean fleetMode() {
    return engine != null && engine.fleet() != null;
  }

  @Override
  public void close() {
    unregister();
  }

  /** The names registered now. */
  public synchronized Set<ObjectName> registered() {
    return new LinkedHashSet<>(registered);
  }

  /** {@code DOMAIN:type=Route,name=ROUTE}, the name quoted when it must be. */
  public static ObjectName routeName(String domain, String route) {
    return name(domain + ":type=Route,name=" + value(route));
  }

  /** {@code DOMAIN:type=Host,name="https://host:443"}. */
  public static ObjectName hostName(String domain, String host) {
    return name(domain + ":type=Host,name=" + value(host));
  }

  public static ObjectName engineName(String domain) {
    return name(domain + ":type=Engine");
  }

  /** A key property value: as is when it may stand unquoted, else {@link ObjectName#quote}. */
  static String value(String v) {
    if (v.isEmpty()) {
      return ObjectName.quote(v);
    }
    for (int i = 0; i < v.length(); i++) {
      if (",=:\"*?\\\n".indexOf(v.charAt(i)) >= 0) {
        return ObjectName.quote(v);
      }
    }
    return v;
  }

  private static ObjectName name(String s) {
    try {
      return new ObjectName(s);
    } catch (MalformedObjectNameException e) {
      throw new IllegalArgumentException("bad ObjectName " + s, e);
    }
  }

  private synchronized boolean registerRoute(String route) {
    if (!active) {
      return true;
    }
    try {
      boolean fleet = fleetMode();
      boolean ok =
          register(
              routeName(domain, route),
              counterBean(
                  "retry-agent counters of route " + route,
                  () -> metrics.route(route),
                  null,
                  fleet ? route : null));
      if (ok && routes.get(route) == null) {
        routes.put(route, fleet);
      }
      return ok;
    } catch (RuntimeException e) {
      return failed(route, e);
    }
  }

  private synchronized boolean registerHost(String host) {
    if (!active || host.startsWith("route:")) {
      return true;
    }
    try {
      return register(
          hostName(domain, host),
          counterBean(
              "retry-agent counters of host " + host, () -> metrics.host(host), host, null));
    } catch (RuntimeException e) {
      return failed(host, e);
    }
  }

  private boolean register(ObjectName name, Object bean) {
    try {
      if (registered.contains(name)) {
        return true;
      }
      // Privileged: a new route or host is registered on the thread whose call first named it,
      // under a SecurityManager often a JDK HttpClient thread without the permission, which our
      // classes hold (AgentClassLoader); the registration is the agent's business, not the call's.
      AccessController.doPrivileged(new Register(server, bean, name));
      registered.add(name);
      return true;
    } catch (PrivilegedActionException e) {
      return failed(name.toString(), e.getException());
    } catch (RuntimeException e) {
      return failed(name.toString(), e);
    }
  }

  /** {@code registerMBean}, as a privileged action. */
  private static final class Register implements PrivilegedExceptionAction<Void> {
    private final MBeanServer server;
    private final Object bean;
    private final ObjectName name;

    Register(MBeanServer server, Object bean, ObjectName name) {
      this.server = server;
      this.bean = bean;
      this.name = name;
    }

    @Override
    public Void run() throws JMException {
      server.registerMBean(bean, name);
      return null;
    }
  }

  private boolean failed(String what, Exception e) {
    errors.once(
        "register",
        "retry-agent: cannot register the JMX MBean for "
            + Sanitizer.oneLine(what)
            + " ("
            + Sanitizer.exception(e, true, null)
            + "); the application goes on, further failures are not reported");
    return false;
  }

  /**
   * @param fleetRoute the route whose fleet counters the bean also shows ({@link FleetStats}), or
   *     null for a host's bean
   */
  private StatsMBean counterBean(
      String description,
      Supplier<CounterSnapshot> counters,
      String breakerKey,
      String fleetRoute) {
    List<MBeanAttributeInfo> attrs = new ArrayList<>();
    for (Stat s : Stat.values()) {
      attrs.add(StatsMBean.attribute(s.attribute, "long", s.help));
    }
    attrs.add(StatsMBean.attribute("GaveUp", "long", "Failed calls given up, any reason."));
    for (GiveUpReason r : GiveUpReason.values()) {
      attrs.add(
          StatsMBean.attribute(
              "GaveUp" + camel(r.name()), "long", "Failed calls given up: " + r.label() + "."));
    }
    attrs.add(StatsMBean.attribute("BudgetRejections", "long", "Retries refused by the budget."));
    attrs.add(StatsMBean.attribute("BreakerOpens", "long", "Times a circuit breaker opened."));
    if (breakerKey != null) {
      attrs.add(
          StatsMBean.attribute(
              "BreakerState", "java.lang.String", "closed, open, half-open, or none"));
    }
    for (int i = 0; fleetRoute != null && i < FleetStats.ATTRIBUTES.length; i++) {
      attrs.add(StatsMBean.attribute(FleetStats.ATTRIBUTES[i], "long", FleetStats.HELP[i]));
    }
    return new StatsMBean(
        description,
        attrs,
        (names, v) -> {
          CounterSnapshot c = null; // taken once, and only when a counter is asked for
          long[] fleet = null;
          for (String n : names) {
            if (n.equals("BreakerState")) {
              v.put(n, breakerState(breakerKey));
            } else if (n.startsWith("Fleet")) {
              if (fleet == null) {
                fleet = FleetStats.values(engine, fleetRoute);
              }
              v.put(n, fleet[fleetIndex(n)]);
            } else {
              if (c == null) {
                c = counters.get();
              }
              v.put(n, counter(c, n));
            }
          }
        });
  }

  /** A counter attribute's value: a {@link Stat}, {@code GaveUp}, a {@code GaveUp<Reason>}, ... */
  private static long counter(CounterSnapshot c, String name) {
    for (Stat s : Stat.values()) {
      if (s.attribute.equals(name)) {
        return c.get(s);
      }
    }
    switch (name) {
      case "GaveUp":
        return c.giveUps();
      case "BudgetRejections":
        return c.budgetRejections();
      case "BreakerOpens":
        return c.breakerOpens();
      default:
        break;
    }
    GiveUpReason r = GIVE_UP_ATTRIBUTES.get(name);
    if (r == null) {
      throw new IllegalArgumentException("not a counter attribute: " + name);
    }
    return c.giveUps(r);
  }

  private static Map<String, GiveUpReason> giveUpAttributes() {
    Map<String, GiveUpReason> m = new HashMap<>();
    for (GiveUpReason r : GiveUpReason.values()) {
      m.put("GaveUp" + camel(r.name()), r);
    }
    return m;
  }

  private static int fleetIndex(String name) {
    for (int i = 0; i < FleetStats.ATTRIBUTES.length; i++) {
      if (FleetStats.ATTRIBUTES[i].equals(name)) {
        return i;
      }
    }
    throw new IllegalArgumentException("not a fleet attribute: " + name);
  }

  /**
   * The host's breaker state, read from its own breakers (no walk of every breaker): the worst of
   * them when routes with different {@code circuitBreaker} sections each keep one for the host.
   */
  private String breakerState(String key) {
    if (breakers == null) {
      return "none";
    }
    CircuitState state = breakers.stateOf(key);
    return state == null ? "none" : state.label();
  }

  private StatsMBean engineBean() {
    List<MBeanAttributeInfo> attrs = new ArrayList<>();
    attrs.add(
        StatsMBean.attribute("PendingAsyncRetries", "int", "Async retries waiting right now."));
    attrs.add(StatsMBean.attribute("TrackedHosts", "int", "Hosts counted one by one."));
    attrs.add(StatsMBean.attribute("MaxHosts", "int", "Bound on hosts counted one by one."));
    attrs.add(
        StatsMBean.attribute("TrackedTargets", "int", "Hosts with breaker/budget/limit state."));
    attrs.add(StatsMBean.attribute("OpenBreakers", "int", "Circuit breakers open now."));
    attrs.add(StatsMBean.attribute("HalfOpenBreakers", "int", "Circuit breakers half-open now."));
    attrs.add(StatsMBean.attribute("Mode", "java.lang.String", "enforce, observe or off."));
    attrs.add(StatsMBean.attribute("Calls", "long", "Calls that ended, all routes."));
    attrs.add(StatsMBean.attribute("Retries", "long", "Retries made, all routes."));
    attrs.add(StatsMBean.attribute("GaveUp", "long", "Failed calls given up, all routes."));
    attrs.add(
        StatsMBean.attribute(
            "DeadLettersDropped",
            "long",
            "Dead letters lost: queue full, file unwritable or write failed."));
    return new StatsMBean(
        "retry-agent engine",
        attrs,
        (names, v) -> {
          // Each taken once, and only when an attribute that needs it is asked for: the breaker
          // counts walk every breaker under the registry's lock, the totals every host's counters.
          Map<CircuitState, Integer> counts = null;
          CounterSnapshot total = null;
          for (String n : names) {
            switch (n) {
              case "OpenBreakers":
              case "HalfOpenBreakers":
                if (counts == null) {
                  counts = breakers == null ? null : breakers.counts();
                }
                v.put(
                    n,
                    counts == null
                        ? 0
                        : counts.get(
                            n.equals("OpenBreakers") ? CircuitState.OPEN : CircuitState.HALF_OPEN));
                break;
              case "Calls":
              case "Retries":
              case "GaveUp":
                if (total == null) {
                  total = metrics.total();
                }
                v.put(
                    n,
                    n.equals("Calls")
                        ? total.calls()
                        : n.equals("Retries") ? total.retries() : total.giveUps());
                break;
              case "PendingAsyncRetries":
                v.put(n, engine == null ? 0 : engine.pendingAsyncRetries());
                break;
              case "TrackedHosts":
                v.put(n, metrics.trackedHosts());
                break;
              case "MaxHosts":
                v.put(n, metrics.maxHosts());
                break;
              case "TrackedTargets":
                v.put(n, engine == null ? 0 : engine.trackedTargets());
                break;
              case "Mode":
                v.put(n, engine == null ? "unknown" : engine.mode().configName());
                break;
              case "DeadLettersDropped":
                v.put(n, metrics.deadLettersDropped());
                break;
              default:
                break;
            }
          }
        });
  }

  /** {@code NOT_IDEMPOTENT} to {@code NotIdempotent}. */
  static String camel(String enumName) {
    StringBuilder b = new StringBuilder();
    for (String part : enumName.split("_")) {
      if (!part.isEmpty()) {
        b.append(part.charAt(0)).append(part.substring(1).toLowerCase(Locale.ROOT));
      }
    }
    return b.toString();
  }
}
