package dev.retryagent.engine;

import java.util.ArrayList;

/**
 * The events of one call, made under its lock and told after it lets go ({@link
 * RetryCall#tellQueued}): a listener (or a call context's {@code on}) that blocks, an application's
 * listener stuck on I/O, then holds up no step of that call on another thread. A cancel ({@code
 * CompletableFuture.cancel} of a {@code sendAsync}) that ends the call while a listener blocks on
 * the thread of its attempt returns at once, its events queued behind that listener's.
 *
 * <p>One thread tells a call's events at a time, in the order they were made (under the call's
 * lock), each once: a thread whose step made events and finds another thread telling leaves them to
 * it. So a retry is never told after the call's end, whichever threads made the two.
 *
 * <p>Counters ({@link CallCounter}) are not queued: they count under the lock as before, with no
 * event object. Made on a call's first event only; guarded by the call's lock, but for {@link
 * #any}.
 */
final class CallEvents {
  private ArrayList<RetryEvent> queued;
  private boolean telling;

  /** Under the call's lock: {@code e} is told once the lock is let go. */
  void add(RetryEvent e) {
    if (queued == null) {
      queued = new ArrayList<>(4);
    }
    queued.add(e);
  }

  /**
   * Whether events wait to be told. Read without the lock by the thread whose step just queued
   * them, which sees its own write, or null once another thread took them to tell: either way they
   * are told. Another thread's events it misses are told by that thread.
   */
  boolean any() {
    return queued != null;
  }

  /**
   * Tells {@code call}'s queued events, unless another thread does: called with the call's lock let
   * go. What the listeners let through (out of memory, a broken JVM) leaves the events of that
   * batch untold, the later ones told by the next step.
   */
  static void tell(RetryCall call, CallEvents events) {
    synchronized (call) {
      if (events.telling || events.queued == null) {
        return;
      }
      events.telling = true;
    }
    boolean over = false;
    try {
      while (true) {
        ArrayList<RetryEvent> batch;
        synchronized (call) {
          batch = events.queued;
          events.queued = null;
          if (batch == null) {
            events.telling = false;
            over = true;
            return;
          }
        }
        for (int i = 0; i < batch.size(); i++) {
          tell(call, batch.get(i));
        }
      }
    } finally {
      if (!over) {
        synchronized (call) {
          events.telling = false;
        }
      }
    }
  }

  /** One event, to the listeners that take it as an event and to the call's context. */
  private static void tell(RetryCall call, RetryEvent e) {
    RetryEngine engine = call.state.engine;
    switch (e.type()) {
      case ATTEMPT:
        engine.listeners().tellAttempt(call.state.counters, e);
        break;
      case CALL_COMPLETE:
        engine.listeners().tellEnded(call.state.counters, e);
        NoContext.tell(e.context(), e);
        break;
      default:
        engine.emit(e);
    }
  }
}
