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
      } catch (RuntimeException | LinkageError ignored) {
        // the call and the listeners go on as without tracing
      }
    }
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
