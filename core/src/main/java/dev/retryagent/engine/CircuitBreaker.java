package dev.retryagent.engine;

import dev.retryagent.policy.CircuitBreakerPolicy;
import java.util.ArrayList;

/**
 * The circuit breaker of one host (or route), as listeners and metrics see it: an explicit state
 * machine ({@link CircuitState}, every move one of {@link CircuitTransition}) whose state, key,
 * policy and reason for opening can be read at any time. The engine creates breakers (one per
 * target and policy, bounded by {@code circuitBreaker.maxHosts}) and is the only one that moves
 * them; {@link RetryEngine#breakers()} lists them and {@link RetryListener#onBreakerTransition}
 * reports each move.
 *
 * <p>Inside the engine, each attempt asks for a permit and reports its outcome with that permit or
 * gives it back. A permit is the breaker's generation at the time it was issued; every transition
 * starts a new generation, so an attempt that started before a transition can neither count as a
 * half-open trial nor reopen a fresh window.
 *
 * <p>Thread-safe. Transitions happen under this object's lock and are queued there; the listener is
 * told after the lock is let go ({@link #tellTransitions}), in the order they happened, each once,
 * by one thread at a time. The engine's calls tell them once they let go of their own lock too
 * ({@link #tryAcquireTellingLater}, {@link #onResultTellingLater}): a listener that blocks (an
 * application's, stuck on I/O) then holds up neither the breaker's other callers nor a step of the
 * call on another thread (its cancel).
 */
public final class CircuitBreaker {
  /** Returned by {@link #tryAcquire} when the call must fail fast. */
  static final long REJECTED = -1;

  /** Told about every transition, outside the breaker's lock, in the breaker's order. */
  interface TransitionListener {
    void onTransition(CircuitBreaker breaker, CircuitTransition transition);
  }

  private final String key;
  private final CircuitBreakerPolicy policy;
  private final TransitionListener listener;
  private final OutcomeWindow window;
  private final long slowNanos;
  // The window is in time, or slow calls are measured: every outcome needs the time.
  private final boolean timed;

  private CircuitState state = CircuitState.CLOSED;
  private long generation;

  /**
   * The generation while CLOSED, {@link #REJECTED} otherwise: a permit in the closed state (the
   * generation, nothing else changes) without the lock. Written with every transition.
   */
  private volatile long closedGeneration;

  /**
   * The generation while CLOSED with a full count window of successes, {@link #REJECTED} otherwise:
   * one more success there replaces a success and changes no count (where the ring's next slot is
   * does not matter while every slot is a success), so it is recorded without the lock. Written
   * under the lock with every change of the window or the state.
   */
  private volatile long quietGeneration = REJECTED;

  private long openUntilNanos;
  private long lastTrialNanos;
  private int trialsIssued;
  private int trialsSucceeded;
  private int trialsSlow;
  private long transitions;
  private long openedCalls;
  private long openedFailures;
  private long openedSlow;

  /** Transitions not told yet, in the order made; null for none. Guarded by the lock. */
  private ArrayList<CircuitTransition> untold;

  /** A thread tells {@link #untold}: another leaves its own to it. Guarded by the lock. */
  private boolean telling;

  /**
   * Transitions wait to be told: read without the lock by the callers' steps as they return, so a
   * step on a breaker that did not move takes no lock. Written under the lock.
   */
  private volatile boolean anyUntold;

  /**
   * The newest configuration ({@link EngineSettings#generation}) under which a call got this
   * breaker (set as the call's per-host state is made, not per call): {@link
   * RetryEngine#showsState}. Only raised ({@link #reachedUnder}).
   */
  private volatile long usedUnder;

  /** {@link #usedUnder}. */
  long usedUnder() {
    return usedUnder;
  }

  /**
   * A call of configuration {@code generation} got this breaker. Never lowers the stamp: a call
   * that read the configuration before a reload may make its per-host state after calls of the new
   * one made theirs (which they then keep, stamping no more); writing its older generation over the
   * newer would hide, for that configuration's life, a breaker its calls reach whenever it is not
   * refusing (r31). Locks only when the stamp moves: once per breaker and configuration.
   */
  void reachedUnder(long generation) {
    if (generation - usedUnder > 0) {
      synchronized (this) {
        if (generation - usedUnder > 0) {
          usedUnder = generation;
        }
      }
    }
  }

  /**
   * @param key what the breaker guards: {@code scheme://host:port} or {@code route:name}
   */
  CircuitBreaker(String key, CircuitBreakerPolicy policy, TransitionListener listener) {
    this.key = key;
    this.policy = policy;
    this.listener = listener;
    this.window = OutcomeWindow.of(policy);
    this.slowNanos =
        policy.slowCallDuration() == null ? Long.MAX_VALUE : policy.slowCallDuration().toNanos();
    this.timed =
        policy.windowType() != CircuitBreakerPolicy.WindowType.COUNT || slowNanos != Long.MAX_VALUE;
  }

