package dev.retryagent.internal.observe;

import dev.retryagent.engine.CallCounter;
import dev.retryagent.engine.CircuitBreaker;
import dev.retryagent.engine.CircuitTransition;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.internal.engine.TargetKey;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counters per route and target host ({@code scheme://host:port}), fed by the engine's events and
 * read by {@link ExitSummary}, {@link JmxMetrics} and {@link PrometheusServer}.
 *
 * <p>Lock-free on the hot path: a series is found with two {@link ConcurrentHashMap} reads and
 * counted with a {@link java.util.concurrent.atomic.LongAdder}; only the first event of a new route
 * or host inserts, and a host is admitted under a lock only while a slot is free. Bounded: the
 * first {@code maxHosts} hosts are counted one by one, every later one in the host {@value
 * #OTHER_HOST}. Routes come from the configuration and are not bounded further. A route-scoped
 * breaker's transitions are counted under the pseudo-host {@code route:NAME}, which is not a host.
 *
 * <p>What counts: {@code calls} is calls that ended; {@code retries} only retries really made, and
 * {@code wouldRetry} those observe mode decided on; rejections by an open breaker or the rate limit
 * likewise. Breaker transitions are counted in both modes (observe mode keeps breakers running,
 * only never rejects).
 */
public final class RetryMetrics implements RetryListener {
  /** Default bound on the number of hosts counted one by one. */
  public static final int DEFAULT_MAX_HOSTS = 1000;

  /** The host under which hosts past the bound are counted. */
  public static final String OTHER_HOST = "other";

  /**
   * The longest host counted on its own, in characters: a DNS name's longest (RFC 1035, written
   * without its trailing dot); an IPv6 literal, zone and brackets included, is shorter. A longer
   * one is no host a name server answers for, and each host becomes a set of Prometheus lines and a
   * JMX MBean's name: counted as {@value #OTHER_HOST}, as a host past the bound is.
   */
  static final int MAX_HOST_CHARS = 253;

  private static final String ROUTE_BREAKER_PREFIX = "route:";

  /** Told once about each new route and host; runs on the caller's thread and must not throw. */
  interface KeyListener {
    void newRoute(String route);

    void newHost(String host);
  }

  /** One route and host, and its counters. */
  public static final class Series {
    private final String route;
    private final String host;
    private final CounterSnapshot counters;

    Series(String route, String host, CounterSnapshot counters) {
      this.route = route;
      this.host = host;
      this.counters = counters;
    }

    public String route() {
      return route;
    }

    /** {@code scheme://host:port}, {@value #OTHER_HOST}, or {@code route:NAME} (transitions). */
    public String host() {
      return host;
    }

    public CounterSnapshot counters() {
      return counters;
    }
  }

  private final int maxHosts;
  private final Map<String, RouteSeries> routes = new ConcurrentHashMap<>();
  private final Set<String> hosts = ConcurrentHashMap.newKeySet();
  // Hosts admitted, counted after each is in hosts (admit reads it first); written under admission.
  private final AtomicInteger hostSlots = new AtomicInteger();
  private final Object admission = new Object();
  private volatile Runnable admissionStep; // tests only: read on an admission, never per event
  private final AtomicBoolean otherSeen = new AtomicBoolean();
  private final List<KeyListener> keyListeners = new CopyOnWriteArrayList<>();
  // Kept here, not in a DeadLetterWriter: a reload that switches agent.deadLetter.path replaces
  // the writer, and the lines the old one lost must stay counted.
  private final LongAdder deadLettersDropped = new LongAdder();

  /** Counts up to {@value #DEFAULT_MAX_HOSTS} hosts one by one. */
  public RetryMetrics() {
    this(DEFAULT_MAX_HOSTS);
  }

  /**
   * @param maxHosts hosts counted one by one, at least 1; the agent may pass {@code
   *     circuitBreaker.maxHosts} capped to a few thousand (each host is a JMX MBean and a set of
   *     Prometheus series)
   */
  public RetryMetrics(int maxHosts) {
    if (maxHosts < 1) {
      throw new IllegalArgumentException("maxHosts must be at least 1, was " + maxHosts);
    }
    this.maxHosts = maxHosts;
  }

  public int maxHosts() {
    return maxHosts;
  }

  /**
   * The series of {@code route} and the target: the engine counts attempts and calls into it
   * directly, without an event per call. The target is admitted as an event of it would be.
   */
  @Override
  public CallCounter counterFor(String route, String scheme, String host, int port) {
    try {
      return series(route, scheme, host, port);
    } catch (RuntimeException e) {
      return null; // events, then
    }
  }

  @Override
  public void onAttempt(RetryEvent e) {
    count(e, Stat.ATTEMPTS);
  }

  @Override
  public void onRetry(RetryEvent e) {
    count(e, e.observeOnly() ? Stat.WOULD_RETRY : Stat.RETRIES);
  }

  @Override
  public void onGiveUp(RetryEvent e) {
    try {
      if (e.reason() != null) {
        series(e).giveUp(e.reason());
      }
    } catch (RuntimeException ignored) {
      // a metric is never worth a call
    }
  }

  @Override
  public void onCallComplete(RetryEvent e) {
    try {
      series(e).callEnded(e.succeeded());
    } catch (RuntimeException ignored) {
      // a metric is never worth a call
    }
  }

  @Override
  public void onBreakerRejected(RetryEvent e) {
    count(e, e.observeOnly() ? Stat.WOULD_FAIL_FAST : Stat.BREAKER_REJECTIONS);
  }

  @Override
  public void onRateLimited(RetryEvent e) {
    Stat s;
    if (e.observeOnly()) {
      s = Stat.WOULD_RATE_LIMIT;
    } else {
      s = e.reason() != null ? Stat.RATE_LIMIT_REJECTIONS : Stat.RATE_LIMIT_WAITS;
    }
    count(e, s);
  }

  @Override
  public void onBreakerTransition(CircuitBreaker breaker, CircuitTransition t, String route) {
    try {
      series(route, breaker.key()).transition(t);
    } catch (RuntimeException ignored) {
      // a metric is never worth a call
    }
  }

  private void count(RetryEvent e, Stat s) {
    try {
      series(e).add(s);
    } catch (RuntimeException ignored) {
      // a metric is never worth a call
    }
  }

  private Counters series(RetryEvent e) {
    return series(e.route(), e.scheme(), e.host(), e.port());
  }

  private Counters series(String route, String scheme, String host, int port) {
    RouteSeries rs = routeSeries(route);
    Counters c = rs.cached(scheme, host, port);
    if (c == null) {
      // As the engine keys the host's breaker: one series per host, however it is written.
      String key = TargetKey.of(scheme, host, port);
      String admitted = admit(key);
      c = rs.counters(admitted);
      if (admitted.equals(key)) {
        rs.cache(scheme, host, port, c);
      }
    }
    return c;
  }

  private Counters series(String route, String host) {
    RouteSeries rs = routeSeries(route);
    Counters c = rs.byKey.get(host);
    return c != null ? c : rs.counters(admit(host));
  }

  private RouteSeries routeSeries(String route) {
    RouteSeries rs = routes.get(route);
    if (rs != null) {
      return rs;
    }
    RouteSeries fresh = new RouteSeries(spellingCacheBound(maxHosts));
    rs = routes.putIfAbsent(route, fresh);
    if (rs != null) {
      return rs;
    }
    for (KeyListener l : keyListeners) {
      try {
        l.newRoute(route);
      } catch (RuntimeException ignored) {
        // the route is counted all the same
      }
    }
    return fresh;
  }

  /** The key to count {@code host} under: itself while there is room, else the other host. */
  private String admit(String host) {
    if (host.startsWith(ROUTE_BREAKER_PREFIX)) {
      return host;
    }
    if (hostTooLong(host)) {
      return other();
    }
    // The slots taken are read before the hosts: admitSlowly counts a slot only once its host is
    // in hosts, so a count that shows every slot taken shows every admitted host too. Read the
    // other way round (as before), a thread seeing the last slot taken by another still admitting
    // this very host filed its event under the other host.
    int taken = hostSlots.get();
    if (hosts.contains(host)) {
      return host;
    }
    if (taken < maxHosts && admitSlowly(host)) {
      return host;
    }
    return other();
  }

  private String other() {
    if (otherSeen.compareAndSet(false, true)) {
      newHost(OTHER_HOST);
    }
    return OTHER_HOST;
  }

  /**
   * Whether the host of {@code key} ({@code scheme://host:port}) is over {@link #MAX_HOST_CHARS}.
   */
  static boolean hostTooLong(String key) {
    int scheme = key.indexOf("://");
    int start = scheme < 0 ? 0 : scheme + 3;
    int port = key.lastIndexOf(':');
    int end = port > start ? port : key.length();
    return end - start > MAX_HOST_CHARS;
  }

  /**
   * Admits {@code host} if a slot is free, one thread at a time: at most {@link #maxHosts} times in
   * the JVM's life (and for threads that meet a free slot), never for a host counted already or one
   * past the bound, which {@link #admit} answers without the lock.
   */
  private boolean admitSlowly(String host) {
    synchronized (admission) {
      if (hosts.contains(host)) {
        return true; // another thread admitted it meanwhile
      }
      if (hostSlots.get() >= maxHosts) {
        return false;
      }
      Runnable step = admissionStep;
      if (step != null) {
        step.run();
      }
      hosts.add(host);
      hostSlots.incrementAndGet(); // after the host: see admit
    }
    newHost(host);
    return true;
  }

  /** For tests: runs {@code step} inside an admission, before its host is counted. */
  void duringAdmission(Runnable step) {
    admissionStep = step;
  }

  private void newHost(String host) {
    for (KeyListener l : keyListeners) {
      try {
        l.newHost(host);
      } catch (RuntimeException ignored) {
        // the host is counted all the same
      }
    }
  }

  void addKeyListener(KeyListener l) {
    keyListeners.add(l);
  }

  void removeKeyListener(KeyListener l) {
    keyListeners.remove(l);
  }

  /** Every series, sorted by route then host. */
  public List<Series> series() {
    List<Series> out = new ArrayList<>();
    for (Map.Entry<String, RouteSeries> r : routes.entrySet()) {
      for (Map.Entry<String, Counters> h : r.getValue().byKey.entrySet()) {
        out.add(new Series(r.getKey(), h.getKey(), h.getValue().snapshot()));
      }
    }
    out.sort(Comparator.comparing(Series::route).thenComparing(Series::host));
    return out;
  }

  /** Routes seen so far, sorted. */
  public SortedSet<String> routes() {
    return new TreeSet<>(routes.keySet());
  }

  /** Hosts counted so far ({@code scheme://host:port}, and {@value #OTHER_HOST}), sorted. */
  public SortedSet<String> hosts() {
    TreeSet<String> out = new TreeSet<>(hosts);
    if (otherSeen.get()) {
      out.add(OTHER_HOST);
    }
    return out;
  }

  /**
   * Host names as written that a route's cache may keep ({@link RouteSeries#cache}): each admitted
   * host in two spellings on average. Past it a spelling finds its series by its key.
   */
  static int spellingCacheBound(int maxHosts) {
    return (int) Math.min(Integer.MAX_VALUE, 2L * maxHosts + 16);
  }

  /** The host names kept by every route's cache, for tests. */
  int spellingsCached() {
    int n = 0;
    for (RouteSeries rs : routes.values()) {
      n += rs.spellingsCached();
    }
    return n;
  }

  /** Hosts counted one by one (at most {@link #maxHosts()}), the other host not included. */
  public int trackedHosts() {
    return hosts.size();
  }

  /** The counters of {@code route} over all its hosts; zero for an unknown route. */
  public CounterSnapshot route(String route) {
    CounterSnapshot sum = CounterSnapshot.ZERO;
    RouteSeries rs = routes.get(route);
    if (rs != null) {
      for (Counters c : rs.byKey.values()) {
        sum = sum.plus(c.snapshot());
      }
    }
    return sum;
  }

  /** The counters of {@code host} over all routes; zero for an unknown host. */
  public CounterSnapshot host(String host) {
    CounterSnapshot sum = CounterSnapshot.ZERO;
    for (RouteSeries rs : routes.values()) {
      Counters c = rs.byKey.get(host);
      if (c != null) {
        sum = sum.plus(c.snapshot());
      }
    }
    return sum;
  }

  /** Everything. */
  public CounterSnapshot total() {
    CounterSnapshot sum = CounterSnapshot.ZERO;
    for (RouteSeries rs : routes.values()) {
      for (Counters c : rs.byKey.values()) {
        sum = sum.plus(c.snapshot());
      }
    }
    return sum;
  }

  /**
   * Counts {@code lines} dead letters lost ({@link DeadLetterWriter#dropped()}): every writer of
   * the JVM's life counts here, each lost line once, by the writer that lost it.
   */
  public void countDeadLettersDropped(long lines) {
    deadLettersDropped.add(lines);
  }

  /** Dead letters lost so far, whatever {@code agent.deadLetter.path} was when they were. */
  public long deadLettersDropped() {
    return deadLettersDropped.sum();
  }
}
