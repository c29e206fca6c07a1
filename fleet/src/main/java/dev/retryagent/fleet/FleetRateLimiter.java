package dev.retryagent.fleet;

import dev.retryagent.config.RedisUrl;
import dev.retryagent.engine.PermitLimiter;
import dev.retryagent.internal.engine.RateLimiter;
import dev.retryagent.internal.observe.Sanitizer;
import dev.retryagent.policy.RateLimitPolicy;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * One route's rate limit and 429 pause, shared by every JVM of the fleet through Redis; the
 * fleet-wide counterpart of the engine's per-host {@link RateLimiter}, with the same contract so
 * that it slots in beside it: {@link #reserve} is {@link RateLimiter#reserve}, {@link #pauseFor}
 * replaces {@link RateLimiter#pauseUntil}, {@link #pauseRemainingNanos} is the same.
 *
 * <h2>Guarantees</h2>
 *
 * <ul>
 *   <li>While Redis is up, permits come from one GCRA in Redis, timed by Redis's clock: in any
 *       interval of length {@code t}, the fleet is given at most {@code burst + perSecond * t}
 *       permits, plus the leases outstanding at its start (at most {@link FleetSettings#leaseFor}
 *       minus one per JVM; none below 100/s by default). Waiting callers are served in the order
 *       they asked, whichever JVM they are in.
 *   <li>A 429 pause set by any JVM holds for every JVM's acquisitions until it passes; a longer one
 *       extends it, a shorter one never shortens it; none is longer than {@code retryAfter.max}.
 *   <li>Redis is never a reason for a call to fail: an acquisition waits for it at most the command
 *       timeout (plus the connect timeout when it opens a connection), its wait for a busy
 *       connection included, never past the call's deadline, and without an answer the local share
 *       ({@link FleetSettings#shareWithout}) decides, as the per-host limiter would, honouring
 *       every pause this JVM knows of. On a thread of many calls' work ({@link
 *       dev.retryagent.engine.SharedThreads}) it waits at most the round trip: an idle connection
 *       or the local share, never a connect nor a wait for a connection.
 * </ul>
 *
 * <p>Thread-safe; no lock is held during a round trip to Redis.
 */
public final class FleetRateLimiter implements PermitLimiter {
  /** Returned by {@link #reserve} when the caller must not wait that long. */
  public static final long REJECTED = RateLimiter.REJECTED;

  /**
   * How long leased permits stay usable: past that they are dropped (the fleet pause or the limit
   * may have changed since), so a lease never carries a burst from one second into a later one.
   */
  static final long LEASE_TTL_NANOS = 1_000_000_000L;

  /**
   * How recent a word from Redis on the route's pause spares a waiter's look ({@link
   * #pauseAfterWaitNanos}): about what a pause takes to reach Redis from the JVM whose 429 set it
   * (its fleet's thread writes it), the lag every JVM's view of a pause has anyway.
   */
  static final long HEARD_FRESH_NANOS = 10_000_000L;

  private final FleetConnection fleet;
  private final String route;
  private final RateLimitPolicy limit;
  private final long maxPauseNanos;
  private final int lease;
  private final List<String> keys;
  private final List<String> pauseKey;
  private final String intervalMicros;
  private final String burst;
  private final FleetMetrics metrics;

  // Guarded by this.
  private boolean paused;
  private long pausedUntilNanos;
  private int leased;
  private long leaseExpiresNanos;
  private boolean leaseAsked;
  private RateLimiter local;
  private double localShare;
  private boolean errorReported;
  private boolean pauseToWrite;
  // A pause noted while the fleet was not up, not yet in a write-back: the connect writes back
  // before it is up, so one noted after its write-back and before it was up is written once up.
  private boolean pauseUnwritten;
  // A write Redis failed while up (busy, refused, an error of the route's key): the fleet's thread
  // writes it again at its next heartbeat turn, once at a time.
  private boolean pauseRetry;
  // When this JVM last heard Redis's pause of the route (an acquisition's reply, a look after a
  // wait), this JVM's nanoTime read before it asked; valid once heard is set.
  private boolean heard;
  private long heardNanos;
  // The latest pause deadline in Redis (µs of Redis's clock) this JVM took on, 0 for none: held
  // for at most its retryAfter.max from when it learned of it, and never again after (the scripts
  // pass over a deadline no later than this one). Otherwise a JVM whose retryAfter.max is shorter
  // than the JVM that set the pause would find it in Redis again after each wait, and wait all of
  // it, its own bound at a time.
  private long takenDeadlineMicros;

  // The latest configuration (the engine's generation) that asked for this limiter: an older one
  // never replaces it (FleetConnection.limiter). Written under the connection's limiters lock.
  private volatile long generation = Long.MIN_VALUE;

  /** Writes of a pause the fleet's thread has ended (answered or failed): for tests. */
  private volatile long pauseWrites;

  /**
   * @param metrics the route's counters: a reload's new limiter goes on with its predecessor's (a
   *     reload never resets a counter)
   */
  FleetRateLimiter(
      FleetConnection fleet,
      String route,
      RateLimitPolicy limit,
      Duration retryAfterMax,
      FleetMetrics metrics) {
    this.fleet = fleet;
    this.metrics = metrics;
    this.route = route;
    this.limit = limit;
    this.maxPauseNanos = retryAfterMax.toNanos();
    this.lease = fleet.settings().leaseFor(limit);
    String prefix = fleet.settings().routeKey(route) + ":";
    this.keys = Arrays.asList(prefix + "gcra", prefix + "pause");
    this.pauseKey = Collections.singletonList(prefix + "pause");
    this.intervalMicros = Double.toString(1e6 / limit.perSecond());
    this.burst = Integer.toString(limit.burst());
  }

  public String route() {
    return route;
  }

  /** The fleet-wide limit: {@code perSecond} and {@code burst} across every JVM. */
  public RateLimitPolicy limit() {
    return limit;
  }

  public FleetMetrics metrics() {
    return metrics;
  }

  /**
   * Reserves one permit of the fleet limit.
   *
   * @param nowNanos this JVM's {@link dev.retryagent.engine.Clock#nanoTime()}
   * @param maxPermitWaitNanos the longest wait for a permit the caller accepts ({@code maxWait}),
   *     counted from the end of a pause
   * @param maxTotalWaitNanos the longest wait in all the caller accepts (its deadline)
   * @return nanoseconds to wait before the attempt (0 = go now), or {@link #REJECTED}
   */
  @Override
  public long reserve(long nowNanos, long maxPermitWaitNanos, long maxTotalWaitNanos) {
    return reserve(nowNanos, maxPermitWaitNanos, maxTotalWaitNanos, true);
  }

  /**
   * {@link #reserve(long, long, long)}; {@code mayBlock} false on a thread of many calls' work (the
   * engine's scheduler, a client's I/O thread): the round trip goes only on an idle connection,
   * never waiting for one another call holds nor opening one, so that a slow or silent Redis holds
   * that thread, and the other calls' work it runs, for at most the round trip; without an idle
   * connection the local share decides, as when every connection is busy.
   */
  @Override
  public long reserve(
      long nowNanos, long maxPermitWaitNanos, long maxTotalWaitNanos, boolean mayBlock) {
    FleetRateLimiter latest = fleet.latest(this);
    if (latest != this) {
      // A call under way through a reload, retrying on the limiter it had: its permits are the
      // route's as the reload left it (this one's fleet may be closed: a fresh local bucket beside
      // the route's, blind to the pauses its calls see since).
      return latest.reserve(nowNanos, maxPermitWaitNanos, maxTotalWaitNanos, mayBlock);
    }
    long knownPause;
    long taken;
    int wanted = 1;
    synchronized (this) {
      taken = takenDeadlineMicros;
      knownPause = pauseLeft(nowNanos);
      if (knownPause > maxTotalWaitNanos) {
        metrics.refused(true);
        return REJECTED;
      }
      if (knownPause == 0 && leased > 0) {
        if (nowNanos - leaseExpiresNanos < 0) {
          leased--;
          metrics.granted(false, false, true);
          return 0;
        }
        leased = 0;
      }
      // One lease asked for at a time, and only with none left: a JVM never holds more than
      // lease - 1 permits, the bound the README states.
      if (lease > 1 && knownPause == 0 && !leaseAsked) {
        leaseAsked = true;
        wanted = lease;
      }
    }
    try {
      RedisGateway gateway = fleet.gateway();
      // The round trip's time is the caller's too: the wait then starts from the reply, and the
      // deadline and maxWait it must end within were counted from nowNanos (maxWait from the end
      // of a pause, so only the round trip's time past the pause counts against it).
      long spent = 0;
      if (fleet.isUp() && gateway != null) {
        long sent = fleet.clock().nanoTime();
        try {
          metrics.redisCall();
          long[] reply =
              gateway.eval(
                  Scripts.ACQUIRE,
                  keys,
                  Arrays.asList(
                      intervalMicros,
                      burst,
                      Integer.toString(wanted),
                      micros(maxPermitWaitNanos),
                      micros(maxTotalWaitNanos),
                      micros(knownPause),
                      micros(maxPauseNanos),
                      Long.toString(taken)),
                  // The deadline bounds the round trip too: the call would have failed then.
                  maxTotalWaitNanos,
                  mayBlock);
          fleet.onCallAnswered();
          spent = Math.max(0, fleet.clock().nanoTime() - sent);
          return onReply(nowNanos, reply, maxPermitWaitNanos - spent, maxTotalWaitNanos - spent);
        } catch (FleetUnavailableException e) {
          fleet.onFailure(e);
          reportCallError(e);
          if (!mayBlock) {
            fleet.openWanted(gateway);
          }
        }
        spent = Math.max(0, fleet.clock().nanoTime() - sent);
      }
      return reserveLocally(
          nowNanos + spent,
          Math.max(0, maxPermitWaitNanos - Math.max(0, spent - knownPause)),
          Math.max(0, maxTotalWaitNanos - spent));
    } finally {
      if (wanted > 1) {
        synchronized (this) {
          leaseAsked = false;
        }
      }
    }
  }

  /**
   * Pauses the route in every JVM for {@code pauseNanos} from now (a 429's {@code Retry-After}), at
   * most {@code retryAfter.max}; extend-only. This JVM honours it at once even when Redis is
   * unreachable; the other JVMs once the fleet's thread has written it to Redis (at once, or when
   * Redis is back).
   *
   * @return nanoseconds left of the route's pause as this JVM knows it
   */
  public long pauseFor(long nowNanos, long pauseNanos) {
    long d = Math.min(pauseNanos, maxPauseNanos);
    if (d <= 0) {
      return pauseRemainingNanos(nowNanos);
    }
    FleetRateLimiter latest = fleet.latest(this);
    if (latest != this) {
      // A call that had this limiter before a reload replaced it: honoured here for that call, and
      // by the route's limiter now, which counts it and writes it to Redis (this one's fleet may
      // be closed, and a replaced limiter's pause would not be written back after an outage).
      synchronized (this) {
        notePause(nowNanos + d);
      }
      latest.pauseFor(nowNanos, pauseNanos);
      return pauseRemainingNanos(nowNanos);
    }
    // Counted here, each 429 that set or extended the pause as this JVM knows it: whether Redis is
    // up or not, and however many the thread then writes in one round trip (docs/fleet.md).
    if (noteAndWrite(nowNanos, d)) {
      metrics.pauseSet();
    }
    FleetRateLimiter replacedBy = fleet.latest(this);
    if (replacedBy != this) {
      // A reload replaced this limiter between the look above and the note: the route's new one
      // may have copied this one's pause before it was noted (keepPauseOf), and then neither
      // honoured it nor, the fleet not up, had it written (a connect writes back the route's
      // limiters only). Handed on as a replaced limiter's 429 is; counted once, here.
      replacedBy.handOn(nowNanos, pauseNanos);
    }
    return pauseRemainingNanos(nowNanos);
  }

  /**
   * Notes a pause of {@code d} from {@code nowNanos} here and has it written to Redis: by the
   * fleet's thread while up, else by the next connect's write-back. Honoured here already.
   *
   * @return whether it set or extended the pause as this limiter knew it
   */
  private boolean noteAndWrite(long nowNanos, long d) {
    boolean moved;
    boolean queue = false;
    synchronized (this) {
      moved = notePause(nowNanos + d);
      if (fleet.isUp() && fleet.gateway() != null) {
        // Written to Redis by the fleet's thread: the engine calls this on the application's
        // thread as the 429 comes back to it, which must not wait for a round trip to Redis (the
        // application sees the 429 when it would without the agent).
        queue = !pauseToWrite;
        pauseToWrite = true;
      } else if (moved) {
        pauseUnwritten = true;
      }
    }
    if (queue) {
      fleet.writePause(this);
    }
    return moved;
  }

  /**
   * A 429's pause that a limiter this one replaced noted and counted after it was replaced ({@link
   * #pauseFor}): this one's too, and on to the route's latest if a reload replaced this one since.
   */
  private void handOn(long nowNanos, long pauseNanos) {
    noteAndWrite(nowNanos, Math.min(pauseNanos, maxPauseNanos));
    FleetRateLimiter latest = fleet.latest(this);
    if (latest != this) {
      latest.handOn(nowNanos, pauseNanos);
    }
  }

  /**
   * On the fleet's thread: writes the pause {@link #pauseFor} left to write (the route's pause as
   * this JVM knows it, extend-only in Redis), and learns Redis's, maybe another JVM's longer one.
   */
  void writePause(RedisGateway gateway) {
    writePause(gateway, Long.MAX_VALUE);
  }

  /**
   * {@link #writePause(RedisGateway)} within {@code budgetNanos}: the round trip, and a connect
   * only when it fits in it ({@link RedisGateway#eval(Scripts.Script, List, List, long)}).
   */
  void writePause(RedisGateway gateway, long budgetNanos) {
    synchronized (this) {
      pauseToWrite = false;
      // The pause as this JVM knows it, read below, is what goes.
      pauseUnwritten = false;
    }
    long now = fleet.clock().nanoTime();
    long left = pauseRemainingNanos(now);
    try {
      if (left > 0) {
        metrics.redisCall();
        long[] reply =
            gateway.eval(
                Scripts.PAUSE,
                pauseKey,
                Arrays.asList(micros(left), micros(maxPauseNanos)),
                budgetNanos);
        fleet.onCallAnswered();
        synchronized (this) {
          // Redis's deadline may be another JVM's, longer than this one's retryAfter.max allows.
          takePause(now, reply[1], reply[2]);
        }
      }
    } catch (FleetUnavailableException e) {
      fleet.onFailure(e);
      reportCallError(e);
      boolean retry = false;
      synchronized (this) {
        if (e.kind().connectionDown) {
          // The reconnect's write-back writes it.
          pauseUnwritten = true;
        } else if (!pauseToWrite && !pauseRetry) {
          // Not an outage, so no write-back would: dropped, the other JVMs would never hear of
          // it. Again at the next heartbeat turn, not at once (Redis refusing every write must
          // not keep the thread looping), what is left of it then (never longer than asked).
          pauseRetry = true;
          retry = true;
        }
      }
      if (retry) {
        fleet.retryPauseLater(this);
      }
    } finally {
      pauseWrites++; // only the fleet's thread writes
    }
  }

  /** Writes of a pause to Redis the fleet's thread has ended, answered or failed (for tests). */
  long pauseWrites() {
    return pauseWrites;
  }

  /** {@link PermitLimiter}'s name for {@link #pauseFor}: the engine's 429 pause. */
  @Override
  public void pause(long nowNanos, long pauseNanos) {
    pauseFor(nowNanos, pauseNanos);
  }

  /**
   * Nanoseconds left of the route's pause as this JVM last saw it (from Redis or its own), or 0; at
   * most {@code retryAfter.max}. On a limiter a reload replaced, the route's latest pause too.
   */
  @Override
  public long pauseRemainingNanos(long nowNanos) {
    long own;
    synchronized (this) {
      // The fleet's thread notes Redis's pause from its own clock, which may be ahead of a
      // caller's nowNanos (read before the call): never more than a pause may be from any time.
      own = Math.min(pauseLeft(nowNanos), maxPauseNanos);
    }
    FleetRateLimiter latest = fleet.latest(this);
    return latest == this ? own : Math.max(own, latest.pauseRemainingNanos(nowNanos));
  }

  /**
   * The look after a caller's wait for a permit: the pause this JVM knows of, or, when it knows of
   * none and has not heard Redis's pause of the route within {@link #HEARD_FRESH_NANOS}, Redis's
   * (one round trip, read only, bounded as an acquisition's, within {@code maxLookNanos}): a pause
   * another JVM wrote during the wait holds this attempt too. Only a caller that waited asks, so a
   * permit given at once costs no more round trips; concurrent waiters of this JVM share one look
   * in that time. Without an answer (Redis down, busy, a refusal) the pauses this JVM knows decide,
   * as in the local share.
   */
  @Override
  public long pauseAfterWaitNanos(long nowNanos, long maxLookNanos) {
    return pauseAfterWaitNanos(nowNanos, maxLookNanos, true);
  }

  /**
   * {@link #pauseAfterWaitNanos(long, long)}; {@code mayBlock} as {@link #reserve(long, long, long,
   * boolean)}'s: false, the look goes only on an idle connection, else the pauses this JVM knows
   * decide.
   */
  @Override
  public long pauseAfterWaitNanos(long nowNanos, long maxLookNanos, boolean mayBlock) {
    long known = pauseRemainingNanos(nowNanos);
    FleetRateLimiter latest = fleet.latest(this);
    if (known > 0 || latest != this) {
      // A replaced limiter's call looks through the route's (its own fleet may be closed).
      return latest == this
          ? known
          : Math.max(known, latest.pauseAfterWaitNanos(nowNanos, maxLookNanos, mayBlock));
    }
    synchronized (this) {
      if (heard && nowNanos - heardNanos < HEARD_FRESH_NANOS) {
        return 0;
      }
    }
    RedisGateway gateway = fleet.gateway();
    if (!fleet.isUp() || gateway == null) {
      return 0;
    }
    try {
      metrics.redisCall();
      long[] reply =
          gateway.eval(
              Scripts.PAUSE_LEFT,
              pauseKey,
              Collections.<String>emptyList(),
              maxLookNanos,
              mayBlock);
      synchronized (this) {
        heardFrom(nowNanos);
        takePause(nowNanos, reply[0], reply[1]);
      }
    } catch (FleetUnavailableException e) {
      fleet.onFailure(e);
      reportCallError(e);
      if (!mayBlock) {
        fleet.openWanted(gateway);
      }
    }
    return pauseRemainingNanos(nowNanos);
  }

  /** Redis's pause of the route was heard in a reply to a request sent at {@code sentNanos}. */
  private void heardFrom(long sentNanos) {
    if (!heard || sentNanos - heardNanos > 0) {
      heard = true;
      heardNanos = sentNanos;
    }
  }

  /** For {@code explain}: the limit, where it is shared, and how Redis is. */
  public String describe() {
    String shared =
        "fleet limit "
            + trim(limit.perSecond())
            + "/s, burst "
            + limit.burst()
            + ", shared in "
            + fleet.settings().redis()
            + " under "
            + fleet.settings().routeKey(route);
    String refusal = fleet.refusal();
    if (fleet.isUp() && refusal == null) {
      return shared + " (Redis up, " + fleet.liveInstances() + " live instances)";
    }
    if (fleet.isUp()) {
      // Up, but every call fails over to the local share: saying "up" would hide it.
      return shared
          + " (Redis up but refusing the fleet's scripts: "
          + refusal
          + "; this JVM limits itself to "
          + trim(limit.perSecond() * fleet.localShare())
          + "/s)";
    }
    return shared
        + " (Redis "
        + fleet.state().name().toLowerCase(java.util.Locale.ROOT)
        + ": this JVM limits itself to "
        + trim(limit.perSecond() * fleet.localShare())
        + "/s)";
  }

  long maxPauseNanos() {
    return maxPauseNanos;
  }

  long generation() {
    return generation;
  }

  void generation(long generation) {
    this.generation = generation;
  }

  /** After a reload: the pause {@code previous} (this route's former limiter) knows holds here. */
  void keepPauseOf(FleetRateLimiter previous, long nowNanos) {
    long left = previous.pauseRemainingNanos(nowNanos);
    long taken = 0;
    // A deadline is a time of its Redis's clock, for its pause key: a reload onto another server,
    // database or key prefix starts fresh, or a new pause there ending before the old deadline
    // would be passed over as waited.
    if (sameStore(previous)) {
      synchronized (previous) {
        taken = previous.takenDeadlineMicros;
      }
    }
    synchronized (this) {
      // A deadline the previous limiter waited out is not waited again under the new one.
      takenDeadlineMicros = Math.max(takenDeadlineMicros, taken);
      if (left > 0 && notePause(nowNanos + left)) {
        // Maybe only in this JVM (its Redis away, or another Redis): the write-back of a connect
        // under way may have passed this limiter already.
        pauseUnwritten = true;
      }
    }
  }

  /** Whether {@code other}'s pause deadlines are in this one's Redis, under this one's key. */
  private boolean sameStore(FleetRateLimiter other) {
    RedisUrl mine = fleet.settings().redis();
    RedisUrl theirs = other.fleet.settings().redis();
    // Credentials and TLS may change with the store the same; another name for the same host is
    // taken as another store (it starts fresh: at most one more wait of this JVM's own bound).
    return pauseKey.equals(other.pauseKey)
        && mine.host().equalsIgnoreCase(theirs.host())
        && mine.port() == theirs.port()
        && mine.database() == theirs.database();
  }

  /** After a reconnect: a pause this JVM set or saw while Redis was away goes back to Redis. */
  void writeBackPause(RedisGateway gateway) throws FleetUnavailableException {
    synchronized (this) {
      pauseUnwritten = false;
    }
    long left = pauseRemainingNanos(fleet.clock().nanoTime());
    if (left > 0) {
      try {
        gateway.eval(Scripts.PAUSE, pauseKey, Arrays.asList(micros(left), micros(maxPauseNanos)));
      } catch (FleetUnavailableException e) {
        synchronized (this) {
          // Still to write: by the next write-back, or once up (writeIfUnwritten).
          pauseUnwritten = true;
        }
        throw e;
      }
      fleet.onCallAnswered();
    }
  }

  /** At a heartbeat turn: queues again the write of a pause {@link #writePause} failed. */
  boolean retryPause() {
    synchronized (this) {
      pauseRetry = false;
      if (pauseToWrite) {
        return false; // queued already, by a 429 since
      }
      pauseToWrite = true;
      return true;
    }
  }

  /**
   * Once the fleet is up: queues the write of a pause noted while it was not, after its connect's
   * write-back had passed this limiter (a 429 then found the fleet not up, so queued nothing).
   */
  void writeIfUnwritten() {
    boolean queue;
    synchronized (this) {
      if (!pauseUnwritten) {
        return;
      }
      pauseUnwritten = false;
      queue = !pauseToWrite;
      pauseToWrite = true;
    }
    if (queue) {
      fleet.writePause(this);
    }
  }

  /**
   * @param maxPermitWaitNanos what the round trip left of the caller's {@code maxWait}
   * @param maxWaitNanos what the round trip left of the caller's deadline
   */
  private synchronized long onReply(
      long nowNanos, long[] reply, long maxPermitWaitNanos, long maxWaitNanos) {
    // The local share is kept: a bucket unused for a while is full again by itself, while calls
    // that fall back between answers (every connection busy, a flapping Redis) must not each
    // find a fresh burst.
    errorReported = false;
    heardFrom(nowNanos);
    long granted = reply[0];
    long waitNanos = reply[1] * 1000;
    long pauseNanos = reply[2] * 1000;
    takenDeadlineMicros = Math.max(takenDeadlineMicros, reply[3]);
    boolean paused = pauseNanos > 0;
    if (paused) {
      notePause(nowNanos + pauseNanos);
    }
    // Redis weighed the wait against the deadline and maxWait as the caller asked, before the
    // round trip: a wait that, from the reply, ends past either is refused as Redis would have
    // (the permit is spent unused, as after a command that timed out: the fleet only sends less).
    // maxWait counts from the end of a pause, which the whole round trip came before when Redis
    // answered with one: then Redis's weighing of the permit's own wait holds as it was.
    if (granted == 0
        || (waitNanos > 0 && waitNanos > maxWaitNanos)
        || (!paused && waitNanos > 0 && waitNanos > maxPermitWaitNanos)) {
      metrics.refused(paused);
      return REJECTED;
    }
    metrics.granted(waitNanos > 0, paused, false);
    if (granted > 1) {
      leased = (int) Math.min(lease - 1, leased + granted - 1);
      leaseExpiresNanos = nowNanos + LEASE_TTL_NANOS;
    }
    return waitNanos;
  }

  private synchronized long reserveLocally(long nowNanos, long maxPermitWait, long maxTotalWait) {
    metrics.fallback();
    double share = fleet.localShare();
    if (local == null || share != localShare) {
      local = new RateLimiter(localPolicy(share), nowNanos);
      localShare = share;
    }
    if (paused) {
      local.pauseUntil(pausedUntilNanos);
    }
    return local.reserve(nowNanos, maxPermitWait, maxTotalWait);
  }

  /** The fleet limit times {@code share}: a rate above zero and a burst of at least one. */
  RateLimitPolicy localPolicy(double share) {
    return limit.toBuilder()
        .perSecond(limit.perSecond() * share)
        .burst(Math.max(1, (int) Math.floor(limit.burst() * share)))
        .build();
  }

  /**
   * Takes on Redis's pause of the route, {@code leftMicros} left at its deadline {@code
   * deadlineMicros} (Redis's clock), for at most {@code retryAfter.max} from {@code nowNanos}:
   * unless this JVM took that deadline on before, and so has held it for its bound already. Caller
   * holds the lock.
   */
  private void takePause(long nowNanos, long leftMicros, long deadlineMicros) {
    if (leftMicros > 0 && deadlineMicros > takenDeadlineMicros) {
      takenDeadlineMicros = deadlineMicros;
      notePause(nowNanos + Math.min(leftMicros * 1000, maxPauseNanos));
    }
  }

  /** Records a pause deadline (a later one wins); a pause drops leased permits. */
  private boolean notePause(long untilNanos) {
    if (paused && untilNanos - pausedUntilNanos <= 0) {
      return false;
    }
    paused = true;
    pausedUntilNanos = untilNanos;
    leased = 0;
    return true;
  }

  private long pauseLeft(long nowNanos) {
    if (paused && nowNanos - pausedUntilNanos >= 0) {
      paused = false;
    }
    return paused ? pausedUntilNanos - nowNanos : 0;
  }

  /** An error of this route's script (not of the connection) is reported once, until it works. */
  void reportCallError(FleetUnavailableException e) {
    fleet.onCallError(e);
    if (e.kind() != FleetUnavailableException.Kind.ERROR
        && e.kind() != FleetUnavailableException.Kind.REFUSED) {
      return;
    }
    synchronized (this) {
      if (errorReported) {
        return;
      }
      errorReported = true;
    }
    fleet.report(
        "retry-agent: fleet: Redis answered the rate limit of route "
            + Sanitizer.routeName(route)
            + " (keys "
            + String.join(", ", keys)
            + ") with an error ("
            + e.getMessage()
            + "); this JVM limits the route to its own share meanwhile");
  }

  private static String micros(long nanos) {
    return Long.toString(Math.max(0, nanos) / 1000);
  }

  private static String trim(double d) {
    return d == Math.rint(d) ? Long.toString((long) d) : String.format("%.2f", d);
  }
}
