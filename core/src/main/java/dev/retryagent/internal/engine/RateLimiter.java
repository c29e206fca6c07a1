package dev.retryagent.internal.engine;

import dev.retryagent.engine.PermitLimiter;
import dev.retryagent.policy.RateLimitPolicy;

/**
 * A per-host token bucket with reservations: a caller that finds the bucket empty reserves the next
 * token (the balance goes below zero) and learns how long to wait for it, so waiting callers are
 * served in order and never exceed the rate. A reservation longer than the caller may wait is
 * refused and costs nothing.
 *
 * <p>A retry's permit reserved at its decision ({@link #reserveAhead}) takes a token due by the
 * instant the retry starts, not the next one: until then the bucket's tokens serve other callers,
 * as long as one is left for it at that instant. A caller that would leave it none is served after
 * it, its token taken at that instant too: a token is taken from the bucket at the instant it is
 * used, never earlier, or the bucket, full meanwhile, would count a token more for the time the
 * taken one sat in it, and the next would come that much early.
 *
 * <p>A host can also be paused (after a 429 with {@code Retry-After}): until then every caller
 * waits, whatever the tokens say. Thread-safe.
 */
public final class RateLimiter implements PermitLimiter {
  /** Returned by {@link #reserve} when the caller must not wait that long. */
  public static final long REJECTED = PermitLimiter.REJECTED;

  private final RateLimitPolicy policy;
  private final double nanosPerToken;
  private final long burst;
  // The bucket holds base tokens plus what accrued since anchorNanos, at most burst: base moves by
  // whole tokens only (a permit taken, given back), and the anchor only when the bucket is full.
  // A token falls due at the nanosecond dueNanos says, and is there at that nanosecond whoever
  // asked in between: the tokens summed in doubles at each look lost a little each time, and a
  // caller with maxWait 0 was refused at the nanosecond its token was due.
  private long base;
  private long anchorNanos;
  private long pausedUntilNanos;
  // Volatile so that a caller whose wait for a token just ended sees a 429 pause that began during
  // it without the lock (pauseRemainingNanos): written under the lock only.
  private volatile boolean paused;
  // One reservation made ahead (reserveAhead), not yet taken from base: its holder's token, due by
  // aheadAt, and those of the callers whose permit would have left it none, served after it
  // (reserve): aheadTokens in all, taken from base at aheadAt (settle), the bucket refilled to
  // then. Taken from base at once, the bucket full until aheadAt would not count the time the
  // token sat in it, and the next token came that much early (1/s, burst 1: attempts 500 ms apart).
  private Object aheadHolder;
  private long aheadAt;
  private long aheadTokens;
  // Tokens reserved ahead given back (release) while callers served after them were still to come
  // due, counted as due after them, and the instant the last of those comes due: until then the
  // bucket is a token richer than base says for each, and burst - 1 fit.
  private long givenBackQueued;
  private long givenBackUntil;
  // The holder of the permit taken from the bucket last, while no other was taken after it and
  // the bucket was not full since (null: not known). Its give-back is exact: the bucket, as if it
  // had not been asked, is the bucket now with one token more, at most burst. Any other permit's
  // instant is not known here: given back after it, with a permit taken since from a bucket a token
  // short of full or fuller (or full meanwhile), its token would have been lost to the cap in a
  // bucket never asked for it, and put back the next burst went one request over the limit. Such
  // a permit stays spent (see giveBack). Cleared once the bucket is full, and as its call ends
  // (forget): a call keeps its request, its body's replay copy and the application's callbacks,
  // which a host called once and never again would hold for the life of the JVM. Volatile for
  // forget's look without the lock; written under it.
  private volatile Object lastTaker;
  // Instants compared by their difference (nanoTime): one at most this far after another.
  private static final long MAX_AHEAD = Long.MAX_VALUE / 4;

  /**
   * {@link #aheadHolder} once the holder's attempt started, or its permit was given back, before
   * {@link #aheadAt} while callers served after it still take their tokens then: no holder's.
   */
  private static final Object NO_HOLDER = new Object();

  public RateLimiter(RateLimitPolicy policy, long nowNanos) {
    this.policy = policy;
    this.nanosPerToken = 1e9 / policy.perSecond();
    this.burst = policy.burst();
    this.base = burst;
    this.anchorNanos = nowNanos;
  }

  public RateLimitPolicy policy() {
    return policy;
  }