  public String key() {
    return key;
  }

  public CircuitBreakerPolicy policy() {
    return policy;
  }

  /** Whom the breaker tells of its transitions. */
  TransitionListener transitionListener() {
    return listener;
  }

  /** The state now; an open breaker whose time is up still reads OPEN until the next call. */
  public synchronized CircuitState state() {
    return state;
  }

  /** When an open breaker lets trial calls through, in {@link Clock#nanoTime()} terms. */
  public synchronized long openUntilNanos() {
    return openUntilNanos;
  }

  /** Number of transitions so far. */
  public synchronized long transitions() {
    return transitions;
  }

  /**
   * Attempts in the window when the breaker last opened from CLOSED (0 before that, and for a
   * reopening after a failed trial call): with {@link #openedFailureRate()} and {@link
   * #openedSlowCallRate()}, lets a listener say why it opened (the window is cleared on opening).
   */
  public synchronized long openedCalls() {
    return openedCalls;
  }

  /** Failure rate of the window that last opened the breaker from CLOSED, 0..1. */
  public synchronized double openedFailureRate() {
    return openedCalls == 0 ? 0 : (double) openedFailures / openedCalls;
  }

  /** Slow-call rate of the window that last opened the breaker from CLOSED, 0..1. */
  public synchronized double openedSlowCallRate() {
    return openedCalls == 0 ? 0 : (double) openedSlow / openedCalls;
  }

  /**
   * The exception for a call refused at {@code nowNanos} ({@code wallMillis} on the wall clock):
   * names the breaker and when it lets trial calls through.
   */
  CircuitBreakerOpenException rejection(long nowNanos, long wallMillis) {
    long inNanos = Math.max(0, nextTrialNanos() - nowNanos);
    return new CircuitBreakerOpenException(
        key, wallMillis + inNanos / 1_000_000, inNanos / 1_000_000);
  }

  /**
   * When a refused call's host is tried again. Open: when it half-opens. Half-open with every trial
   * out: by the time the breaker half-opens again should the trials not close it, openFor after
   * they count as lost (openFor after the last went out); a failed trial reopens it sooner. Its own
   * half-open time, long past, told the caller to try again at once, to be refused again.
   */
  private synchronized long nextTrialNanos() {
    if (state == CircuitState.HALF_OPEN) {
      return lastTrialNanos + 2 * policy.openFor().toNanos();
    }
    return openUntilNanos;
  }

  /** True when a call at {@code atNanos} would be rejected because the breaker is open. */
  synchronized boolean isOpenAt(long atNanos) {
    // Differences only: nanoTime's origin is arbitrary, and openUntilNanos may have wrapped.
    return state == CircuitState.OPEN && atNanos - openUntilNanos < 0;
  }

  /**
   * True when an attempt asking at {@code atNanos} would be refused, as {@link
   * #tryAcquireTellingLater} would refuse it, without taking a half-open trial or moving the
   * breaker: open and not yet due for its trials, or half-open with every trial out. Trials out
   * past their time ({@code openFor} after the last went out) count as failed and open it {@code
   * openFor} more, from then: refused until {@code 2 x openFor} after the last trial, as {@link
   * #tryAcquireTellingLater} would. {@link #isOpenAt} covers only an open breaker: while the trials
   * were out, a call with the rate limit on waited for its token (up to {@code maxWait}) or got
   * RateLimitedException, where the breaker refuses it at once.
   */
  synchronized boolean refusesAt(long atNanos) {
    if (state == CircuitState.OPEN) {
      return atNanos - openUntilNanos < 0;
    }
    return state == CircuitState.HALF_OPEN
        && trialsIssued >= policy.halfOpenCalls()
        && atNanos - (lastTrialNanos + 2 * policy.openFor().toNanos()) < 0;
  }

  /**
   * True when no state would be lost by forgetting this breaker at {@code nowNanos}: closed,
   * without a failure or a slow call in its window (a slow call counts toward opening as a failure
   * does). A time window is moved to {@code nowNanos} first: it moves only when a call records, so
   * a host that failed once and was never called again kept that failure, and was never idle.
   */
  synchronized boolean isIdle(long nowNanos) {
    if (state != CircuitState.CLOSED) {
      return false;
    }
    if (window.failures != 0 || window.slow != 0) {
      window.expire(nowNanos);
    }
    return window.failures == 0 && window.slow == 0;
  }

  /**
   * A permit, as {@link #tryAcquire} gives it, when the breaker is closed; {@link #REJECTED} when
   * it is not (then ask {@link #tryAcquire}). Lock-free, and needs no time: a closed breaker lets
   * every attempt through. A transition racing with it makes the permit stale, as if it had been
   * issued just before the transition.
   */
  long closedPermit() {
    return closedGeneration;
  }

