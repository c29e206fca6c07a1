package dev.retryagent.internal.observe;

import dev.retryagent.engine.CircuitBreaker;
import dev.retryagent.engine.CircuitState;
import dev.retryagent.engine.RetryEngine;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The circuit breakers' states as the expositions (the Prometheus gauges, the JMX attributes) read
 * them from the engine. A key ({@code scheme://host:port}, {@code route:NAME}) can have more than
 * one breaker: the engine keeps one per {@code circuitBreaker} section, so two routes whose
 * sections differ and that call the same host have one each. Every breaker is counted; where one
 * state is shown per key, it is the worst of its breakers' (open, then half-open, then closed), so
 * an open breaker refusing one route's calls is never hidden by a closed one serving another route.
 * A breaker that, by the engine's word, no call may reach any more ({@link RetryEngine#showsState})
 * is neither shown nor counted: after a reload, with a resolver that lists no policies, an open one
 * of a route gone stayed open for good, as nothing asked it again.
 *
 * <p>Reads go through {@link #all()} (a copy of every breaker, taken under the engine registry's
 * lock, which calls to a new host also need) and {@link #of(String)} (one key's breakers): tests
 * count them.
 */
class BreakerStates {
  private final RetryEngine engine;

  BreakerStates(RetryEngine engine) {
    this.engine = engine;
  }

  /** Every breaker the engine tracks now, least recently used first: a walk of them all. */
  List<CircuitBreaker> all() {
    return engine.breakers();
  }

  /** The breakers of one key: that key's, without a walk of the others. */
  List<CircuitBreaker> of(String key) {
    return engine.breakers(key);
  }

  /** The worst state of {@code key}'s breakers, or null when it has none. */
  CircuitState stateOf(String key) {
    CircuitState worst = null;
    for (CircuitBreaker b : of(key)) {
      if (engine.showsState(b)) {
        worst = worse(worst, b.state());
      }
    }
    return worst;
  }

  /** Breakers in each state, every one shown counted (zero for a state none is in): one walk. */
  Map<CircuitState, Integer> counts() {
    return snapshot().counts;
  }

  /** Every breaker's state read once: the counts and each key's worst state agree. One walk. */
  Snapshot snapshot() {
    Snapshot s = new Snapshot();
    for (CircuitBreaker b : all()) {
      if (!engine.showsState(b)) {
        continue;
      }
      CircuitState state = b.state();
      s.counts.merge(state, 1, Integer::sum);
      s.worstByKey.put(b.key(), worse(s.worstByKey.get(b.key()), state));
    }
    return s;
  }

  /** The states of every breaker at one read. */
  static final class Snapshot {
    /** Breakers in each state, every one counted; zero for a state none is in. */
    final Map<CircuitState, Integer> counts = new EnumMap<>(CircuitState.class);

    /** Key to the worst state of its breakers, keys in the order of their first breaker listed. */
    final Map<String, CircuitState> worstByKey = new LinkedHashMap<>();

    Snapshot() {
      for (CircuitState s : CircuitState.values()) {
        counts.put(s, 0);
      }
    }
  }

  /** The worse of two states (null: none yet): open, then half-open, then closed. */
  static CircuitState worse(CircuitState a, CircuitState b) {
    return a == null || rank(b) > rank(a) ? b : a;
  }

  private static int rank(CircuitState s) {
    switch (s) {
      case OPEN:
        return 2;
      case HALF_OPEN:
        return 1;
      default:
        return 0;
    }
  }
}