  /**
   * Reserves one permit.
   *
   * @param maxTokenWaitNanos the longest wait for a token the caller accepts ({@code maxWait}),
   *     counted from the end of a pause
   * @param maxPauseWaitNanos the longest wait in all the caller accepts (its deadline)
   * @return nanoseconds to wait before the attempt (0 = go now), or {@link #REJECTED}
   */
  @Override
  public long reserve(long nowNanos, long maxTokenWaitNanos, long maxPauseWaitNanos) {
    return reserve(nowNanos, maxTokenWaitNanos, maxPauseWaitNanos, null);
  }

  /**
   * {@link #reserve(long, long, long)} for {@code holder} (the call, one permit at a time; null for
   * none), whose give-back ({@link #giveBack(long, Object)}) is then exact while no permit was
   * taken after it.
   */
  public synchronized long reserve(
      long nowNanos, long maxTokenWaitNanos, long maxPauseWaitNanos, Object holder) {
    endPause(nowNanos);
    long pauseWait = paused ? Math.max(0, pausedUntilNanos - nowNanos) : 0;
    if (pauseWait > maxPauseWaitNanos) {
      return REJECTED;
    }
    // A caller that waits for the pause starts when it ends: its token is taken from the bucket as
    // it will be then, filled to burst at most, or every token that accrued during the pause would
    // let one more caller go at the instant it ends.
    long at = nowNanos + pauseWait;
    settle(at);
    refill(at);
    if (aheadHolder != null && servedAfterAhead(at)) {
      // The token reserved ahead first, then this caller's, both taken from base at aheadAt.
      long tokenWait = waitAfterAhead(at);
      if (tokenWait > maxTokenWaitNanos || pauseWait + tokenWait > maxPauseWaitNanos) {
        return REJECTED;
      }
      aheadTokens += 1;
      lastTaker = null; // taken at aheadAt with the others: settle
      return pauseWait + tokenWait;
    }
    long tokenWait = 0;
    if (base < 1) {
      tokenWait = dueNanos(1 - base) - elapsed(at);
      if (tokenWait < 0) {
        tokenWait = 0;
      } else if (tokenWait > maxTokenWaitNanos || pauseWait + tokenWait > maxPauseWaitNanos) {
        return REJECTED;
      }
    }
    base -= 1;
    lastTaker = holder;
    return pauseWait + tokenWait;
  }

  /**
   * Reserves one permit for an attempt that starts no earlier than {@code aheadNanos} from now (a
   * retry's, at its decision, its backoff ahead): when no pause is in force, no other reservation
   * is ahead, and the bucket holds a token at that instant, that token is the holder's, and the
   * bucket's tokens before it go on serving other callers. Otherwise as {@link #reserve}: the next
   * token, taken now. {@link #giveBack(long, Object)} with the same holder gives it back.
   *
   * @param holder the reservation's holder (the call), one permit at a time; never null
   * @return nanoseconds to wait before the attempt, at most {@code aheadNanos} when reserved ahead;
   *     or {@link #REJECTED}
   */
  public synchronized long reserveAhead(
      long nowNanos,
      long aheadNanos,
      long maxTokenWaitNanos,
      long maxPauseWaitNanos,
      Object holder) {
    endPause(nowNanos);
    settle(nowNanos);
    if (!paused && aheadHolder == null && aheadNanos > 0) {
      long startAt = nowNanos + aheadNanos;
      refill(nowNanos);
      boolean dueByStart = base >= 1 || dueNanos(1 - base) <= elapsed(startAt);
      long wait = base >= 1 ? 0 : Math.max(0, dueNanos(1 - base) - elapsed(nowNanos));
      if (dueByStart && wait <= maxTokenWaitNanos && wait <= maxPauseWaitNanos) {
        if (lastTaker == holder) {
          lastTaker = null; // its earlier permit was used: a give-back now is of this one alone
        }
        aheadHolder = holder;
        aheadAt = startAt;
        aheadTokens = 1;
        return wait;
      }
    }
    return reserve(nowNanos, maxTokenWaitNanos, maxPauseWaitNanos, holder);
  }

  /**
   * The permit {@code holder} reserved ahead ({@link #reserveAhead}) is used now, its attempt
   * starting: taken from the bucket now if it was not yet, so that a later give-back of the call's
   * permit is a whole token's. With callers served after it, at its instant still, as their waits
   * were told (see {@link #release}: taken earlier, a bucket of burst 1 full again before the first
   * of them would give a token early). Nothing for any other holder.
   */
  public synchronized void takeAhead(long nowNanos, Object holder) {
    settle(nowNanos);
    if (holder != null && aheadHolder == holder) {
      if (aheadTokens == 1) {
        refill(nowNanos);
        base -= 1;
        lastTaker = holder;
        aheadHolder = null;
        aheadTokens = 0;
      } else {
        aheadHolder = NO_HOLDER;
      }
    }
  }