  /**
   * Asks to make one attempt at {@code nowNanos}.
   *
   * <p>Half-open is bounded in time: when every trial slot is taken and the last trial was let
   * through {@code openFor} ago without all of them having answered, the trials count as failed and
   * the breaker opens again (from the moment the last one ran out of time), so a trial whose
   * attempt never reports (a hung connection without a timeout, a leaked call) cannot keep the
   * breaker rejecting forever.
   *
   * @return a permit to pass to {@link #onResult} or {@link #release}, or {@link #REJECTED}
   */
  long tryAcquire(long nowNanos) {
    long permit = tryAcquireTellingLater(nowNanos);
    try {
      tellTransitions();
    } catch (RuntimeException | Error e) {
      // What the listeners let through (out of memory, a broken JVM) leaves with no permit in the
      // caller's hands: a half-open trial just issued goes back, or the breaker could not give it
      // back and refused the host until the trials' time ran out, and openFor more.
      release(permit);
      throw e;
    }
    return permit;
  }

  /**
   * As {@link #tryAcquire}, the transitions it makes left for the caller to tell ({@link
   * #tellTransitions}) once it let go of its own lock.
   */
  long tryAcquireTellingLater(long nowNanos) {
    long permit;
    synchronized (this) {
      long trialLimit = policy.openFor().toNanos();
      if (state == CircuitState.HALF_OPEN
          && trialsIssued >= policy.halfOpenCalls()
          && nowNanos - lastTrialNanos >= trialLimit) {
        open(lastTrialNanos + trialLimit);
      }
      if (state == CircuitState.OPEN && nowNanos - openUntilNanos >= 0) {
        move(CircuitState.HALF_OPEN);
        // The trials' time starts at the half-open's own, not at one of an earlier half-open (or
        // 0, which nanoTime's arbitrary origin may put after every time read): it only moves on.
        lastTrialNanos = openUntilNanos;
      }
      switch (state) {
        case CLOSED:
          permit = generation;
          break;
        case HALF_OPEN:
          if (trialsIssued < policy.halfOpenCalls()) {
            trialsIssued++;
            // The time is read before this lock: a thread held up there brings one older than the
            // last trial's, which must not move it back (the trials out would be taken for lost,
            // the breaker reopened, before openFor had passed since the last one went).
            if (nowNanos - lastTrialNanos > 0) {
              lastTrialNanos = nowNanos;
            }
            permit = generation;
          } else {
            permit = REJECTED;
          }
          break;
        default:
          permit = REJECTED;
      }
    }
    return permit;
  }

  /**
   * Records the outcome of an attempt made with {@code permit}. Outcomes of an older generation
   * (the breaker moved while the attempt was in flight) are ignored.
   *
   * @param failure the outcome counts as a failure ({@code failOn})
   * @param durationNanos how long the attempt took, for the slow-call rate
   */
  void onResult(long permit, boolean failure, long durationNanos, long nowNanos) {
    onResultTellingLater(permit, failure, durationNanos, nowNanos);
    tellTransitions();
  }

  /** As {@link #onResult(long, boolean, long, long)}, a transition left to the caller to tell. */
  void onResultTellingLater(long permit, boolean failure, long durationNanos, long nowNanos) {
    record(permit, failure, durationNanos > slowNanos, nowNanos, null);
  }

  /**
   * As {@link #onResult(long, boolean, long, long)} for an attempt that started at {@code
   * startedNanos}, reading {@code clock} only when the outcome needs the time: a breaker whose
   * window counts attempts (not time) and that does not measure slow calls needs it only to open. A
   * call's success then costs no clock read here.
   */
  void onResult(long permit, boolean failure, long startedNanos, Clock clock) {
    onResultTellingLater(permit, failure, startedNanos, clock);
    tellTransitions();
  }

  /** As {@link #onResult(long, boolean, long, Clock)}, a transition left to the caller to tell. */
  void onResultTellingLater(long permit, boolean failure, long startedNanos, Clock clock) {
    if (timed) {
      long now = clock.nanoTime();
      record(permit, failure, now - startedNanos > slowNanos, now, null);
    } else if (failure || permit == REJECTED || permit != quietGeneration) {
      record(permit, failure, false, 0, clock);
    }
    // else: a success on a quiet breaker (a healthy host's common case): nothing changes.
  }

