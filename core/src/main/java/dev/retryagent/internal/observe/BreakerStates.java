package dev.retryagent.internal.observe;

import dev.retryagent.engine.CircuitBreaker;
import dev.retryagent.engine.CircuitState;
import dev.retryagent.engine.RetryEngine;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The state of each circuit breaker the engine asks now, by key: what every exposition (the
 * Prometheus gauges, the JMX attributes) reports. After a reload that changed a breaker's section,
 * a host can have an old breaker and a new one while calls under way still hold the old (the engine
 * drops it from its registry at the reload, with a resolver that lists its policies); the old one
 * is never asked again, so it never leaves the state it was in. Per key, the most recently used one
 * counts.
 */
final class BreakerStates {
  private BreakerStates() {}

  /** Key to state, in the order the engine lists its breakers (least recently used first). */
  static Map<String, CircuitState> of(RetryEngine engine) {
    Map<String, CircuitState> states = new LinkedHashMap<>();
    for (CircuitBreaker b : engine.breakers()) {
      states.put(b.key(), b.state()); // most recently used last: it wins
    }
    return states;
  }
}