  /**
   * {@code holder}'s call ended: the limiter no longer refers to it (it was the last to take a
   * permit, and gave none back). Without the lock unless it was: one volatile read per call.
   */
  public void forget(Object holder) {
    if (holder != null && lastTaker == holder) {
      synchronized (this) {
        if (lastTaker == holder) {
          lastTaker = null; // a later give-back of it (none comes) would stay spent: safe
        }
      }
    }
  }

  /**
   * Gives back the permit {@code holder} took ({@link #reserve(long, long, long, Object)}, {@link
   * #reserveAhead}) for an attempt that was never made (the breaker refused it, the caller gave up
   * while waiting, the client refused it): a permit reserved ahead and not yet taken from the
   * bucket is forgotten (see {@link #release}). Any other goes back only as far as the bucket,
   * asked no more by it, would hold it: the bucket must never be richer than one that was never
   * asked.
   *
   * <p>Asked no more, the bucket would hold that token from the permit's instant on until it was
   * full: a token more than now, at most burst, while no permit was taken after it (the permit
   * taken last, a reservation still to come due or one already due: exact). A permit taken after it
   * from a bucket a token short of full, or the bucket full meanwhile, took the token that one
   * never asked would have lost to the cap: put back, the next burst went a request over the limit
   * (1/s, burst 1: a permit taken at T0, another at T0 + 1.2 s, the first given back at T0 + 1.5 s
   * let a third go then). Which it was is not known without the permit's instant, so a permit not
   * taken last stays spent: at most a token poorer than exact, never richer.
   */
  public synchronized void giveBack(long nowNanos, Object holder) {
    endPause(nowNanos);
    settle(nowNanos);
    if (holder != null && aheadHolder == holder) {
      release(nowNanos);
      return;
    }
    if (holder != null && lastTaker == holder) {
      base += 1; // refill caps it at burst: a bucket full since its instant lost that token
      lastTaker = null; // the permit taken before it is not known
    }
    refill(nowNanos);
  }

  /**
   * The holder's token reserved ahead, given back before its instant, is not taken then: the bucket
   * as if it had not been asked. With callers served after it, their tokens are still taken at its
   * instant, which counts them as due when the bucket, once refilled to then, holds one more each:
   * with burst 2 or more the bucket never fills in between and that is exact; with burst 1 it would
   * hold a second token meanwhile, which it cannot (full, it counts none more), and the next token
   * would come a whole token early. There the holder's token stays taken at its instant: the
   * bucket, full from then until the first of them took its token, could have given it to no one
   * else without bunching (a caller then would go less than a token's time before that one). It
   * counts with the tokens given back before (burst - 1 at most until they come due: reservations
   * waiting hold the bucket at 1 at most at their turn, and one more would be counted where the
   * bucket, full, holds none).
   */
  private void release(long nowNanos) {
    if (aheadTokens == 1) {
      aheadHolder = null;
      aheadTokens = 0;
    } else {
      aheadHolder = NO_HOLDER;
      if (nowNanos - givenBackUntil >= 0) {
        givenBackQueued = 0; // the reservations they were counted after have all come due
      }
      if (countGiven(aheadAt)) {
        aheadTokens -= 1;
      }
    }
  }

  private boolean countGiven(long untilNanos) {
    if (givenBackQueued >= burst - 1) {
      return false;
    }
    givenBackQueued += 1;
    if (givenBackQueued == 1 || untilNanos - givenBackUntil > 0) {
      givenBackUntil = untilNanos;
    }
    return true;
  }

  /**
   * {@link #giveBack(long, Object)} for a permit whose holder is not known: it stays spent (see
   * there), the bucket refilled to now.
   */
  public synchronized void giveBack(long nowNanos) {
    giveBack(nowNanos, null);
  }

  /** Pauses every caller of this host until {@code untilNanos} (a later pause wins). */
  public synchronized void pauseUntil(long untilNanos) {
    if (!paused || untilNanos - pausedUntilNanos > 0) {
      pausedUntilNanos = untilNanos;
      paused = true;
    }
  }

  @Override
  public void pause(long nowNanos, long pauseNanos) {
    pauseUntil(nowNanos + pauseNanos);
  }

  /** Nanoseconds left of the current pause, or 0. */
  @Override
  public long pauseRemainingNanos(long nowNanos) {
    if (!paused) {
      return 0; // one volatile read: the look after each wait for a token (RetryCall)
    }
    synchronized (this) {
      return paused ? Math.max(0, pausedUntilNanos - nowNanos) : 0;
    }
  }

