package dev.retryagent.engine;

/**
 * Every legal move of a circuit breaker. The breaker asks this table for each move, so an illegal
 * one (say OPEN to CLOSED without trial calls) is a bug that throws, never a silent state change.
 */
public enum CircuitTransition {
  /** The failure or slow-call rate reached its threshold. */
  CLOSED_TO_OPEN(CircuitState.CLOSED, CircuitState.OPEN),
  /** {@code openFor} has passed: let trial calls through. */
  OPEN_TO_HALF_OPEN(CircuitState.OPEN, CircuitState.HALF_OPEN),
  /** Every trial call succeeded. */
  HALF_OPEN_TO_CLOSED(CircuitState.HALF_OPEN, CircuitState.CLOSED),
  /** A trial call failed. */
  HALF_OPEN_TO_OPEN(CircuitState.HALF_OPEN, CircuitState.OPEN);

  private final CircuitState from;
  private final CircuitState to;

  CircuitTransition(CircuitState from, CircuitState to) {
    this.from = from;
    this.to = to;
  }

  public CircuitState from() {
    return from;
  }

  public CircuitState to() {
    return to;
  }

  /**
   * The transition from {@code from} to {@code to}.
   *
   * @throws IllegalStateException when there is no such legal transition
   */
  public static CircuitTransition of(CircuitState from, CircuitState to) {
    for (CircuitTransition t : values()) {
      if (t.from == from && t.to == to) {
        return t;
      }
    }
    throw new IllegalStateException("illegal circuit breaker transition " + from + " -> " + to);
  }
}
