package dev.retryagent.engine;

/**
 * {@link CallContext#NONE}, {@link CallContext.Scope#NONE} and {@link
 * CallContext.AttemptSpan#NONE}: no context, a scope that restores nothing, no span (a class rather
 * than lambdas, so nothing is spun when the engine first uses them); and how the engine makes and
 * tells a call's context without its tracing ever failing the call.
 */
final class NoContext implements CallContext, CallContext.Scope, CallContext.AttemptSpan {
  // No static state: the three constants above create one each, in whichever order their
  // interfaces are initialised, without a cycle that could leave either null.
  NoContext() {}

  /** The call's context from {@code factory}; tracing never breaks a call (nor does its bug). */
  static CallContext of(CallContext.Factory factory, RetryCall call) {
    try {
      CallContext c = factory.create(call);
      return c == null ? CallContext.NONE : c;
    } catch (RuntimeException | LinkageError e) {
      return CallContext.NONE;
    }
  }

  /** Tells {@code context} about {@code e}; a failure of the call's tracing is dropped. */
  static void tell(CallContext context, RetryEvent e) {
    if (context != CallContext.NONE) {
      try {
        context.on(e);
      } catch (RuntimeException | LinkageError | StackOverflowError ignored) {
        // the call and the listeners go on as without tracing (an overflow too: unwound by now)
      }
    }
  }

  /*
   * The engine's loops enter, leave and end a call's context through these: a context is any
   * CallContext.Factory's (RetryEngine.Builder.callContexts), trusted by the interface's contract
   * not to throw, and what it throws anyway must not become the call's outcome. Before, a scope
   * that failed to enter or close failed the attempt with it (the request never sent, or its
   * response lost), and an end that failed replaced the call's outcome. Said once per cause; the
   * call goes on outside the context. No object per call: a context-less call returns at once.
   */

  /**
   * Makes {@code call}'s context current ({@code caller}: the caller's own); NONE if that fails.
   */
  static CallContext.Scope enter(RetryCall call, boolean caller) {
    CallContext c = call.context();
    if (c == CallContext.NONE) {
      return CallContext.Scope.NONE;
    }
    try {
      CallContext.Scope scope = caller ? c.enterCaller() : c.enter();
      return scope == null ? CallContext.Scope.NONE : scope;
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      failed(call, "entering a call's context", e);
      return CallContext.Scope.NONE;
    }
  }

  /** Closes {@code scope} from {@link #enter}. */
  static void close(RetryCall call, CallContext.Scope scope) {
    if (scope == CallContext.Scope.NONE) {
      return;
    }
    try {
      scope.close();
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      failed(call, "leaving a call's context", e);
    }
  }

  /** Ends {@code call}'s context. */
  static void end(RetryCall call) {
    CallContext c = call.context();
    if (c == CallContext.NONE) {
      return;
    }
    try {
      c.end();
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      failed(call, "ending a call's context", e);
    }
  }

  /** {@code call}'s context's span for an attempt; NONE if it has none or starting one fails. */
  static <R> CallContext.AttemptSpan startAttempt(
      RetryCall call, String method, R request, CallContext.HeaderSetter<R> headers) {
    CallContext c = call.context();
    if (c == CallContext.NONE) {
      return CallContext.AttemptSpan.NONE;
    }
    try {
      CallContext.AttemptSpan span = c.startAttempt(method, request, headers);
      return span == null ? CallContext.AttemptSpan.NONE : span;
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      failed(call, "starting an attempt's span", e);
      return CallContext.AttemptSpan.NONE;
    }
  }

  /** Ends {@code span} from {@link #startAttempt}. */
  static void endAttempt(
      RetryCall call, CallContext.AttemptSpan span, int status, Throwable failure) {
    if (span == CallContext.AttemptSpan.NONE) {
      return;
    }
    try {
      span.end(status, failure);
    } catch (RuntimeException | LinkageError | StackOverflowError e) {
      failed(call, "ending an attempt's span", e);
    }
  }

  private static void failed(RetryCall call, String where, Throwable e) {
    call.state.engine.internalError(where, e, "the call goes on, its outcome as it is");
  }

  @Override
  public Scope enter() {
    return this;
  }

  @Override
  public void close() {}

  @Override
  public void end(int status, Throwable failure) {}
}
