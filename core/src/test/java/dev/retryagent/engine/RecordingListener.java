package dev.retryagent.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/** Keeps every event and breaker transition it is told about, in order. */
final class RecordingListener implements RetryListener {
  private final List<RetryEvent> events = new ArrayList<>();
  private final List<CircuitTransition> transitions = new ArrayList<>();
  private final List<String> transitionRoutes = new ArrayList<>();

  @Override
  public synchronized void onAttempt(RetryEvent event) {
    events.add(event);
  }

  @Override
  public synchronized void onRetry(RetryEvent event) {
    events.add(event);
  }

  @Override
  public synchronized void onGiveUp(RetryEvent event) {
    events.add(event);
  }

  @Override
  public synchronized void onCallComplete(RetryEvent event) {
    events.add(event);
  }

  @Override
  public synchronized void onBreakerRejected(RetryEvent event) {
    events.add(event);
  }

  @Override
  public synchronized void onRateLimited(RetryEvent event) {
    events.add(event);
  }

  @Override
  public synchronized void onBreakerTransition(
      CircuitBreaker breaker, CircuitTransition transition, String route) {
    transitions.add(transition);
    transitionRoutes.add(route);
  }

  synchronized List<RetryEvent> events() {
    return new ArrayList<>(events);
  }

  synchronized List<RetryEvent> events(RetryEvent.Type type) {
    return events.stream().filter(e -> e.type() == type).collect(Collectors.toList());
  }

  synchronized List<RetryEvent.Type> types() {
    return events.stream().map(RetryEvent::type).collect(Collectors.toList());
  }

  synchronized List<CircuitTransition> transitions() {
    return new ArrayList<>(transitions);
  }

  synchronized List<String> transitionRoutes() {
    return new ArrayList<>(transitionRoutes);
  }

  /** The single CALL_COMPLETE event; fails when there is not exactly one. */
  synchronized RetryEvent complete() {
    List<RetryEvent> c = events(RetryEvent.Type.CALL_COMPLETE);
    if (c.size() != 1) {
      throw new AssertionError("expected one CALL_COMPLETE, got " + c);
    }
    return c.get(0);
  }

  synchronized void clear() {
    events.clear();
    transitions.clear();
    transitionRoutes.clear();
  }
}