  /**
   * The tokens a caller asking now finds: 1 or more when it would go at once, and otherwise 1 less
   * its wait for a token in tokens' intervals (negative while reservations are outstanding). A
   * token reserved ahead for a retry counts only as far as it leaves the others fewer now: while
   * the bucket can still give its tokens to another caller and keep one for the retry's instant,
   * they are there (at most those that leave it one then).
   */
  public synchronized double availableTokens(long nowNanos) {
    settle(nowNanos);
    refill(nowNanos);
    double tokens =
        base >= burst ? burst : Math.min(burst, base + elapsed(nowNanos) / nanosPerToken);
    if (aheadHolder == null) {
      return tokens;
    }
    if (!servedAfterAhead(nowNanos)) {
      return Math.min(tokens, base - 1 + elapsed(aheadAt) / nanosPerToken);
    }
    return 1 - waitAfterAhead(nowNanos) / nanosPerToken;
  }

  /** True when no state would be lost by forgetting this limiter. */
  public synchronized boolean isIdle(long nowNanos) {
    endPause(nowNanos);
    settle(nowNanos);
    refill(nowNanos);
    return base >= burst && aheadHolder == null && pauseRemainingNanos(nowNanos) == 0;
  }

  /**
   * The tokens reserved ahead (the holder's, those of the callers served after it) are taken from
   * base once their instant has come ({@code atNanos}), the bucket refilled to then.
   */
  private void settle(long atNanos) {
    if (aheadHolder != null && atNanos - aheadAt >= 0) {
      refill(aheadAt);
      base -= aheadTokens;
      // Taken last: the holder's alone is known (taken with others', none is).
      lastTaker = aheadTokens == 1 && aheadHolder != NO_HOLDER ? aheadHolder : null;
      aheadHolder = null;
      aheadTokens = 0;
      if (givenBackQueued > 0) {
        // Tokens given back while it was held count until the callers served after it come due.
        long last = anchorNanos + Math.min(dueNanos(-base), MAX_AHEAD);
        if (last - givenBackUntil > 0) {
          givenBackUntil = last;
        }
      }
    }
  }

  /**
   * Whether a caller asking at {@code atNanos} (before the instant reserved ahead) is served after
   * the reservation: once one is, every later one is (its token, taken before, would leave the
   * earlier ones theirs later than they were told); otherwise when its permit would leave none for
   * the holder then.
   */
  private boolean servedAfterAhead(long atNanos) {
    return aheadTokens > 1 || aheadHolder == NO_HOLDER || !leavesAhead(atNanos);
  }

  /**
   * Nanoseconds from {@code atNanos} until a token for a caller served after the tokens reserved
   * ahead: the bucket as it will be at their instant, refilled to then and those taken. Its anchor
   * may then be past {@code atNanos}.
   */
  private long waitAfterAhead(long atNanos) {
    boolean full = fullBy(aheadAt);
    long left = (full ? burst : base) - aheadTokens;
    if (left >= 1) {
      return aheadAt - atNanos; // one given back: the holder's instant is the earliest kept free
    }
    long anchor = full && aheadAt - anchorNanos > 0 ? aheadAt : anchorNanos;
    long lead = anchor - atNanos;
    long due = dueNanos(1 - left);
    return lead > 0 && due > Long.MAX_VALUE - lead ? Long.MAX_VALUE : due + lead;
  }

  /**
   * Whether a permit taken from base at {@code atNanos} (before the instant reserved ahead) leaves
   * the bucket a token at that instant for the reservation made ahead.
   */
  private boolean leavesAhead(long atNanos) {
    long after = base - 1;
    return after >= 1 || elapsed(aheadAt) >= dueNanos(1 - after);
  }

  /** Nanoseconds after the anchor at which the bucket holds {@code tokens} more than base. */
  private long dueNanos(long tokens) {
    double due = Math.ceil(tokens * nanosPerToken);
    return due >= 0x1p63 ? Long.MAX_VALUE : (long) due;
  }

  private long elapsed(long atNanos) {
    return Math.max(0, atNanos - anchorNanos);
  }

  /** Whether the bucket, asked no more, is full at {@code atNanos}. */
  private boolean fullBy(long atNanos) {
    return base >= burst || elapsed(atNanos) >= dueNanos(burst - base);
  }

  /** A bucket full at {@code atNanos} holds burst from then on, its anchor there. */
  private void refill(long atNanos) {
    if (fullBy(atNanos)) {
      base = burst;
      lastTaker = null; // a permit taken before now goes back as no token: full, it held none more
      if (atNanos - anchorNanos > 0) {
        anchorNanos = atNanos;
      }
    }
  }

  private void endPause(long nowNanos) {
    if (paused && nowNanos - pausedUntilNanos >= 0) {
      paused = false;
    }
  }
}
