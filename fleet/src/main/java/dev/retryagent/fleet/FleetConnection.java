package dev.retryagent.fleet;

import dev.retryagent.engine.Clock;
import dev.retryagent.internal.AgentThreads;
import dev.retryagent.policy.RateLimitPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * This JVM's membership of a fleet: the connection to Redis, kept up by a background daemon thread
 * named {@value #THREAD_NAME}, and the per-route {@link FleetRateLimiter}s that use it.
 *
 * <h2>Lifecycle</h2>
 *
 * <ul>
 *   <li>{@link #start} never blocks and never touches the network or the Redis client: the thread
 *       connects. Until it has, the state is {@link State#CONNECTING} and limiters use their local
 *       share.
 *   <li>{@link State#UP}: limiters acquire in Redis; the thread sends a heartbeat every {@link
 *       FleetSettings#heartbeatInterval()}, which also counts the live instances.
 *   <li>A connection-level failure (refused, timed out, credentials refused), seen by an
 *       acquisition or a heartbeat, moves to {@link State#DOWN} at once: limiters use their local
 *       share without trying Redis, the log says so once, and the thread reconnects with backoff
 *       ({@link FleetSettings#reconnectMin()} doubling to {@link FleetSettings#reconnectMax()},
 *       jittered): after an outage that ends {@link #FLAP_NANOS} (500 ms) or more of being up,
 *       within a random time up to {@code reconnectMin} (not at once: a Redis restart is every
 *       JVM's outage at the same moment), after the backoff, still doubling, after one that came
 *       sooner. Once Redis answers again it is {@code UP}, the log says so once, and pauses this
 *       JVM knows of are written back to Redis.
 *   <li>Up, Redis may still refuse every script (a renamed {@code EVALSHA}, a cluster's redirect,
 *       out of memory): no reconnect would help, so the state stays {@code UP} and each call pays
 *       its round trip and uses its local share, as for any error Redis answers; {@link
 *       #isShared()} is false (the metric, {@code explain}) until a script succeeds again.
 *   <li>{@link #close} ends the thread, removes this instance from the live count, and closes the
 *       connections; 429 pauses still queued for Redis are written first while it was up (writes
 *       start within one command timeout). A fleet started in its place ({@link
 *       #start(FleetSettings, Clock, Consumer, FleetConnection)}) takes the pauses this one holds,
 *       and those its limiters see later (calls under way through a reload).
 * </ul>
 *
 * <p>Thread-safe. Log lines go to the sink given to {@link #start}; none holds the password or the
 * URL's user-info.
 */
public final class FleetConnection implements AutoCloseable {
  /** The background thread's name. */
  public static final String THREAD_NAME = "retry-agent-fleet";

  /** Missed heartbeats after which an instance no longer counts as live. */
  static final int HEARTBEATS_TO_LIVE = 3;

  /**
   * An outage sooner than this after a connect is a flap: the next connect waits the backoff, which
   * goes on doubling (Loop). Long enough for a call to come, short next to a real outage's
   * reconnect.
   */
  static final long FLAP_NANOS = 500_000_000L;

  /** Connections opened ahead for callers once Redis answers (of {@code maxConnections}). */
  static final int WARM_CONNECTIONS = 2;

  /** Where this JVM stands with Redis. */
  public enum State {
    /** Started, not yet connected: limiters use their local share. */
    CONNECTING,
    /**
     * Connected: limits and pauses are shared, unless Redis refuses the fleet's scripts ({@link
     * #isShared()}).
     */
    UP,
    /** Unreachable or refusing: limiters use their local share while the thread reconnects. */
    DOWN,
    /** Closed for good. */
    CLOSED
  }

  private final FleetSettings settings;
  private final Clock clock;
  private final Consumer<String> log;
  private final String instanceId;
  private final List<String> instancesKey;
  private final ConcurrentHashMap<String, FleetRateLimiter> limiters = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<FleetRateLimiter> pausesToWrite =
      new ConcurrentLinkedQueue<>();
  // Pauses whose write failed while up: written again at the thread's next heartbeat turn.
  private final ConcurrentLinkedQueue<FleetRateLimiter> pausesToRetry =
      new ConcurrentLinkedQueue<>();
  private final Object lock = new Object();
  private final Thread thread;

  private volatile State state = State.CONNECTING;
  private volatile RedisGateway gateway;
  private volatile int liveInstances;
  private volatile boolean heartbeatErrorReported;

  /**
   * Why Redis last refused a route's script as such (a {@link
   * FleetUnavailableException.Kind#REFUSED REFUSED} error: renamed EVALSHA, a cluster's redirect,
   * out of memory), until a route's write succeeds again; null while none does. The heartbeat's own
   * in {@link #heartbeatRefused}: its one key may be served (a cluster node that holds its slot)
   * while the routes' are not.
   */
  private volatile String callsRefused;

  /** As {@link #callsRefused}, for the heartbeat's script: set and cleared by each heartbeat. */
  private volatile String heartbeatRefused;

  /** The fleet a reload started in place of this one: it takes this one's later 429 pauses. */
  private volatile FleetConnection successor;

  /** Whether Redis was up when {@link #close} was called: only then are queued pauses written. */
  private volatile boolean upWhenClosed;

  /**
   * Set by {@link #close} (by {@code System.nanoTime()}): the thread's last writes (the pauses, the
   * leave) share what is left before it, a connect included only when it fits.
   */
  private volatile long closeDeadline;

  // Guarded by lock.
  private boolean outageReported;
  private boolean woken;
  private long outages;
  private long failedConnects;

  private FleetConnection(FleetSettings settings, Clock clock, Consumer<String> log) {
    this.settings = settings;
    this.clock = clock;
    this.log = log;
    // A random id, not the host name: resolving it may block, and it says nothing to Redis.
    this.instanceId =
        Long.toHexString(ProcessHandle.current().pid())
            + "-"
            + Long.toHexString(ThreadLocalRandom.current().nextLong());
    this.instancesKey = Collections.singletonList(settings.keyPrefix() + ":instances");
    // A daemon with the system class loader (never pinning the loader of whichever application
    // thread happened to start the agent) whose uncaught throwable is one sanitised line.
    this.thread = AgentThreads.newThread(new Loop(this), THREAD_NAME);
  }

  /**
   * Joins the fleet: starts the background thread, which connects to Redis. Returns at once.
   *
   * @param clock this JVM's time, for the local share and the leases (Redis times itself)
   * @param log where the once-per-outage lines go (e.g. stderr)
   */
  public static FleetConnection start(FleetSettings settings, Clock clock, Consumer<String> log) {
    return start(settings, clock, log, null);
  }

  /**
   * Joins the fleet as {@link #start(FleetSettings, Clock, Consumer)} does, after a reload that
   * leaves {@code previous} (null: none): its routes' counters go on here, and the 429 pauses it
   * holds hold here too.
   */
  public static FleetConnection start(
      FleetSettings settings, Clock clock, Consumer<String> log, FleetConnection previous) {
    FleetConnection c = new FleetConnection(settings, clock, log);
    if (previous != null) {
      // Before the thread starts, so that its first connect writes them to this fleet's Redis.
      c.takeOver(previous);
    }
    c.thread.start();
    return c;
  }

  /**
   * The fleet limit of {@code route}: one per route and this connection; asking again with the same
   * limit returns the same limiter, with another (a reload) a new one on the same Redis state.
   *
   * @param limit the route's {@code rateLimit} ({@code perSecond}, {@code burst} across the fleet)
   * @param retryAfterMax the longest pause a 429 may set ({@code retryAfter.max})
   */
  public FleetRateLimiter limiter(String route, RateLimitPolicy limit, Duration retryAfterMax) {
    return limiter(route, limit, retryAfterMax, UNORDERED);
  }

  /** Asked without a configuration's generation: taken as the latest (it replaces any). */
  private static final long UNORDERED = Long.MIN_VALUE;

  /**
   * {@link #limiter(String, RateLimitPolicy, Duration)} asked under the engine's configuration
   * {@code generation} (larger is later). A call that read its settings before a reload may ask
   * after a call under the new ones: its older limit never replaces the newer one (which would then
   * hold, through every limiter of the route forwarding to the latest, until the next reload); it
   * gets the route's limiter, as a call under way through a reload does.
   */
  public FleetRateLimiter limiter(
      String route, RateLimitPolicy limit, Duration retryAfterMax, long generation) {
    // Looked up once per route and policy (the engine keeps what it gets), so a lock is cheap,
    // and it keeps one limiter, and one set of counters, per route.
    synchronized (limiters) {
      FleetRateLimiter existing = limiters.get(route);
      if (existing != null
          && existing.limit().equals(limit)
          && existing.maxPauseNanos() == retryAfterMax.toNanos()) {
        if (generation != UNORDERED && generation > existing.generation()) {
          existing.generation(generation);
        }
        return existing;
      }
      if (existing != null && generation != UNORDERED && generation < existing.generation()) {
        return existing;
      }
      FleetRateLimiter created =
          new FleetRateLimiter(
              this,
              route,
              limit,
              retryAfterMax,
              // A reload changed the limit: the route counts on (a reload resets no counter).
              existing != null ? existing.metrics() : new FleetMetrics());
      created.generation(
          generation == UNORDERED && existing != null ? existing.generation() : generation);
      if (existing != null) {
        // A reload changed the limit: a 429 pause this JVM holds (maybe only here, while Redis
        // is away, and still to be written back) is the route's, not the old limit's.
        created.keepPauseOf(existing, clock.nanoTime());
      }
      limiters.put(route, created);
      if (existing != null) {
        // One noted there between the copy and the put: from the put on, existing forwards them.
        created.keepPauseOf(existing, clock.nanoTime());
      }
      return created;
    }
  }

  /**
   * The routes of {@code previous} go on here: their counters (a reload resets none), and the 429
   * pauses it holds (maybe only in this JVM, its Redis being away, and still to be written back),
   * which are the routes', not that fleet's.
   */
  private void takeOver(FleetConnection previous) {
    long now = clock.nanoTime();
    for (FleetRateLimiter old : previous.limiters()) {
      FleetRateLimiter kept =
          new FleetRateLimiter(
              this, old.route(), old.limit(), Duration.ofNanos(old.maxPauseNanos()), old.metrics());
      kept.generation(old.generation());
      kept.keepPauseOf(old, now);
      limiters.put(old.route(), kept);
    }
    // From here a 429 seen by a call still under way on the previous fleet's limiters (a reload
    // leaves them to the calls that had them) comes here: the previous fleet, closed, would write
    // it nowhere, and this one's calls would not honour it.
    previous.successor = this;
    // A pause noted there between the copy above and the line before.
    for (FleetRateLimiter old : previous.limiters()) {
      FleetRateLimiter kept = limiters.get(old.route());
      if (kept != null) {
        kept.keepPauseOf(old, now);
      }
    }
  }

  /**
   * The limiter that now stands for {@code limiter}'s route: the latest of the route here, or in
   * the fleet a reload started in place of this one; {@code limiter} itself when it is that.
   */
  FleetRateLimiter latest(FleetRateLimiter limiter) {
    FleetConnection c = this;
    FleetConnection next;
    while ((next = c.successor) != null) {
      c = next;
    }
    FleetRateLimiter latest = c.limiters.get(limiter.route());
    return latest != null ? latest : limiter;
  }

  public State state() {
    return state;
  }

  /** The limiters handed out so far, the latest per route. */
  java.util.Collection<FleetRateLimiter> limiters() {
    return limiters.values();
  }

  /**
   * True while connected to Redis: acquisitions ask Redis (and fall back to the local share when a
   * call fails). Whether Redis then shares the limits is {@link #isShared()}.
   */
  public boolean isUp() {
    return state == State.UP;
  }

  /**
   * True while limits are shared in Redis: {@link #isUp() up}, and Redis runs the fleet's scripts.
   * False from an error by which Redis refuses them whatever the route (a renamed {@code EVALSHA},
   * a cluster's redirect, out of memory, writes stopped: each call then pays its round trip and
   * uses the local share) until a script of the same kind (a route's write, or the heartbeat)
   * succeeds again. An error of one route's keys (a wrong type) leaves it true: the other routes
   * are shared.
   */
  public boolean isShared() {
    return state == State.UP && callsRefused == null && heartbeatRefused == null;
  }

  /** Why Redis refuses the fleet's scripts while up, or null: for {@code explain}. */
  String refusal() {
    String calls = callsRefused;
    return calls != null ? calls : heartbeatRefused;
  }

  /** A route's script failed: an error that refuses every route's says the fleet is not shared. */
  void onCallError(FleetUnavailableException e) {
    if (e.kind() == FleetUnavailableException.Kind.REFUSED) {
      callsRefused = e.getMessage();
    }
  }

  /** A route's write (an acquisition, a pause) succeeded: Redis runs the fleet's scripts. */
  void onCallAnswered() {
    // Read first: a call that succeeds writes nothing shared (no cache line bounced between cores).
    if (callsRefused != null) {
      callsRefused = null;
    }
  }

  /** Instances with a heartbeat in the last three intervals, as last seen; 0 before the first. */
  public int liveInstances() {
    return liveInstances;
  }

  /** This JVM's id among the live instances. */
  public String instanceId() {
    return instanceId;
  }

  /** Times Redis became unreachable after being up. */
  public long outages() {
    synchronized (lock) {
      return outages;
    }
  }

  /** Times Redis had lost a script ({@code NOSCRIPT}, e.g. after {@code SCRIPT FLUSH}). */
  public long scriptReloads() {
    RedisGateway g = gateway;
    return g == null ? 0 : g.scriptReloads();
  }

  public FleetSettings settings() {
    return settings;
  }

  /**
   * Stops the thread (waiting a moment for it to leave the live count) and the connections. Closed
   * while not up (connecting, or reconnecting after an outage), the connect under way is cut off:
   * the thread has ended when this returns, whatever Redis does (a live count this JVM was still
   * in, from before an outage, expires by itself within three heartbeats). Closed while up, the
   * last writes and the leave share one deadline: this returns within {@code connectTimeout} + 4
   * {@code commandTimeout}, the thread ended, whatever Redis does (docs/fleet.md).
   */
  @Override
  public void close() {
    long command = settings.commandTimeout().toNanos();
    long start = System.nanoTime();
    // One wait for the whole close, as before: connectTimeout + 4 commandTimeouts. The thread's
    // steps (a heartbeat or a write under way, the queued pauses, the leave) each open a
    // connection when none is idle, a connect and a round trip each: in turn they could take
    // three connects and more, and the thread went on after close returned. They share this
    // deadline instead; the last commandTimeout is for the thread to end once what is still open
    // at the deadline is closed under it.
    long deadline = start + settings.connectTimeout().toNanos() + 3 * command;
    synchronized (lock) {
      if (state == State.CLOSED) {
        return;
      }
      closeDeadline = deadline;
      upWhenClosed = state == State.UP;
      state = State.CLOSED;
      woken = true;
      lock.notifyAll();
    }
    RedisGateway g = gateway;
    if (!upWhenClosed && g != null) {
      // The thread may be connecting: to a Redis that does not answer, each step of it waits a
      // whole timeout, more in all than the wait below, and it would go on after close returned.
      // Nothing is to be written while not up: its sockets are closed, and it ends at once.
      g.abort();
    }
    if (!joinUntil(deadline)) {
      return;
    }
    g = gateway;
    if (thread.isAlive() && g != null) {
      // A step that began before the close (a heartbeat, a pause's write, each with a connect of
      // its own) or one that no timeout bounds: what it waits on is closed, it fails at once.
      g.expire();
      joinUntil(deadline + command);
    }
  }

  /** Waits for the thread until {@code deadline}; false when interrupted (the flag kept). */
  private boolean joinUntil(long deadline) {
    long left = deadline - System.nanoTime();
    try {
      if (left > 0) {
        TimeUnit.NANOSECONDS.timedJoin(thread, left);
      }
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  Clock clock() {
    return clock;
  }

  /** The background thread, for tests that it ends. */
  Thread thread() {
    return thread;
  }

  /** The gateway while {@link #isUp()}; callers fall back when it is null. */
  RedisGateway gateway() {
    return gateway;
  }

  /** The share of a fleet limit this JVM takes while it cannot reach Redis. */
  double localShare() {
    return settings.shareWithout(liveInstances);
  }

  /** A failure seen by an acquisition: a connection-level one puts the fleet down. */
  void onFailure(FleetUnavailableException e) {
    if (!e.kind().connectionDown) {
      return;
    }
    synchronized (lock) {
      if (state != State.UP) {
        return;
      }
      state = State.DOWN;
      outages++;
      woken = true;
      lock.notifyAll();
    }
    reportOutage(e);
  }

  /** A 429 pause of {@code limiter} for the thread to write to Redis, off the caller's thread. */
  void writePause(FleetRateLimiter limiter) {
    pausesToWrite.add(limiter);
    synchronized (lock) {
      woken = true;
      lock.notifyAll();
    }
  }

  /**
   * A call that must not block found no idle connection of {@code g}: the thread opens one (the
   * call decided locally meanwhile), so that the next such call finds it.
   */
  void openWanted(RedisGateway g) {
    if (g.connectionWanted()) {
      synchronized (lock) {
        woken = true;
        lock.notifyAll();
      }
    }
  }

  /**
   * On the thread: a pause's write failed without an outage (every connection busy, Redis refusing
   * the script, an error of the route's key): no reconnect's write-back comes, so it is written
   * again at the next heartbeat turn ({@link #retryPauses}), not at once.
   */
  void retryPauseLater(FleetRateLimiter limiter) {
    pausesToRetry.add(limiter);
  }

  /** On the thread, at close: the failed writes go back in the queue, once each. */
  private void retryPauses() {
    FleetRateLimiter limiter;
    while ((limiter = pausesToRetry.poll()) != null) {
      if (limiter.retryPause()) {
        pausesToWrite.add(limiter);
      }
    }
  }

  /**
   * On the thread, at a heartbeat turn, after the heartbeat: the writes Redis refused before,
   * again, each at most once, within one {@code commandTimeout} in all (a write gets what is left
   * of it, and opens no connection; none starts with less than {@link #minWriteNanos} left); the
   * rest wait for the next turn. One round trip per route per turn, before the heartbeat, held it
   * up for as many routes as Redis kept refusing (each up to a commandTimeout while every
   * connection was busy): the live count expired meanwhile.
   */
  private void retryPausesWithin() {
    long end = System.nanoTime() + settings.commandTimeout().toNanos();
    // Those queued now only: a write refused again goes back in the queue for the next turn.
    int queued = pausesToRetry.size();
    FleetRateLimiter limiter;
    for (int i = 0; i < queued && state == State.UP; i++) {
      long left = end - System.nanoTime();
      RedisGateway g = gateway;
      // Too little left: Redis's normal answer would come after the socket's timeout, the write
      // would fail as busy and its healthy connection be closed (Redis may have applied it).
      if (left < minWriteNanos() || g == null || (limiter = pausesToRetry.poll()) == null) {
        return;
      }
      if (limiter.retryPause()) {
        limiter.writePause(g, left);
      }
    }
  }

  /**
   * On the thread, each turn: the pauses queued since it last looked, within one round trip's bound
   * ({@code commandTimeout}, plus {@code connectTimeout} for a connect) in all; the rest are
   * written from the next turn on, which comes at once, after the heartbeat if it is due. Drained
   * whole (those queued meanwhile too: a route's next 429 queues its write again once the earlier
   * one has begun), they held the heartbeat for a round trip per route while Redis answered slowly
   * or every connection was busy: the live count expired meanwhile. A pause that has passed by its
   * turn is not written ({@link FleetRateLimiter#writePause}).
   */
  private void writePausesWithin() {
    long end =
        System.nanoTime()
            + settings.commandTimeout().toNanos()
            + settings.connectTimeout().toNanos();
    boolean first = true;
    FleetRateLimiter limiter;
    while (state == State.UP) {
      RedisGateway g = gateway;
      long left = end - System.nanoTime();
      if (g == null) {
        return;
      }
      if (!first && left < minWriteNanos()) {
        // Too little left: Redis's normal answer would come after the socket's timeout, the write
        // fail as busy and its healthy connection be closed. The next turn writes the rest, now.
        if (!pausesToWrite.isEmpty()) {
          synchronized (lock) {
            woken = true;
            lock.notifyAll();
          }
        }
        return;
      }
      if ((limiter = pausesToWrite.poll()) == null) {
        return;
      }
      // The first has a round trip's own bound, the turn's (a connect when none is idle); the
      // others what it left, a connect only when one fits.
      limiter.writePause(g, first ? Long.MAX_VALUE : left);
      first = false;
    }
  }

  /**
   * The least time left of its turn a pause's write starts with: a quarter of {@code
   * commandTimeout}, ample for Redis's answer, never the 1 ms a socket timeout rounds up to.
   */
  private long minWriteNanos() {
    return settings.commandTimeout().toNanos() / 4;
  }

  /** On the thread: the connection a call that must not block lacked, if one is wanted. */
  private void openWanted() {
    RedisGateway g = gateway;
    if (g != null && state == State.UP) {
      g.openWanted();
    }
  }

  /**
   * On the thread, once closed: the pauses still queued (a 429 just before a shutdown or a reload)
   * are the provider's word for every JVM, so they go to Redis if it was up, best effort: writes
   * start within one command timeout, each bounded as any round trip, which {@link #close} waits
   * for with the leave's.
   */
  private void flushPauses() {
    RedisGateway g = gateway;
    if (!upWhenClosed || g == null) {
      return;
    }
    // A pause whose write Redis refused, waiting for the next heartbeat turn, is queued too: no
    // turn comes after this one.
    retryPauses();
    // A write starts only within the first commandTimeout, and within close's deadline: it gets
    // what is left of that, a connect only when one fits.
    long end = System.nanoTime() + settings.commandTimeout().toNanos();
    FleetRateLimiter limiter;
    while (System.nanoTime() - end < 0
        && closeDeadline - System.nanoTime() > 0
        && (limiter = pausesToWrite.poll()) != null) {
      limiter.writePause(g, closeDeadline - System.nanoTime());
    }
  }

  void report(String line) {
    try {
      log.accept(line);
    } catch (RuntimeException ignored) {
      // nowhere left to report to
    }
  }

  /** Connection attempts that failed since start (the first, and every reconnect). */
  long failedConnects() {
    synchronized (lock) {
      return failedConnects;
    }
  }

  private void connectFailed(FleetUnavailableException e) {
    synchronized (lock) {
      failedConnects++;
      if (state == State.CONNECTING) {
        state = State.DOWN;
      }
    }
    reportOutage(e);
  }

  private void reportOutage(FleetUnavailableException e) {
    synchronized (lock) {
      if (outageReported || state == State.CLOSED) {
        return;
      }
      outageReported = true;
    }
    String where = "retry-agent: fleet: Redis at " + settings.redis();
    String fallback =
        "fleet rate limits fall back to this JVM's share (" + shareText() + " of each limit)";
    if (e.kind() == FleetUnavailableException.Kind.AUTH && e.getMessage().contains("NOPERM")) {
      // The credentials were accepted; the user's ACL refuses a command the fleet runs.
      report(
          where
              + " refused a command to the fleet's user ("
              + e.getMessage()
              + "): its ACL must allow PING, EVALSHA, EVAL and CLIENT SETNAME (SELECT too with a"
              + " database) on the keys under "
              + settings.keyPrefix()
              + ":*; "
              + fallback
              + " until it does");
    } else if (e.kind() == FleetUnavailableException.Kind.AUTH) {
      report(
          where
              + " refused the credentials ("
              + e.getMessage()
              + "): check the user and password in fleet.redis.url; "
              + fallback
              + " until it accepts them");
    } else if (e.kind() == FleetUnavailableException.Kind.TIMEOUT) {
      report(
          where
              + " is unreachable (no answer within connectTimeout "
              + settings.connectTimeout().toMillis()
              + "ms / commandTimeout "
              + settings.commandTimeout().toMillis()
              + "ms: "
              + e.getMessage()
              + "); "
              + fallback
              + " until it is back");
    } else {
      report(where + " is unreachable (" + e.getMessage() + "); " + fallback + " until it is back");
    }
  }

  private String shareText() {
    int live = liveInstances;
    if (settings.fallbackPerLiveInstance() && live > 0) {
      return "1/" + live + ", the live instances last seen";
    }
    double percent = Math.round(settings.fallbackShare() * 1000) / 10.0;
    return (percent == Math.rint(percent)
            ? Long.toString((long) percent)
            : Double.toString(percent))
        + "%";
  }

  /** One attempt to connect: a ping, a heartbeat, pauses written back; then UP. */
  private void connect() throws FleetUnavailableException {
    RedisGateway g = gateway;
    if (g == null) {
      g = new RedisGateway(settings, clock);
      gateway = g;
      if (state == State.CLOSED) {
        // close() may have looked for a gateway to abort before this one was set.
        g.abort();
        return;
      }
    }
    g.dropIdle();
    g.ping();
    try {
      beat(g);
    } catch (FleetUnavailableException e) {
      if (e.kind().connectionDown) {
        throw e;
      }
      // The live count's key only (one of the wrong type, say): the limits are shared without it.
      reportHeartbeatError(e);
    }
    for (FleetRateLimiter limiter : new ArrayList<>(limiters.values())) {
      try {
        limiter.writeBackPause(g);
      } catch (FleetUnavailableException e) {
        if (e.kind().connectionDown) {
          throw e;
        }
        // This route's keys only (one of the wrong type, say): the route keeps its pause here
        // and its local share, as its acquisitions will; the other routes are shared.
        limiter.reportCallError(e);
      }
    }
    g.warmUp(WARM_CONNECTIONS);
    // Its sockets are the callers' from here: a close no longer aborts them, it writes and leaves.
    g.connected();
    boolean wasReported;
    synchronized (lock) {
      if (state == State.CLOSED) {
        return;
      }
      state = State.UP;
      wasReported = outageReported;
      outageReported = false;
    }
    // A 429 from the write-back above until the line before found the fleet not up, and queued no
    // write: it would reach Redis at the next outage's write-back, if ever. From here on each is
    // queued as it comes; one before is queued now (a limiter made meanwhile included).
    for (FleetRateLimiter limiter : limiters.values()) {
      limiter.writeIfUnwritten();
    }
    String refused = heartbeatRefused;
    if (wasReported && refused != null) {
      // Back, but its heartbeat's script refused (said once, maybe before the outage): "shared
      // again" would be untrue.
      report(
          "retry-agent: fleet: Redis at "
              + settings.redis()
              + " answers again but refuses the fleet's scripts ("
              + refused
              + "); fleet rate limits stay at this JVM's share until it runs them");
    } else if (wasReported) {
      report(
          "retry-agent: fleet: Redis at "
              + settings.redis()
              + " answers again; fleet rate limits are shared again ("
              + liveInstances
              + " live instances)");
    }
  }

  private void beat(RedisGateway g) throws FleetUnavailableException {
    // On the connection idle longest: none idles until Redis closes it under a call.
    g.rotateIdle();
    long ttl = HEARTBEATS_TO_LIVE * settings.heartbeatInterval().toMillis();
    long[] reply;
    try {
      reply =
          g.eval(
              Scripts.HEARTBEAT, instancesKey, Arrays.asList(instanceId, Long.toString(ttl), "1"));
    } catch (FleetUnavailableException e) {
      if (e.kind() == FleetUnavailableException.Kind.REFUSED) {
        heartbeatRefused = e.getMessage();
      }
      throw e;
    }
    liveInstances = (int) reply[0];
    heartbeatRefused = null;
    heartbeatErrorReported = false;
  }

  /** An error of the heartbeat's script (not of the connection) is said once, until it works. */
  private void reportHeartbeatError(FleetUnavailableException e) {
    if (e.kind().connectionDown
        || e.kind() == FleetUnavailableException.Kind.BUSY
        || heartbeatErrorReported) {
      return;
    }
    heartbeatErrorReported = true;
    if (e.kind() == FleetUnavailableException.Kind.REFUSED) {
      report(
          "retry-agent: fleet: Redis at "
              + settings.redis()
              + " refuses the fleet's scripts ("
              + e.getMessage()
              + "); fleet rate limits fall back to this JVM's share ("
              + shareText()
              + " of each limit) until it runs them");
      return;
    }
    report(
        "retry-agent: fleet: Redis answered the heartbeat (key "
            + instancesKey.get(0)
            + ") with an error ("
            + e.getMessage()
            + "); fleet rate limits are still shared, the live instances not counted meanwhile");
  }

  private String heartbeatTtl() {
    return Long.toString(HEARTBEATS_TO_LIVE * settings.heartbeatInterval().toMillis());
  }

  private void leave() {
    RedisGateway g = gateway;
    if (g == null) {
      return;
    }
    try {
      long left = closeDeadline - System.nanoTime();
      if (liveInstances > 0 && left > 0) {
        // Within close's deadline, as the pauses' writes.
        g.eval(
            Scripts.HEARTBEAT, instancesKey, Arrays.asList(instanceId, heartbeatTtl(), "0"), left);
      }
    } catch (FleetUnavailableException ignored) {
      // the heartbeat expires by itself
    } finally {
      g.close();
    }
  }

  /** Waits up to {@code millis} or until woken (an outage, a close). */
  private void pause(long millis) {
    synchronized (lock) {
      long end = System.nanoTime() + millis * 1_000_000;
      while (!woken && state != State.CLOSED) {
        long left = (end - System.nanoTime()) / 1_000_000;
        if (left <= 0) {
          break;
        }
        try {
          lock.wait(left);
        } catch (InterruptedException e) {
          // Only close() ends this thread; an interrupt from elsewhere is not ours to obey.
          Thread.interrupted();
        }
      }
      woken = false;
    }
  }

  /**
   * Waits {@code millis} before a reconnect, or until closed: a wake for the outage that led here
   * (it may have come while the thread was busy, not waiting) does not cut it short.
   */
  private void backOff(long millis) {
    synchronized (lock) {
      woken = false;
    }
    pause(millis);
  }

  /**
   * Tests only (null otherwise): the randomness of {@link #spread}, so a test can tell the first
   * reconnect's wait.
   */
  volatile java.util.Random random;

  /** Uniformly 0..{@code millis}: when the first reconnect after a steady outage comes. */
  long spread(long millis) {
    java.util.Random r = random;
    double d = r == null ? ThreadLocalRandom.current().nextDouble() : r.nextDouble();
    return Math.min(millis, (long) (d * (millis + 1)));
  }

  /** The background thread's work, a class rather than a lambda: start() may run in premain. */
  private static final class Loop implements Runnable {
    private final FleetConnection c;

    Loop(FleetConnection c) {
      this.c = c;
    }

    @Override
    public void run() {
      long backoff = c.settings.reconnectMin().toMillis();
      long interval = c.settings.heartbeatInterval().toNanos();
      long nextBeat = System.nanoTime();
      // Set by a connect that made the fleet UP, to its time: the outage that ends it decides how
      // soon the next connect comes.
      boolean wasUp = false;
      long upSince = 0;
      while (true) {
        State s = c.state;
        if (s == State.CLOSED) {
          break;
        }
        if (s != State.UP && wasUp) {
          wasUp = false;
          if (System.nanoTime() - upSince - FLAP_NANOS < 0) {
            // Gone again soon after it answered (a Redis whose latency hovers around
            // commandTimeout, a proxy that accepts and then drops): reconnecting at once, with a
            // fresh backoff, cost a call a whole commandTimeout, Redis new connections and the log
            // two lines per outage, as often as calls came. The backoff goes on from where it was.
            c.backOff(jittered(backoff));
            backoff = Math.min(c.settings.reconnectMax().toMillis(), backoff * 2);
            continue;
          }
          // Up for a while: this outage is news, reconnect soon (a Redis restarted soon after an
          // earlier outage is shared again as soon as it answers), with a fresh backoff. Soon, not
          // at once: a Redis restart is every JVM's outage at the same moment, and all of them
          // reconnecting in the same instant was a thundering herd of connects, AUTHs and warm-ups.
          // Spread over 0..reconnectMin.
          backoff = c.settings.reconnectMin().toMillis();
          long first = c.spread(backoff);
          if (first > 0) {
            c.backOff(first);
            continue;
          }
        }
        if (s == State.UP) {
          long untilBeat = nextBeat - System.nanoTime();
          if (untilBeat > 0) {
            // Woken early by a 429 pause to write, an outage or a close.
            c.pause((untilBeat + 999_999) / 1_000_000);
          }
          if (c.state != State.UP) {
            continue;
          }
          try {
            c.writePausesWithin();
            long untilDue = nextBeat - System.nanoTime();
            if (untilDue > 0) {
              // A connection a shared thread lacked: opened now if its open (connectTimeout in
              // all) ends before the heartbeat is due, else right after the heartbeat.
              if (untilDue > c.settings.connectTimeout().toNanos()) {
                c.openWanted();
              }
              continue;
            }
            nextBeat = System.nanoTime() + interval;
            try {
              c.beat(c.gateway);
            } catch (FleetUnavailableException e) {
              c.onFailure(e);
              c.reportHeartbeatError(e);
            }
            // Once per heartbeat, after it (whether it failed or not: a live count's key of the
            // wrong type must not stop them), and bounded: a write Redis keeps refusing costs a
            // round trip per interval, never the heartbeat's time.
            c.retryPausesWithin();
            c.openWanted();
          } catch (RuntimeException | Error e) {
            // A reply no Redis gives (a proxy's), a broken client: were it to end this thread,
            // nothing would reconnect for the JVM's life. An outage instead: said once (the class
            // only, no message that could hold a secret), the local share, a reconnect.
            c.onFailure(
                new FleetUnavailableException(
                    FleetUnavailableException.Kind.UNREACHABLE,
                    "unexpected " + e.getClass().getName()));
          }
          continue;
        }
        try {
          c.connect();
          // The backoff is not reset here: only an outage after FLAP_NANOS of being up does.
          wasUp = c.state == State.UP;
          upSince = System.nanoTime();
          nextBeat = upSince + interval;
        } catch (FleetUnavailableException e) {
          c.connectFailed(e);
          c.pause(jittered(backoff));
          backoff = Math.min(c.settings.reconnectMax().toMillis(), backoff * 2);
        } catch (RuntimeException | Error e) {
          // A broken client jar, a reply no Redis gives, or the like: the fleet stays local
          // rather than the host breaking, and this thread goes on trying.
          c.connectFailed(
              new FleetUnavailableException(
                  FleetUnavailableException.Kind.ERROR, e.getClass().getName()));
          c.pause(c.settings.reconnectMax().toMillis());
        }
      }
      c.flushPauses();
      c.leave();
    }

    /**
     * Between half and all of {@code millis}, so a fleet that lost Redis does not return at once.
     */
    private static long jittered(long millis) {
      return millis / 2 + ThreadLocalRandom.current().nextLong(millis / 2 + 1);
    }
  }
}
