package dev.retryagent.engine;

import java.util.List;

/**
 * Told about everything the engine does, so logging, metrics and dead letters plug in without the
 * engine knowing them. Methods run on the thread of the call (or of the breaker transition) and
 * must be fast and must not throw; an exception from a listener is swallowed so it can never break
 * a call.
 *
 * <p>A call's events are told outside the call's lock, in the order they were made, each once, by
 * one thread at a time: when two threads of one call make events at once (an attempt's completion
 * and a cancel), the one telling tells the other's too, so an event may come on another thread of
 * the call, after the step that made it returned. A listener that blocks holds up the thread that
 * tells, not the call's other threads. {@link #onBreakerTransition} is told outside the call's lock
 * and the breaker's, in the order the breaker moved, each once, by one thread at a time: a
 * transition made while another thread tells one of that breaker is told by that thread. {@link
 * CallCounter}s count under the call's lock.
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

  /**
   * Whether this listener does anything with an event of {@code type} about attempt {@code attempt}
   * of a call ({@code succeeded}: for {@link RetryEvent.Type#CALL_COMPLETE}, the call ended with a
   * success): when no listener does, the engine builds no event. Asked before each event, so the
   * answer may change (a reloaded log level); a yes that then does nothing is harmless, a no must
   * mean the listener would ignore the event. Default: yes.
   */
  default boolean wants(RetryEvent.Type type, int attempt, boolean succeeded) {
    return true;
  }

  /**
   * Counters for the attempts and ends of calls to one route and target, so that the engine counts
   * them without an event per call. When this returns a counter, the engine tells it instead of
   * {@link #onAttempt} and {@link #onCallComplete} about calls of that route and target; null (the
   * default) keeps those events coming. Asked once per route and target, and again after a reload
   * or once the engine forgot the host; must not throw.
   *
   * @param route the route whose policy applies
   * @param scheme {@code http} or {@code https}
   * @param host the host as in the URL
   * @param port the effective port
   */
  default CallCounter counterFor(String route, String scheme, String host, int port) {
    return null;
  }

  /** A listener that does nothing. */
  RetryListener NONE = new RetryListener() {};

  /** Tells each of {@code listeners} in order; one failing does not stop the others. */
  static RetryListener composite(List<RetryListener> listeners) {
    List<RetryListener> copy = List.copyOf(listeners);
    return new CompositeListener(copy);
  }
}
