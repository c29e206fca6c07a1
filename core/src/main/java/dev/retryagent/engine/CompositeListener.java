package dev.retryagent.engine;

import java.util.List;

/**
 * Fans events out to several listeners, isolating each from the others' failures: a listener must
 * never break a call. The engine always wraps its listener in one of these. A failure is reported
 * once per listener class and exception class ({@link InternalErrors}). A listener's {@code
 * StackOverflowError} is its own bug like any other (the stack is unwound by the time it is caught
 * here, as the engine's own steps catch theirs): rethrown, it reached the application's call in
 * place of its outcome, or left an asynchronous one never told.
 *
 * <p>For the engine it also builds events only when a listener wants them ({@link
 * RetryListener#wants}), and sends the routine events of a call (its attempts and its end) to the
 * {@link CallCounter}s its {@link HostState} holds, for the listeners that count that way: a call
 * that succeeds at once then builds no event at all. Loops, no lambdas: nothing is allocated to
 * tell a listener.
 */
final class CompositeListener implements RetryListener {
  private final RetryListener[] listeners;
  private final InternalErrors errors;

  CompositeListener(List<RetryListener> listeners) {
    this(listeners, new InternalErrors(InternalErrors.stderr()));
  }

  CompositeListener(List<RetryListener> listeners, InternalErrors errors) {
    this.listeners = listeners.toArray(new RetryListener[0]);
    this.errors = errors;
  }

  private void failed(RetryListener l, Throwable e) {
    errors.report(
        "telling " + l.getClass().getName() + " about an event",
        e,
        "the call goes on, without what that listener records");
  }

  /** True when there is no listener at all. */
  boolean isEmpty() {
    return listeners.length == 0;
  }

  /** Each listener's counters for {@code route} and the target, or null when it has none. */
  CallCounter[] countersFor(String route, String scheme, String host, int port) {
    CallCounter[] counters = new CallCounter[listeners.length];
    boolean any = false;
    for (int i = 0; i < listeners.length; i++) {
      try {
        counters[i] = listeners[i].counterFor(route, scheme, host, port);
        any |= counters[i] != null;
      } catch (OutOfMemoryError | InternalError | UnknownError e) {
        throw e;
      } catch (Throwable failure) {
        failed(listeners[i], failure);
        // this listener gets events instead
      }
    }
    return any ? counters : null;
  }

  /** True when a listener wants an event of {@code type} about {@code attempt}. */
  boolean anyWants(RetryEvent.Type type, int attempt, boolean succeeded) {
    for (RetryListener l : listeners) {
      try {
        if (l.wants(type, attempt, succeeded)) {
          return true;
        }
      } catch (OutOfMemoryError | InternalError | UnknownError e) {
        throw e;
      } catch (Throwable failure) {
        failed(l, failure);
        // a listener that cannot answer is asked nothing more
      }
    }
    return false;
  }

  /**
   * Attempt {@code attempt} of {@code call} starts: counted by the counters of {@code counters}
   * (null: none), {@code counted} times (0 for a first attempt, counted at its end; 2 when the
   * first is counted with the second, see {@link CallCounter}). Returns the event for the other
   * listeners, built when one of them wants it, to be told by {@link #tellAttempt} once the call's
   * lock is let go ({@link CallEvents}); else null.
   */
  RetryEvent countAttempt(CallCounter[] counters, RetryCall call, int attempt, int counted) {
    boolean wanted = false;
    for (int i = 0; i < listeners.length; i++) {
      try {
        CallCounter c = counters == null ? null : counters[i];
        if (c != null) {
          for (int k = 0; k < counted; k++) {
            c.attempt();
          }
        } else if (!wanted && listeners[i].wants(RetryEvent.Type.ATTEMPT, attempt, false)) {
          wanted = true;
        }
      } catch (OutOfMemoryError | InternalError | UnknownError x) {
        throw x;
      } catch (Throwable failure) {
        failed(listeners[i], failure);
        // see emit()
      }
    }
    return wanted ? RetryEvent.attempt(call) : null;
  }