  /**
   * @param clock when non-null, the time is read from it when needed and {@code nowNanos} is not
   *     used (only for a breaker that is not {@link #timed}: its window ignores the time)
   */
  private void record(long permit, boolean failure, boolean isSlow, long nowNanos, Clock clock) {
    synchronized (this) {
      if (permit != generation || permit == REJECTED) {
        return;
      }
      switch (state) {
        case CLOSED:
          window.expire(nowNanos);
          window.record(failure, isSlow, nowNanos);
          if (shouldOpen()) {
            open(clock == null ? nowNanos : clock.nanoTime());
          } else {
            quietGeneration = window.fullOfSuccesses() ? generation : REJECTED;
          }
          break;
        case HALF_OPEN:
          // A failed trial reopens at once ("all must succeed to close"). A slow trial succeeded:
          // the trials reopen the breaker only at or above slowCall.rateThreshold, as the window
          // does when closed. Their rate is counted over all halfOpenCalls trials, so it only
          // grows, and reopening when the slow ones reach it decides what the last trial would.
          if (failure || (isSlow && slowTrialsReachTheThreshold(++trialsSlow))) {
            open(clock == null ? nowNanos : clock.nanoTime());
          } else if (++trialsSucceeded >= policy.halfOpenCalls()) {
            move(CircuitState.CLOSED);
          }
          break;
        default:
          break;
      }
    }
  }

  private boolean slowTrialsReachTheThreshold(int slowTrials) {
    return (double) slowTrials / policy.halfOpenCalls() >= policy.slowCallRateThreshold();
  }

  /** Gives back a permit whose attempt was abandoned without an outcome (cancelled). */
  synchronized void release(long permit) {
    if (permit == generation && state == CircuitState.HALF_OPEN && trialsIssued > 0) {
      trialsIssued--;
    }
  }

  private boolean shouldOpen() {
    // The policy's minimumCalls, as set: the default follows a smaller count window down
    // (CircuitBreakerPolicy); one set above the window means no decision, so the breaker never
    // opens.
    long minimum = policy.minimumCalls();
    if (window.total < minimum) {
      return false;
    }
    // Both rates are 0 and both thresholds above it (the failure threshold always is): the common
    // case of a healthy host decided without dividing.
    if (window.failures == 0 && window.slow == 0 && policy.slowCallRateThreshold() > 0) {
      return false;
    }
    double failureRate = (double) window.failures / window.total;
    if (failureRate >= policy.failureRateThreshold()) {
      return true;
    }
    return slowNanos != Long.MAX_VALUE
        && (double) window.slow / window.total >= policy.slowCallRateThreshold();
  }

  private void open(long nowNanos) {
    // Kept for listeners: move() clears the window that explains the opening.
    if (state == CircuitState.CLOSED) {
      openedCalls = window.total;
      openedFailures = window.failures;
      openedSlow = window.slow;
    }
    move(CircuitState.OPEN);
    openUntilNanos = nowNanos + policy.openFor().toNanos();
  }

  /** The only place the state changes. Caller holds the lock. */
  private void move(CircuitState to) {
    CircuitTransition t = CircuitTransition.of(state, to);
    if (listener != null) {
      if (untold == null) {
        untold = new ArrayList<>(2);
      }
      untold.add(t);
      anyUntold = true;
    }
    state = to;
    generation++;
    closedGeneration = to == CircuitState.CLOSED ? generation : REJECTED;
    quietGeneration = REJECTED; // the window is cleared below
    transitions++;
    trialsIssued = 0;
    trialsSucceeded = 0;
    trialsSlow = 0;
    window.clear();
  }

  /** Transitions wait to be told ({@link #tellTransitions}): one volatile read, no lock. */
  boolean anyUntold() {
    return anyUntold;
  }

  /**
   * Tells the transitions not told yet, unless another thread does (it tells this thread's too):
   * called holding neither this breaker's lock nor a call's. One thread at a time, so a listener
   * hears them in the order they happened whichever threads made them (two threads each telling its
   * own after the lock could tell OPEN_TO_HALF_OPEN before the CLOSED_TO_OPEN before it). What the
   * listener lets through (out of memory, a broken JVM) leaves that batch untold, the later ones
   * told by the next caller.
   */
  void tellTransitions() {
    if (!anyUntold) {
      return;
    }
    synchronized (this) {
      if (telling) {
        return;
      }
      if (untold == null) {
        anyUntold = false; // a teller that the listener threw out of left it set
        return;
      }
      telling = true;
    }
    boolean over = false;
    try {
      while (true) {
        ArrayList<CircuitTransition> batch;
        synchronized (this) {
          batch = untold;
          untold = null;
          if (batch == null) {
            anyUntold = false;
            telling = false;
            over = true;
            return;
          }
        }
        for (int i = 0; i < batch.size(); i++) {
          listener.onTransition(this, batch.get(i));
        }
      }
    } finally {
      if (!over) {
        synchronized (this) {
          telling = false;
        }
      }
    }
  }

  @Override
  public String toString() {
    return "CircuitBreaker[" + key + ", " + state() + "]";
  }
}
