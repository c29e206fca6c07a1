package dev.retryagent.engine;

/**
 * A context the agent carries through one call, e.g. the OpenTelemetry context that makes every
 * attempt a span of the same trace. The engine knows nothing about tracing: it makes the context
 * with the engine's {@link Factory} on the caller's thread when a call that is not a pass-through
 * starts (so that the factory can capture the caller's current context), makes it current around
 * each attempt on whichever thread starts it, tells it each of the call's events and ends it once,
 * after the last attempt ended and before the caller hears of the outcome.
 *
 * <p>Every method must be cheap and must not throw; the engine catches what a factory or {@link
 * #on} throws, but a scope must close on the thread that opened it, innermost first.
 */
public interface CallContext {
  /** No context: what every call has when the engine has no factory. */
  CallContext NONE = new NoContext();

  /** Makes this call's context current on this thread until the returned scope is closed. */
  Scope enter();

  /**
   * Makes the caller's own context (as it was when the call started) current: the caller's future
   * or callback is completed in it, never in the call's, which may hold state for the attempts only
   * (a span for the whole call, a resend counter).
   */
  default Scope enterCaller() {
    return Scope.NONE;
  }

  /**
   * An event of this call (every type but {@code ATTEMPT}, which the engine counts without building
   * an event), on the thread that produced it, before the listeners hear of it.
   */
  default void on(RetryEvent event) {}

  /** The call is over; called once, after its last attempt ended and its last event. */
  default void end() {}

  /** Closes without throwing. */
  interface Scope extends AutoCloseable {
    /** A scope that restores nothing. */
    Scope NONE = new NoContext();

    @Override
    void close();
  }

  /** Makes the context of a call that is not a pass-through, on the caller's thread. */
  interface Factory {
    /**
     * @return the call's context, or null for none
     */
    CallContext create(RetryCall call);
  }
}
