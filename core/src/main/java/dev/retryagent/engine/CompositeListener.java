package dev.retryagent.engine;

import java.util.List;
import java.util.function.Consumer;

/**
 * Fans events out to several listeners, isolating each from the others' failures: a listener must
 * never break a call. The engine always wraps its listener in one of these. A failure is reported
 * once per listener class and exception class ({@link InternalErrors}).
 */
final class CompositeListener implements RetryListener {
  private final List<RetryListener> listeners;
  private final InternalErrors errors;

  CompositeListener(List<RetryListener> listeners) {
    this(listeners, new InternalErrors(InternalErrors.stderr()));
  }

  CompositeListener(List<RetryListener> listeners, InternalErrors errors) {
    this.listeners = listeners;
    this.errors = errors;
  }

  private void each(Consumer<RetryListener> action) {
    for (RetryListener l : listeners) {
      try {
        action.accept(l);
      } catch (VirtualMachineError e) {
        throw e; // out of memory or stack: nothing sensible can go on
      } catch (Throwable e) {
        // swallowed on purpose, Errors too (a listener whose dependency is missing at run time
        // throws NoClassDefFoundError): see the class comment
        errors.report(
            "telling " + l.getClass().getName() + " about an event",
            e,
            "the call goes on, without what that listener records");
      }
    }
  }

  @Override
  public void onAttempt(RetryEvent e) {
    each(l -> l.onAttempt(e));
  }

  @Override
  public void onRetry(RetryEvent e) {
    each(l -> l.onRetry(e));
  }

  @Override
  public void onGiveUp(RetryEvent e) {
    each(l -> l.onGiveUp(e));
  }

  @Override
  public void onCallComplete(RetryEvent e) {
    each(l -> l.onCallComplete(e));
  }

  @Override
  public void onBreakerRejected(RetryEvent e) {
    each(l -> l.onBreakerRejected(e));
  }

  @Override
  public void onRateLimited(RetryEvent e) {
    each(l -> l.onRateLimited(e));
  }

  @Override
  public void onBreakerTransition(CircuitBreaker b, CircuitTransition t, String route) {
    each(l -> l.onBreakerTransition(b, t, route));
  }
}
