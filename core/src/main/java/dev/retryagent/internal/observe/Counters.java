package dev.retryagent.internal.observe;

import dev.retryagent.engine.CallCounter;
import dev.retryagent.engine.CircuitTransition;
import dev.retryagent.engine.GiveUpReason;
import java.util.concurrent.atomic.LongAdder;

/**
 * The live counters of one (route, host) series: one {@link LongAdder} each, so threads of many
 * calls add without contending.
 */
final class Counters implements CallCounter {
  private final LongAdder[] adders = new LongAdder[CounterSnapshot.SIZE];
  // Calls that succeeded at their first attempt: an attempt and a success each, one increment.
  private final LongAdder firstAttemptSuccesses = new LongAdder();

  Counters() {
    for (int i = 0; i < adders.length; i++) {
      adders[i] = new LongAdder();
    }
  }

  @Override
  public void attempt() {
    add(Stat.ATTEMPTS);
  }

  /** Every call ends succeeded or failed: {@link Stat#CALLS} is their sum, read by snapshots. */
  @Override
  public void callEnded(boolean succeeded) {
    add(succeeded ? Stat.SUCCEEDED : Stat.FAILED);
  }

  @Override
  public void firstAttemptSucceeded() {
    firstAttemptSuccesses.increment();
  }

  void add(Stat s) {
    assert s != Stat.CALLS : "derived from SUCCEEDED and FAILED";
    adders[s.ordinal()].increment();
  }

  void giveUp(GiveUpReason r) {
    adders[CounterSnapshot.STATS + r.ordinal()].increment();
  }

  void transition(CircuitTransition t) {
    adders[CounterSnapshot.STATS + CounterSnapshot.REASONS + t.ordinal()].increment();
  }

  CounterSnapshot snapshot() {
    long[] v = new long[adders.length];
    for (int i = 0; i < v.length; i++) {
      v[i] = adders[i].sum();
    }
    long first = firstAttemptSuccesses.sum();
    v[Stat.ATTEMPTS.ordinal()] += first;
    v[Stat.SUCCEEDED.ordinal()] += first;
    v[Stat.CALLS.ordinal()] = v[Stat.SUCCEEDED.ordinal()] + v[Stat.FAILED.ordinal()];
    return new CounterSnapshot(v);
  }
}
