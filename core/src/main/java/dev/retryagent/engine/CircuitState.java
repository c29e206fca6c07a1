package dev.retryagent.engine;

import java.util.Locale;

/** The three states of a circuit breaker. */
public enum CircuitState {
  /** Calls flow; outcomes are recorded in the window. */
  CLOSED,
  /** Calls fail at once, without touching the network, until {@code openFor} has passed. */
  OPEN,
  /** A few trial calls flow; all must succeed to close, any failure opens again. */
  HALF_OPEN;

  public String label() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }
}
