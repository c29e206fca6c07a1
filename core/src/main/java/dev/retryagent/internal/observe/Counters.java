package dev.retryagent.internal.observe;

import dev.retryagent.engine.CircuitTransition;
import dev.retryagent.engine.GiveUpReason;
import java.util.concurrent.atomic.LongAdder;

/**
 * The live counters of one (route, host) series: one {@link LongAdder} each, so threads of many
 * calls add without contending.
 */
final class Counters {
  private final LongAdder[] adders = new LongAdder[CounterSnapshot.SIZE];

  Counters() {
    for (int i = 0; i < adders.length; i++) {
      adders[i] = new LongAdder();
    }
  }

  void add(Stat s) {
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
    return new CounterSnapshot(v);
  }
}
