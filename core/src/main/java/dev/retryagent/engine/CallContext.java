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

  /**
   * Tells the context an attempt is about to be sent, for a client whose tracing cannot see the
   * attempts one by one: Apache HttpClient, where the OpenTelemetry agent's span wraps the whole
   * {@code execute}, our retries inside it. The context may start a span for the attempt (the
   * OpenTelemetry one does for each resend; the first attempt is that client span's own) and set
   * its trace context on the attempt's request with {@code headers}. Called inside {@link #enter}
   * on the attempt's thread, once per attempt, before its request is sent; clients whose attempts
   * the tracer sees itself never call it. The default starts nothing.
   *
   * @param method the method as the attempt's request line writes it, its case as written (not
   *     {@link RequestInfo#method()}): the tracer's own instrumentation reads it from the request,
   *     and the HTTP semantic conventions compare it as it is ({@code get} is {@code _OTHER})
   */
  default <R> AttemptSpan startAttempt(String method, R request, HeaderSetter<R> headers) {
    return AttemptSpan.NONE;
  }

  /** The call is over; called once, after its last attempt ended and its last event. */
  default void end() {}

  /** The span of one attempt ({@link #startAttempt}), maybe none; ended once, on its thread. */
  interface AttemptSpan {
    /** No span. */
    AttemptSpan NONE = new NoContext();

    /**
     * The attempt is over: answered with {@code status}, or failed with {@code failure} (status
     * -1). Ended when the client returns the response to the chain above, before its body is read.
     */
    void end(int status, Throwable failure);
  }

  /** Sets a header on a client's request. */
  interface HeaderSetter<R> {
    void set(R request, String name, String value);
  }

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
