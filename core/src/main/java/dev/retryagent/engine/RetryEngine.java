package dev.retryagent.engine;

import dev.retryagent.config.PathMask;
import dev.retryagent.internal.engine.RateLimiter;
import dev.retryagent.internal.engine.TargetKey;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The retry engine: the policies of the moment and the state shared by calls (per-host breakers,
 * budgets and rate limiters, bounded). Thread-safe; one per agent (or per application that uses the
 * library directly).
 *
 * <p>A call runs through these layers, outermost first; {@link RetryCall} documents the steps:
 *
 * <pre>
 *   call ─┬─ for each attempt ───────────────────────────────────────────────────────────┐
 *         │   rate limit      per host token bucket; paused after a 429    wait or reject │
 *         │   circuit breaker per host (or route)                          fail fast      │
 *         │   attempt         the client sends; per-attempt timeout, attempt header       │
 *         │   classify        status / connect / reset / timeout / exception   (Classifier,│
 *         │                   TransportClassifier); the breaker records the outcome        │
 *         │   decide          retryable? safe to repeat? attempts left? Retry-After too    │
 *         │                   long? deadline? breaker still open? budget left? (RetryRules)│
 *         │   wait            backoff + jitter, at least Retry-After   (sync: Sleeper;     │
 *         │                   async: Scheduler, no thread held)                            │
 *         └───────────────────────────────────────────────────────────── retry ───────────┘
 * </pre>
 *
 * <p>State survives {@link #reconfigure}: per-host state is keyed by the host and the policy
 * section it was built from, so a reload that leaves a section unchanged keeps its state, unless
 * the reload switches between observe and enforce, which keep breakers, budgets and limiters apart.
 * The breakers of sections the new policies no longer have, and those of the mode left, are dropped
 * then ({@link PolicyResolver#policies()}).
 *
 * <p>An application wraps its clients with the adapters ({@code RetryingHttpClient}, {@code
 * RetryInterceptor}, {@code AsyncRetrier}), which start and drive the calls; an adapter of its own
 * uses {@link #newCall} and the SPI of this package.
 */
public final class RetryEngine {
  private final Clock clock;
  private final Sleeper sleeper;
  private final RandomSource random;
  private final Scheduler scheduler;
  private final CompositeListener listener;
  private final boolean listening;
  private final CallContext.Factory contexts;
  private final InternalErrors errors;

  /** Mode and policies, swapped together so no call sees a new one with an old other. */
  private volatile EngineSettings settings;

  /**
   * Held by {@link #reconfigure} and {@link #useFleet}, which each make new settings from the ones
   * of the moment: without it, one on another thread in between was undone for good (useFleet's
   * settings kept the policies it read), or their clean-ups mixed two configurations. Never taken
   * by a call.
   */
  private final Object reloading = new Object();

  private final BoundedRegistry.UseClock uses = new BoundedRegistry.UseClock();

  /** The start of a route-scoped breaker's key; a host's is {@code scheme://host:port}. */
  private static final String ROUTE_KEY = "route:";

  // Grouped by host (or route) key: the exporters read one host's breakers without a walk of
  // them all (a JMX console reads every host's BreakerState). Made in the constructor: its idle
  // test reads the engine's clock.
  private final BoundedRegistry<Key, CircuitBreaker> breakers;
  private final BoundedRegistry<Key, RetryBudget> budgets;

  /** The hosts' own buckets, grouped by target ({@link #pauseHost} finds a host's at once). */
  private final BoundedRegistry<Key, HostBucket> limiters;

  private final AtomicInteger pendingAsyncRetries = new AtomicInteger();

  /**
   * The hosts' 429 pauses: target to when the last one ends ({@link Clock#nanoTime()} terms). A
   * limiter is kept per host, rate-limit section and mode, so a route's first call after the 429
   * (its section of its own), or a reload that changes the section (an operator lowering {@code
   * perSecond} because the host answers 429) or leaves observe mode, makes a new one; the pause is
   * the host's word about itself, not about one limit, and the new limiter starts with it ({@link
   * #newLimiter}), as the fleet's limiters hand theirs on. Written on a 429 only; kept across
   * reloads. Bounded in count as the hosts are ({@link #notePause}). Read without a lock; written
   * under {@link #pauseLock}, in step with {@link #pauseHeap}.
   */
  private final ConcurrentHashMap<String, Pause> hostPauses = new ConcurrentHashMap<>();

  /**
   * The pauses of {@link #hostPauses}, a min-heap by end (each knows its index): the one that ends
   * soonest is at 0, so a 429 past the bound forgets it in O(log n), not a walk of the map. Null
   * until the first 429 (nothing of it on a call's path, nor before main).
   */
  private Pause[] pauseHeap;

  /** The pauses in {@link #pauseHeap}: as many as {@link #hostPauses} holds. */
  private int pauseCount;

  /** Held by a 429 only, while it notes its pause ({@link #notePause}); never by a call's read. */
  private final Object pauseLock = new Object();

  /** Where {@link #notePause} says once that it forgot pauses under way. */
  private final Consumer<String> notices;

  /** Fleet mode, or null: then a {@code scope: fleet} limit is kept per host, as without it. */
  private volatile FleetLimits fleet;

  /** The fleet limits handed out, so a call looks one up without the fleet's lock. */
  private final ConcurrentHashMap<Key, PermitLimiter> fleetLimiters = new ConcurrentHashMap<>();

  private RetryEngine(Builder b) {
    this.clock = b.clock;
    this.sleeper = b.sleeper;
    this.random = b.random;
    this.scheduler = b.scheduler;
    this.errors = new InternalErrors(b.errors);
    this.notices = b.errors;
    List<RetryListener> listeners = new ArrayList<>(b.listeners);
    if (TestFaults.LISTENER) {
      listeners.add(0, new TestFaults.FailingListener());
    }
    this.listener = new CompositeListener(listeners, errors);
    this.contexts = b.contexts;
    this.listening = !listeners.isEmpty();
    // A breaker whose time window still holds a failure is not idle; one whose failures have left
    // it is (read at the eviction's time: the window moves only when a call records).
    this.breakers =
        new BoundedRegistry<>(breaker -> breaker.isIdle(clock.nanoTime()), uses, new TargetOf());
    this.limiters =
        new BoundedRegistry<>(h -> h.limiter.isIdle(clock.nanoTime()), uses, new TargetOf());
    // A budget whose window holds retries is not idle: dropped, its host (failing, likely: it
    // retries) got a fresh budget and retries past the ratio.
    this.budgets = new BoundedRegistry<>(budget -> budget.isIdle(clock.nanoTime()), uses);
    this.settings = new EngineSettings(this, b.mode, b.policies);
  }

  /** A builder with every collaborator at its production default (see {@link Builder}). */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * SPI: starts a call, with the policy the resolver gives {@code request} (the defaults in mode
   * {@code off}). The adapter must check {@link RetryCall#passThrough()} first. Never throws: when
   * the engine fails to start the call (a bug in resolving its policy, in the request view, in the
   * per-host state), the failure is reported once per cause and the call passes through, as it
   * would without the agent.
   *
   * @param request a view of the request; asked for its target and headers during the call
   */
  public RetryCall newCall(RequestInfo request) {
    EngineSettings s = settings;
    if (s.mode == Mode.OFF) {
      return new ViewedCall(s.passThrough, request);
    }
    try {
      RetryCall call = new ViewedCall(hostStateOf(s, request), request);
      giveContext(call);
      return call;
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      internalError("starting a call", e, "the call runs as it would without the agent");
      return new ViewedCall(s.passThrough, request);
    }
  }

  /**
   * SPI: starts {@code call}, a call that is its own request view, as {@link #newCall} starts a
   * call of a separate view: after this, and not before, it has its policy. Never throws.
   *
   * @return {@code call}
   */
  public <C extends SelfViewCall> C begin(C call) {
    EngineSettings s = settings;
    if (s.mode == Mode.OFF) {
      call.state = s.passThrough;
      return call;
    }
    try {
      call.state = hostStateOf(s, call);
      giveContext(call);
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      internalError("starting a call", e, "the call runs as it would without the agent");
      call.state = s.passThrough;
      call.context = null;
    }
    return call;
  }

  /**
   * Reports a failure of the engine's own, or of an adapter's, once per cause ({@link
   * InternalErrors}): what it was doing, the failure, and what the call does instead.
   */
  public void internalError(String where, Throwable error, String consequence) {
    errors.report(where, error, consequence);
  }

  /** The per-host state of the route {@code request} resolves to, made on first use. */
  private HostState hostStateOf(EngineSettings s, RequestInfo request) {
    if (TestFaults.NEW_CALL) {
      throw TestFaults.fault("newCall");
    }
    String scheme = request.scheme();
    String host = request.host();
    int port = request.port();
    Policy policy =
        s.policies.resolve(request.method(), host, port, s.readsPath ? request.path() : null);
    // Keyed as the target string names the host: a null host is "null" there too.
    String hostKey = String.valueOf(host);
    HostState state = s.find(policy, scheme, hostKey, port);
    if (state == null) {
      state = hostState(s, policy, scheme, host, port);
      s.keep(hostKey, state);
      if (state.breaker != null && settings != s) {
        // A reload came after this call read its settings, and its clean-up may have run before
        // the breaker above was made: it would stay tracked (an open one reported open) until the
        // next reload. The call keeps it; the registry keeps it only if a policy still uses it.
        breakers.removeKey(breakerKey(s, TargetKey.of(scheme, host, port), policy), unusedNow);
        // Its relabel may have run before the breaker was made, too: it would tell its
        // transitions under this call's route, which the new settings may no longer have.
        relabel(state.breaker, settings.all());
      }
    }
    return state;
  }

  private void giveContext(RetryCall call) {
    if (contexts != null) {
      call.context = NoContext.of(contexts, call);
    }
  }

  /**
   * Applies a new mode and policies to calls that start from now on; calls under way keep theirs,
   * but for the rule for requests not safe to repeat, which a retry of theirs also takes from the
   * policy now in force when it is stricter ({@link #retryPolicyNow}). Mode and policies change
   * together: no call sees one without the other.
   */
  public void reconfigure(Mode mode, PolicyResolver policies) {
    synchronized (reloading) {
      reconfigureLocked(mode, policies);
    }
  }

  /**
   * The retry policy a call of {@code request} starting now would get, or null when none (mode
   * {@code off}, or the resolver failed): asked on a retry's path only ({@code
   * RetryCall.refusedSinceReload}), never after a success.
   */
  RetryPolicy retryPolicyNow(RequestInfo request) {
    EngineSettings s = settings;
    if (s.mode == Mode.OFF) {
      return null;
    }
    try {
      Policy p =
          s.policies.resolve(
              request.method(),
              request.host(),
              request.port(),
              s.readsPath ? request.path() : null);
      return p == null ? null : p.retry();
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      internalError(
          "resolving the policy now in force for a retry",
          e,
          "the retry follows the call's own policy");
      return null;
    }
  }

  /**
   * Whether the configuration changed since {@code state} was made under it (a reload, or new
   * settings for a fleet's limits): only then can {@link #retryPolicyNow} differ from a call's own
   * policy. One volatile read.
   */
  boolean reloadedSince(HostState state) {
    return settings.generation != state.generation;
  }

  private void reconfigureLocked(Mode mode, PolicyResolver policies) {
    EngineSettings s = new EngineSettings(this, mode, policies);
    this.settings = s;
    fleetLimiters.clear(); // the fleet keeps its own per route; this only drops stale keys
    Collection<Policy> now = s.all();
    unlistedSince = now == null ? s.generation : 0;
    // A breaker of a section no policy has any more (a removed route's, a changed section's), or of
    // the mode left (observe's after a switch to enforce, and back), is never asked again: it would
    // stay in the state it was in, an open one reported open to JMX and Prometheus for the JVM's
    // life. The mode is known even when the resolver lists no policies. Calls under way keep the
    // one they hold.
    breakers.removeKeys(new Unused(s));
    if (now != null) {
      relabel(now);
      // State counted under a maxHosts no policy has now would stay counted under it for good.
      Set<Integer> bounds = new HashSet<>();
      for (Policy p : now) {
        bounds.add(p.circuitBreaker().maxHosts());
      }
      breakers.retainBounds(bounds);
      budgets.retainBounds(bounds);
      limiters.retainBounds(bounds);
    }
  }

  /**
   * The breaker keys that no policy of the settings of the moment uses. Read under the registry's
   * lock: a call that found or made the entry under newer settings read them before its lookup took
   * that lock, so the settings read here are those or later ones, and an entry is dropped only when
   * they have no use for it, as their reload's clean-up would have dropped it.
   */
  private final class UnusedNow implements Predicate<Key> {
    @Override
    public boolean test(Key k) {
      return new Unused(settings).test(k);
    }
  }

  private final UnusedNow unusedNow = new UnusedNow();

  /**
   * The breaker keys that no call of a configuration uses: another mode's, or (when its resolver
   * lists them) a section none of its policies has.
   */
  private static final class Unused implements Predicate<Key> {
    /** The configuration's policies, or null when its resolver does not list them. */
    private final Collection<Policy> policies;

    private final boolean observe;

    Unused(EngineSettings s) {
      this.policies = s.all();
      this.observe = s.mode == Mode.OBSERVE;
    }

    @Override
    public boolean test(Key k) {
      if (k.observe != observe) {
        return true;
      }
      if (policies == null) {
        return false;
      }
      boolean routeKey = k.name.startsWith(ROUTE_KEY);
      for (Policy p : policies) {
        CircuitBreakerPolicy c = p.circuitBreaker();
        if (!c.enabled() || !c.equals(k.policy)) {
          continue;
        }
        if (c.scope() == CircuitBreakerPolicy.Scope.ROUTE
            ? k.name.equals(ROUTE_KEY + p.routeName())
            : !routeKey) {
          return false;
        }
      }
      return true;
    }
  }

  /**
   * Fleet mode: calls that start from now on take the permits of routes with {@code
   * rateLimit.scope: fleet} from {@code fleet} (null: from per-host limiters again).
   */
  public void useFleet(FleetLimits fleet) {
    synchronized (reloading) {
      this.fleet = fleet;
      fleetLimiters.clear();
      // The per-host states hold the limiter they were built with: start them afresh.
      EngineSettings s = settings;
      this.settings = new EngineSettings(this, s.mode, s.policies);
    }
  }

  /** Fleet mode's limits, or null. */
  public FleetLimits fleet() {
    return fleet;
  }

  /** Finds (or makes) the per-host state of the target under {@code policy}. */
  private HostState hostState(
      EngineSettings s, Policy policy, String scheme, String host, int port) {
    String target = TargetKey.of(scheme, host, port);
    BoundedRegistry.Entry<CircuitBreaker> breaker = breakerFor(s, target, policy);
    if (breaker != null) {
      breaker.value.reachedUnder(s.generation); // calls of s reach it (showsState)
    }
    return new HostState(
        this,
        policy,
        s.mode,
        scheme,
        host,
        port,
        breaker,
        budgetEntry(s, target, policy),
        limiterFor(s, target, policy),
        fleetLimiter(s, policy),
        listener.countersFor(policy.routeName(), scheme, host, port),
        s.generation);
  }

  /** A call used the state of these entries (any may be null). */
  void touch(
      BoundedRegistry.Entry<CircuitBreaker> breaker,
      BoundedRegistry.Entry<RetryBudget> budget,
      BoundedRegistry.Entry<HostBucket> limiter) {
    breakers.touch(breaker);
    budgets.touch(budget);
    limiters.touch(limiter);
  }

  /** The mode calls start in now. */
  /** The path mask of the configuration now in force ({@link PolicyResolver#pathMask()}). */
  PathMask pathMask() {
    return settings.pathMask;
  }

  public Mode mode() {
    return settings.mode;
  }

  /** The engine's time; adapters measure deadlines with it. */
  public Clock clock() {
    return clock;
  }

  /** What synchronous adapters wait with ({@link SyncRetryLoop}). */
  public Sleeper sleeper() {
    return sleeper;
  }

  /** The randomness of jitter. */
  public RandomSource random() {
    return random;
  }

  /** What asynchronous adapters schedule retries on ({@link AsyncRetryLoop}). */
  public Scheduler scheduler() {
    return scheduler;
  }

  /** Asynchronous retries waiting for their delay right now. */
  public int pendingAsyncRetries() {
    return pendingAsyncRetries.get();
  }

  /**
   * An asynchronous retry starts waiting for its delay on {@link #scheduler()}: for adapters that
   * schedule their own waits (OkHttp's {@code AsyncRetrier}); {@link AsyncRetryLoop} calls it
   * itself. Each call is matched by one {@link #asyncRetryDone()}.
   */
  public void asyncRetryScheduled() {
    pendingAsyncRetries.incrementAndGet();
  }

  /** The wait counted by {@link #asyncRetryScheduled()} is over (it ran, or was cancelled). */
  public void asyncRetryDone() {
    pendingAsyncRetries.decrementAndGet();
  }

  /** Every breaker tracked now, least recently used first. */
  public List<CircuitBreaker> breakers() {
    return breakers.values();
  }

  /**
   * The breakers tracked now for one key, {@code scheme://host:port} or {@code route:NAME}: one per
   * {@code circuitBreaker} section that guards it (two routes whose sections differ keep a breaker
   * each for the same host). Costs that key's breakers, not a walk of all of them; empty when none.
   */
  public List<CircuitBreaker> breakers(String key) {
    return breakers.group(key);
  }

  /**
   * Whether {@code b}'s state decides its key's in the metrics now (the worst state of a host's
   * breakers, the counts by state). Yes, but for one that no call of the configuration in force has
   * reached yet when that configuration's resolver does not list its policies: the engine could not
   * drop the breakers of sections no route has any more at its reload, and such a breaker, asked by
   * no call, stays in the state it was in: an open one showed its host open for the JVM's life.
   * That one decides only while it would refuse a call now (it may yet be reached: open and not due
   * for trials, or half-open with every trial out). A resolver that lists its policies had those
   * breakers dropped at the reload; each one left is some policy's, and shown.
   */
  public boolean showsState(CircuitBreaker b) {
    long since = unlistedSince;
    return since == 0 || b.usedUnder() - since >= 0 || b.refusesAt(clock.nanoTime());
  }

  /**
   * The generation of the configuration applied by the last {@link #reconfigure} when its resolver
   * lists no policies (its breakers of other sections could not be dropped); 0 when it lists them,
   * or before any reload (every breaker then is the first configuration's).
   */
  private volatile long unlistedSince;

  /** Number of hosts (or routes) with breaker, budget and limiter state. */
  public int trackedTargets() {
    return Math.max(breakers.size(), Math.max(budgets.size(), limiters.size()));
  }

  /**
   * The target's breaker for a route of configuration {@code s}, or null when it has none. Observe
   * mode has breakers of its own, as it has budgets and limiters: what it saw (failures of a host
   * it never refused, and never retried) must not open a breaker that then refuses real calls at
   * once after a switch to enforce; nor an enforcing breaker's open state show in observe mode's
   * reports after a switch back. A reload to the other mode drops the old mode's ({@link Unused}).
   */
  private BoundedRegistry.Entry<CircuitBreaker> breakerFor(
      EngineSettings s, String target, Policy policy) {
    CircuitBreakerPolicy p = policy.circuitBreaker();
    if (!p.enabled()) {
      return null;
    }
    String route = policy.routeName();
    return breakers.entry(
        breakerKey(s, target, policy),
        k -> new CircuitBreaker(k.name, p, new BreakerTransitions(route)),
        p.maxHosts());
  }

  /**
   * Tells the listeners of a breaker's transitions under the route they are counted for: the route
   * whose call made the breaker; a host breaker serves every route with its {@code circuitBreaker}
   * section, and a reload that renames or removes that route keeps it for the others ({@link
   * #relabel}).
   */
  private final class BreakerTransitions implements CircuitBreaker.TransitionListener {
    private volatile String route;

    BreakerTransitions(String route) {
      this.route = route;
    }

    @Override
    public void onTransition(CircuitBreaker breaker, CircuitTransition transition) {
      listener.onBreakerTransition(breaker, transition, route);
    }
  }

  /**
   * After a reload: a host breaker kept (its section unchanged) whose route the configuration no
   * longer has counts its transitions under the first route that has its section now. Without it, a
   * renamed route's breaker opened under the old name, a route the metrics and the exit summary
   * should no longer be counting for. Reload time only: nothing per call.
   */
  private void relabel(Collection<Policy> now) {
    for (CircuitBreaker b : breakers.values()) {
      relabel(b, now);
    }
  }

  /**
   * The rule of {@link #relabel(Collection)} for one breaker; also for one that a call on the
   * settings before a reload made after that reload's relabel ({@link #hostStateOf}): rare, and
   * never on a call's common path.
   */
  private static void relabel(CircuitBreaker b, Collection<Policy> now) {
    if (now == null
        || b.key().startsWith(ROUTE_KEY)
        || !(b.transitionListener() instanceof BreakerTransitions)) {
      return;
    }
    BreakerTransitions told = (BreakerTransitions) b.transitionListener();
    String first = null;
    for (Policy p : now) {
      CircuitBreakerPolicy c = p.circuitBreaker();
      if (c.enabled() && c.scope() == CircuitBreakerPolicy.Scope.HOST && c.equals(b.policy())) {
        if (p.routeName().equals(told.route)) {
          return;
        }
        if (first == null) {
          first = p.routeName();
        }
      }
    }
    if (first != null) {
      told.route = first;
    }
  }

  /**
   * The registry's key of the breaker of {@code target} under {@code policy} (one enabled) in the
   * mode of {@code s}.
   */
  private static Key breakerKey(EngineSettings s, String target, Policy policy) {
    CircuitBreakerPolicy p = policy.circuitBreaker();
    return new Key(
        p.scope() == CircuitBreakerPolicy.Scope.ROUTE ? ROUTE_KEY + policy.routeName() : target,
        p,
        s.mode == Mode.OBSERVE);
  }

  /** The budget of {@code target} under {@code policy}, or null when it has none (for tests). */
  RetryBudget budgetFor(String target, Policy policy) {
    BoundedRegistry.Entry<RetryBudget> e = budgetEntry(settings, target, policy);
    return e == null ? null : e.value;
  }

  /**
   * The target's budget for a route of configuration {@code s}, or null when it has none. Observe
   * mode has budgets of its own, as it has limiters: its would-be retries stay spent (what the
   * budget would have allowed is what it reports), and a switch to enforce must not refuse real
   * retries, for up to a window, for retries that never reached the host.
   */
  private BoundedRegistry.Entry<RetryBudget> budgetEntry(
      EngineSettings s, String target, Policy policy) {
    BudgetPolicy p = policy.budget();
    if (!p.enabled() || !policy.retry().enabled()) {
      return null;
    }
    return budgets.entry(
        new Key(target, p, s.mode == Mode.OBSERVE),
        k -> new RetryBudget(p),
        policy.circuitBreaker().maxHosts());
  }

  /**
   * The target's own limiter for a route of configuration {@code s}, or null when the limit is off
   * or kept by the fleet. Observe mode has limiters of its own: it takes permits and never waits,
   * so it runs its bucket into debt (up to {@code maxWait}) for permits never really spent, which
   * the first enforcing calls after a switch to enforce would wait for or be refused on. The host's
   * 429 pause is the host's, not the bucket's: a pause observe mode saw reaches the enforcing
   * limiter through {@link #hostPauses} or {@link #pauseHost}.
   */
  private BoundedRegistry.Entry<HostBucket> limiterFor(
      EngineSettings s, String target, Policy policy) {
    RateLimitPolicy p = policy.rateLimit();
    if (!p.enabled()) {
      return null;
    }
    if (fleetLimiter(s, policy) != null) {
      return null;
    }
    long retryAfterMax = policy.retry().retryAfterMax().toNanos();
    BoundedRegistry.Entry<HostBucket> e =
        limiters.entry(
            new Key(target, p, s.mode == Mode.OBSERVE),
            k -> new HostBucket(newLimiter(target, policy), s.generation, retryAfterMax),
            policy.circuitBreaker().maxHosts());
    if (e.value.usedBy(s.generation, retryAfterMax) && p.pauseOn429()) {
      // A route of a longer bound now shares the bucket (its first call, or its first since a
      // reload): the host's pause under way holds the bucket as long as this route allows, counted
      // from the 429, as a bucket made now would be. Paused by the 429 for the routes that used it
      // then, it let this route's calls go before the host's Retry-After was over. Read after the
      // bound is set, as a 429 reads the bound after noting its pause (pauseHost for the other
      // buckets, HostHold.recordStatus for its own): either the 429 reads the new bound or its
      // pause is read here. Under the lock the 429 notes its pause with: the bound set before it is
      // seen by a 429 noted after it, which the map's read alone does not promise.
      Pause noted;
      synchronized (pauseLock) {
        noted = hostPauses.get(target);
      }
      long now = clock.nanoTime();
      long left = noted == null ? 0 : noted.leftNanos(now, retryAfterMax);
      if (left > 0) {
        e.value.limiter.pause(now, left);
      }
    }
    return e;
  }

  /**
   * A limiter for {@code target}, paused (pauseOn429) for what is left of its host's last 429 pause
   * ({@link #hostPauses}): one that came before this route's first call, or before a reload that
   * changed its section.
   */
  private RateLimiter newLimiter(String target, Policy policy) {
    RateLimitPolicy p = policy.rateLimit();
    long now = clock.nanoTime();
    RateLimiter limiter = new RateLimiter(p, now);
    Pause noted = p.pauseOn429() ? hostPauses.get(target) : null;
    Runnable seam = pauseReadSeam;
    if (seam != null) {
      seam.run();
    }
    long left = noted == null ? 0 : noted.leftNanos(now, policy.retry().retryAfterMax());
    if (left > 0) {
      limiter.pause(now, left);
    }
    return limiter;
  }

  /**
   * Tests only (null otherwise): run by {@link #newLimiter} after it read the host's pause, before
   * the registry holds the bucket, so a test can put a 429 in that window ({@link #pauseHost}).
   */
  volatile Runnable pauseReadSeam;

  /**
   * Tests only (null otherwise): run by {@link #pauseHost} as a 429 comes, before the host's pause
   * is noted, so a test can put a route's first use of a bucket there ({@link #limiterFor}).
   */
  volatile Runnable pauseNoteSeam;

  /**
   * A 429 of {@code from}'s target asked for {@code askedNanos} (its {@code Retry-After},
   * unbounded: {@code from}'s own limiter is paused for it after this, within its bucket's bound,
   * read once this pause is noted, {@link HostHold#recordStatus}): the host's other limiters of
   * this JVM (routes whose rate limit is a section of their own, each a bucket of its own) pause
   * too, each bounded by its own routes' {@code retryAfter.max} ({@link HostBucket}), unless its
   * section does not pause on 429. Before, they were bounded by {@code from}'s route's as well: a
   * route that waits for a Retry-After up to 60 s went after 10 s, when the 429 came on a route
   * whose bound is 10 s. Every one the registry holds for the target: made by a route that spells
   * the host in another case, or by an older configuration whose calls still hold it (their retries
   * must not go during the host's Retry-After either). A fleet's limiter is left to the fleet (its
   * pause is the route's, in Redis). On a 429 only: the group of the target, not a walk of every
   * host.
   */
  void pauseHost(HostState from, long now, long askedNanos) {
    // At most a day, the longest any route waits for (RetryPolicy.RETRY_AFTER_MAX_LIMIT): a noted
    // pause is forgotten once over, and a year's Retry-After would keep it for a year.
    long pauseNanos = Math.min(askedNanos, RetryPolicy.RETRY_AFTER_MAX_LIMIT.toNanos());
    Runnable seam = pauseNoteSeam;
    if (seam != null) {
      seam.run();
    }
    // Keyed as the limiters are, the host in lower case (TargetKey, made once with the state, not
    // per 429): a limiter made later finds the pause however its route spells the host.
    String target = from.target;
    // Noted first, then the group read under the registry's lock, which a bucket is made under
    // (newLimiter reads the pause inside limiters.entry): a bucket made as this 429 comes either
    // read this pause or is in the group. A group read without that lock would miss a bucket that
    // read no pause and is not in the group yet (RateLimitThroughEngineTest's
    // aBucketMadeAsItsHostsFirst429IsNotedIsPaused).
    notePause(target, now + pauseNanos, now);
    for (HostBucket b : limiters.group(target)) {
      if (b.limiter != from.limiter && b.limiter.policy().pauseOn429()) {
        b.limiter.pause(now, Math.min(pauseNanos, b.pauseBoundNanos()));
      }
    }
  }

  /**
   * A call under way keeps the host bucket it began with after the registry dropped it (maxHosts,
   * when no idle bucket was left to drop): a 429 since, of a call on the host's new bucket, paused
   * the buckets the registry holds ({@link #pauseHost}), not this one, and its retries and waiters
   * went during the pause. Before a retry's permit and after a wait for one, the host's noted pause
   * reaches it here (on those paths only: a call's first permit comes from a current bucket).
   */
  void pauseDroppedBucket(HostState s, long now) {
    Pause noted = hostPauses.get(s.target);
    // The bucket's bound (the routes sharing it), as the 429 paused the buckets the registry holds.
    long left = noted == null ? 0 : noted.leftNanos(now, s.pauseBoundNanos());
    if (left > 0 && s.limiter instanceof RateLimiter) {
      RateLimiter l = (RateLimiter) s.limiter;
      if (l.policy().pauseOn429()) {
        l.pause(now, left);
      }
    }
  }

  /**
   * {@code target}'s host is paused until {@code until}: the later of it and the pause noted. Then
   * forgets at most two pauses, each the one that ends soonest, if it is over or the pauses are
   * past {@link #maxHostPauses}: O(log n) each, so no 429 pays for a walk of the map (at maxHosts
   * 100,000 one in ~100,000 paid 55-80 ms for it, docs/BENCHMARKS.md). One a 429 adds, one past the
   * bound forgotten: the bound holds after each 429; the second step empties the pauses that are
   * over by the time the 429s that follow them have come (a lowered bound, a step a 429).
   */
  private void notePause(String target, long until, long now) {
    int sayBound = 0; // the bound to say past, once, after the lock: the sink is the user's
    synchronized (pauseLock) {
      Pause noted = hostPauses.get(target);
      if (noted == null) {
        addPause(new Pause(target, now, until));
      } else if (until - noted.until > 0) {
        noted.since = now; // first: a reader takes until, then since (Pause.leftNanos)
        noted.until = until;
        siftPauseDown(noted.index);
      }
      int bound = maxHostPauses();
      for (int step = 0; step < 2 && pauseCount > 0; step++) {
        Pause soonest = pauseHeap[0];
        boolean over = soonest.until - now <= 0;
        if (!over && pauseCount <= bound) {
          break;
        }
        removeSoonestPause();
        if (!over) {
          pausesForgotten++;
          if (!pausesForgottenSaid) {
            pausesForgottenSaid = true;
            sayBound = bound;
          }
        }
      }
    }
    if (sayBound > 0) {
      // Not under the lock (a slow stderr would hold every other 429), and never into the call: a
      // sink that throws would fail this 429's decision, the call not retried as it would be.
      try {
        notices.accept(
            "retry-agent: more hosts under a 429 pause at once than maxHosts ("
                + sayBound
                + "): the pauses that end soonest are forgotten; their hosts' buckets keep"
                + " them, but a bucket made or dropped since (another rateLimit section, a"
                + " reload, maxHosts) does not wait for them (said once)");
      } catch (RuntimeException | LinkageError ignored) {
        // nowhere to say it: the pauses are kept to the bound all the same
      }
    }
  }

  /** Adds {@code p} to the map and the heap; under {@link #pauseLock}. */
  private void addPause(Pause p) {
    if (pauseHeap == null) {
      pauseHeap = new Pause[16];
    } else if (pauseCount == pauseHeap.length) {
      pauseHeap = Arrays.copyOf(pauseHeap, 2 * pauseCount);
    }
    hostPauses.put(p.target, p);
    p.index = pauseCount;
    pauseHeap[pauseCount++] = p;
    siftPauseUp(p.index);
  }

  /** Forgets the pause that ends soonest, from the heap and the map; under {@link #pauseLock}. */
  private void removeSoonestPause() {
    Pause soonest = pauseHeap[0];
    hostPauses.remove(soonest.target, soonest);
    Pause last = pauseHeap[--pauseCount];
    pauseHeap[pauseCount] = null;
    if (pauseCount > 0) {
      pauseHeap[0] = last;
      last.index = 0;
      siftPauseDown(0);
    }
  }

  private void siftPauseUp(int i) {
    Pause p = pauseHeap[i];
    while (i > 0) {
      int parent = (i - 1) >>> 1;
      Pause above = pauseHeap[parent];
      if (p.until - above.until >= 0) {
        break;
      }
      pauseHeap[i] = above;
      above.index = i;
      i = parent;
    }
    pauseHeap[i] = p;
    p.index = i;
  }

  private void siftPauseDown(int i) {
    Pause p = pauseHeap[i];
    for (int child = 2 * i + 1; child < pauseCount; child = 2 * i + 1) {
      if (child + 1 < pauseCount && pauseHeap[child + 1].until - pauseHeap[child].until < 0) {
        child++;
      }
      Pause below = pauseHeap[child];
      if (below.until - p.until >= 0) {
        break;
      }
      pauseHeap[i] = below;
      below.index = i;
      i = child;
    }
    pauseHeap[i] = p;
    p.index = i;
  }

  /**
   * A host's 429 pause: when the last one ends ({@link Clock#nanoTime()} terms; read without a
   * lock, written under {@link #pauseLock}) and where it is in {@link #pauseHeap}. Loaded at the
   * first 429, never before main.
   */
  private static final class Pause {
    final String target;
    volatile long until;

    /**
     * When the 429 that asked for {@link #until} came: a route's bound ({@code retryAfter.max})
     * counts from there, for a bucket made (or dropped) later as for one paused at the 429.
     */
    volatile long since;

    int index;

    Pause(String target, long since, long until) {
      this.target = target;
      this.since = since;
      this.until = until;
    }

    /**
     * What is left at {@code now} of the pause for a route that waits for a {@code Retry-After} up
     * to {@code retryAfterMax}: it ends at the pause's end or {@code retryAfterMax} after the 429,
     * whichever comes first; 0 or less when over. Counted from now, a bucket made during a long
     * pause waited its route's whole bound from its making, past the bound from the 429.
     */
    long leftNanos(long now, Duration retryAfterMax) {
      return leftNanos(now, retryAfterMax.toNanos());
    }

    /** {@link #leftNanos(long, Duration)}, the bound in nanoseconds. */
    long leftNanos(long now, long retryAfterMaxNanos) {
      long untilNow = until - now;
      long boundNow = since - now + retryAfterMaxNanos;
      return Math.min(untilNow, boundNow);
    }
  }

  /**
   * Pauses under way forgotten past {@link #maxHostPauses}, for tests; under {@link #pauseLock}.
   */
  private long pausesForgotten;

  private boolean pausesForgottenSaid;

  /** Without a configuration that lists its policies: maxHosts' default. */
  private static final int MAX_HOST_PAUSES = 10_000;

  /**
   * The most pauses {@link #hostPauses} keeps: the largest {@code maxHosts} of the configuration,
   * the bound of the hosts' other state (its default when the resolver cannot list its policies).
   * Asked by a 429 only, under {@link #pauseLock}: listing the policies before main costs start-up,
   * and it lists them once per configuration, not per 429.
   */
  private int maxHostPauses() {
    EngineSettings s = settings;
    if (s != pauseBoundOf) {
      int largest = 0;
      try {
        Collection<Policy> all = s.all();
        if (all != null) {
          for (Policy p : all) {
            largest = Math.max(largest, p.circuitBreaker().maxHosts());
          }
        }
      } catch (RuntimeException | LinkageError | StackOverflowError e) {
        // A library user's resolver that fails to list its policies: as one that cannot list
        // them, maxHosts' default, for this configuration (not asked again on each 429). Thrown on,
        // it failed every 429's decision (not retried) and no pause was ever forgotten.
        largest = 0;
        internalError(
            "listing the policies for the hosts' 429 pauses' bound",
            e,
            "the bound is maxHosts' default, " + MAX_HOST_PAUSES);
      }
      pauseBound = largest > 0 ? largest : MAX_HOST_PAUSES;
      pauseBoundOf = s;
    }
    return pauseBound;
  }

  /** The settings {@link #pauseBound} was read from; under {@link #pauseLock}. */
  private EngineSettings pauseBoundOf;

  private int pauseBound;

  /** The hosts' 429 pauses noted, over or not (tests). */
  int hostPausesNoted() {
    return hostPauses.size();
  }

  /** Pauses under way {@link #notePause} forgot past the bound (tests). */
  long hostPausesForgotten() {
    synchronized (pauseLock) {
      return pausesForgotten;
    }
  }

  /**
   * The fleet's limiter of {@code policy}'s route in fleet mode under {@code s}, or null. Null in
   * observe mode too: its calls then take permits of a bucket of their own ({@link #limiterFor}),
   * as a host-scoped route's do. Observe mode never waits for a permit, so with the fleet's it made
   * a round trip to Redis on the application's thread per call and reserved permits it never used,
   * up to {@code maxWait} ahead, from the enforcing JVMs' shared limit; and a 429 it saw paused the
   * whole fleet. Observe mode changes nothing the enforcing fleet does.
   */
  private PermitLimiter fleetLimiter(EngineSettings s, Policy policy) {
    RateLimitPolicy p = policy.rateLimit();
    FleetLimits f = fleet;
    if (!p.enabled()
        || p.scope() != RateLimitPolicy.Scope.FLEET
        || f == null
        || s.mode == Mode.OBSERVE) {
      return null;
    }
    Duration retryAfterMax = policy.retry().retryAfterMax();
    // The generation too: a call under older settings (it read them before a reload) may get the
    // route's newer limiter (FleetLimits), which calls under the settings that had this policy
    // must not find here if a later reload brings it back.
    Key key = new Key(policy.routeName() + "\n" + retryAfterMax.toNanos() + "\n" + s.generation, p);
    PermitLimiter l = fleetLimiters.get(key);
    if (l == null) {
      // Its generation: an older configuration's limit never replaces a newer one's in the fleet.
      l = f.limiter(policy.routeName(), p, retryAfterMax, s.generation);
      fleetLimiters.put(key, l);
    }
    return l;
  }

  /**
   * True when a listener wants an event of {@code type} about attempt {@code attempt}: without one,
   * no event object is built at all.
   */
  boolean wants(RetryEvent.Type type, int attempt) {
    return listening && listener.anyWants(type, attempt, false);
  }

  /** Tells the listeners about {@code e}; build it only when {@link #wants}. */
  void emit(RetryEvent e) {
    NoContext.tell(e.context(), e);
    listener.emit(e);
  }

  /** The listeners, for the routine events a call tells its {@link HostState}'s counters. */
  CompositeListener listeners() {
    return listener;
  }

  /** A key's group in the limiter registry: its target. No lambda (see {@link #notePause}). */
  private static final class TargetOf implements Function<Key, String> {
    @Override
    public String apply(Key k) {
      return k.name;
    }
  }

  /**
   * Per-host state is keyed by target and by the policy section it was built from; a breaker, a
   * budget and a limiter by whether it is observe mode's too ({@link #breakerFor}, {@link
   * #budgetEntry}, {@link #limiterFor}).
   */
  private static final class Key {
    final String name;
    final Object policy;
    final boolean observe;

    Key(String name, Object policy) {
      this(name, policy, false);
    }

    Key(String name, Object policy, boolean observe) {
      this.name = name;
      this.policy = policy;
      this.observe = observe;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Key
          && ((Key) o).name.equals(name)
          && ((Key) o).policy.equals(policy)
          && ((Key) o).observe == observe;
    }

    @Override
    public int hashCode() {
      return (name.hashCode() * 31 + policy.hashCode()) * 2 + (observe ? 1 : 0);
    }
  }

  /**
   * Builds an engine. Every collaborator has a production default: {@link Clock#SYSTEM}, {@link
   * Sleeper#SYSTEM}, {@link RandomSource#THREAD_LOCAL}, {@link Scheduler#shared()}, no listener,
   * {@link Mode#ENFORCE} and {@link Policy#defaults()} for every request. Setters reject null with
   * a {@link NullPointerException}. Not thread-safe; {@link #build()} may be called more than once,
   * each engine with state of its own.
   */
  public static final class Builder {
    private Clock clock = Clock.SYSTEM;
    private Sleeper sleeper = Sleeper.SYSTEM;
    private RandomSource random = RandomSource.THREAD_LOCAL;
    private Scheduler scheduler;
    private final List<RetryListener> listeners = new ArrayList<>();
    private Consumer<String> errors = InternalErrors.stderr();
    private Mode mode = Mode.ENFORCE;
    private PolicyResolver policies = PolicyResolver.always(Policy.defaults());
    private CallContext.Factory contexts;

    private Builder() {}

    /** The source of time: monotonic for waits and deadlines, wall clock for HTTP dates. */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock);
      return this;
    }

    /** How synchronous calls wait between attempts. */
    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = Objects.requireNonNull(sleeper);
      return this;
    }

    /** The randomness of jitter. */
    public Builder random(RandomSource random) {
      this.random = Objects.requireNonNull(random);
      return this;
    }

    /** Where asynchronous calls wait between attempts, without holding a thread. */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler);
      return this;
    }

    /** Adds a listener; listeners are told in the order they were added. */
    public Builder listener(RetryListener listener) {
      this.listeners.add(Objects.requireNonNull(listener));
      return this;
    }

    /**
     * Gives every call that is not a pass-through a {@link CallContext} made by {@code factory} (at
     * most one factory; null for none).
     */
    public Builder callContexts(CallContext.Factory factory) {
      this.contexts = factory;
      return this;
    }

    /**
     * Where the engine reports its own failures (caught, so that they never reach a call), one
     * whole line each, once per cause; {@link System#err} by default.
     */
    public Builder errors(Consumer<String> errors) {
      this.errors = Objects.requireNonNull(errors);
      return this;
    }

    /**
     * {@link Mode#ENFORCE} retries; {@link Mode#OBSERVE} decides and reports but never retries,
     * waits or rejects; {@link Mode#OFF} passes every call through untouched.
     */
    public Builder mode(Mode mode) {
      this.mode = Objects.requireNonNull(mode);
      return this;
    }

    /** The policy of each request, e.g. {@code AgentConfig::resolve}. */
    public Builder policies(PolicyResolver policies) {
      this.policies = Objects.requireNonNull(policies);
      return this;
    }

    /** Every call gets {@code policy}. */
    public Builder policy(Policy policy) {
      return policies(PolicyResolver.always(policy));
    }

    /** A new engine, with no per-host state yet. */
    public RetryEngine build() {
      if (scheduler == null) {
        scheduler = Scheduler.shared();
      }
      return new RetryEngine(this);
    }
  }
}