  /**
   * Tells {@code e}, from {@link #countAttempt}, to the listeners without counters that want it.
   */
  void tellAttempt(CallCounter[] counters, RetryEvent e) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        if ((counters == null || counters[i] == null)
            && listeners[i].wants(RetryEvent.Type.ATTEMPT, e.attempt(), false)) {
          listeners[i].onAttempt(e);
        }
      } catch (OutOfMemoryError | InternalError | UnknownError x) {
        throw x;
      } catch (Throwable failure) {
        failed(listeners[i], failure);
        // see emit()
      }
    }
  }

  /**
   * {@code call} ended; as {@link #countAttempt} for {@link RetryEvent#complete}, also built when
   * the call has a context (it hears every event), told by {@link #tellEnded}.
   */
  RetryEvent countEnd(
      CallCounter[] counters,
      RetryCall call,
      int attempt,
      AttemptResult result,
      GiveUpReason reason,
      boolean succeeded) {
    boolean wanted = call.context() != CallContext.NONE;
    for (int i = 0; i < listeners.length; i++) {
      try {
        CallCounter c = counters == null ? null : counters[i];
        if (c != null) {
          if (attempt != 1) {
            c.callEnded(succeeded);
          } else if (succeeded) {
            c.firstAttemptSucceeded(); // the first attempt is counted at its end (CallCounter)
          } else {
            c.attempt();
            c.callEnded(false);
          }
        } else if (!wanted
            && listeners[i].wants(RetryEvent.Type.CALL_COMPLETE, attempt, succeeded)) {
          wanted = true;
        }
      } catch (OutOfMemoryError | InternalError | UnknownError x) {
        throw x;
      } catch (Throwable failure) {
        failed(listeners[i], failure);
        // see emit()
      }
    }
    return wanted ? RetryEvent.complete(call, result, reason, succeeded) : null;
  }

  /** Tells {@code e}, from {@link #countEnd}, to the listeners without counters that want it. */
  void tellEnded(CallCounter[] counters, RetryEvent e) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        if ((counters == null || counters[i] == null)
            && listeners[i].wants(RetryEvent.Type.CALL_COMPLETE, e.attempt(), e.succeeded())) {
          listeners[i].onCallComplete(e);
        }
      } catch (OutOfMemoryError | InternalError | UnknownError x) {
        throw x;
      } catch (Throwable failure) {
        failed(listeners[i], failure);
        // see emit()
      }
    }
  }

  /** Tells every listener about {@code e}, by its type. */
  void emit(RetryEvent e) {
    emit(e.type(), e);
  }

  /** Tells every listener's method for {@code type} about {@code e}. */
  private void emit(RetryEvent.Type type, RetryEvent e) {
    for (RetryListener l : listeners) {
      try {
        tell(l, type, e);
      } catch (OutOfMemoryError | InternalError | UnknownError x) {
        throw x; // out of memory, or the JVM broken: nothing sensible can go on
      } catch (Throwable failure) {
        failed(l, failure);
        // swallowed on purpose, Errors too (a listener whose dependency is missing at run time
        // throws NoClassDefFoundError): see the class comment
      }
    }
  }

  private static void tell(RetryListener l, RetryEvent.Type type, RetryEvent e) {
    switch (type) {
      case ATTEMPT:
        l.onAttempt(e);
        break;
      case RETRY:
        l.onRetry(e);
        break;
      case GIVE_UP:
        l.onGiveUp(e);
        break;
      case CALL_COMPLETE:
        l.onCallComplete(e);
        break;
      case BREAKER_REJECTED:
        l.onBreakerRejected(e);
        break;
      case RATE_LIMITED:
        l.onRateLimited(e);
        break;
      default:
        throw new IllegalArgumentException(type.toString());
    }
  }

  @Override
  public boolean wants(RetryEvent.Type type, int attempt, boolean succeeded) {
    return anyWants(type, attempt, succeeded);
  }

  @Override
  public CallCounter counterFor(String route, String scheme, String host, int port) {
    return null; // a composite passes events on; the engine asks its members through countersFor
  }

  @Override
  public void onAttempt(RetryEvent e) {
    emit(RetryEvent.Type.ATTEMPT, e);
  }

  @Override
  public void onRetry(RetryEvent e) {
    emit(RetryEvent.Type.RETRY, e);
  }

  @Override
  public void onGiveUp(RetryEvent e) {
    emit(RetryEvent.Type.GIVE_UP, e);
  }

  @Override
  public void onCallComplete(RetryEvent e) {
    emit(RetryEvent.Type.CALL_COMPLETE, e);
  }

  @Override
  public void onBreakerRejected(RetryEvent e) {
    emit(RetryEvent.Type.BREAKER_REJECTED, e);
  }

  @Override
  public void onRateLimited(RetryEvent e) {
    emit(RetryEvent.Type.RATE_LIMITED, e);
  }

  @Override
  public void onBreakerTransition(CircuitBreaker b, CircuitTransition t, String route) {
    for (RetryListener l : listeners) {
      try {
        l.onBreakerTransition(b, t, route);
      } catch (OutOfMemoryError | InternalError | UnknownError x) {
        throw x;
      } catch (Throwable failure) {
        failed(l, failure);
        // see emit()
      }
    }
  }
}
