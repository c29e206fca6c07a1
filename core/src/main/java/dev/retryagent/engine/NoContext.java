package dev.retryagent.engine;

/**
 * {@link CallContext#NONE} and {@link CallContext.Scope#NONE}: no context, a scope that restores
 * nothing. A class rather than lambdas, so nothing is spun when the engine first uses them.
 */
final class NoContext implements CallContext, CallContext.Scope {
  // No static state: the two constants above create one each, in whichever order their
  // interfaces are initialised, without a cycle that could leave either null.
  NoContext() {}

  @Override
  public Scope enter() {
    return this;
  }

  @Override
  public void close() {}
}
