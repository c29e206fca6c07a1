package dev.retryagent.engine;

import java.util.List;

/**
 * Told about everything the engine does, so logging, metrics and dead letters plug in without the
 * engine knowing them. Methods run on the thread of the call (or of the breaker transition) and
 * must be fast and must not throw; an exception from a listener is swallowed so it can never break
 * a call.
 */
public interface RetryListener {
  default void onAttempt(RetryEvent event) {}

  default void onRetry(RetryEvent event) {}

  default void onGiveUp(RetryEvent event) {}

  default void onCallComplete(RetryEvent event) {}

  default void onBreakerRejected(RetryEvent event) {}

  default void onRateLimited(RetryEvent event) {}

  /**
   * @param route the route whose call created the breaker (a host breaker may serve several routes
   *     that share its policy)
   */
  default void onBreakerTransition(
      CircuitBreaker breaker, CircuitTransition transition, String route) {}

  /** A listener that does nothing. */
  RetryListener NONE = new RetryListener() {};

  /** Tells each of {@code listeners} in order; one failing does not stop the others. */
  static RetryListener composite(List<RetryListener> listeners) {
    List<RetryListener> copy = List.copyOf(listeners);
    return new CompositeListener(copy);
  }
}
