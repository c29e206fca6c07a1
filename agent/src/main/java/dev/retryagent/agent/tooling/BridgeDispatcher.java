package dev.retryagent.agent.tooling;

/**
 * The agent's instance of {@code java.lang.RetryAgentBridge}: every hooked call reaches {@link
 * Bridge#dispatch} through it, a virtual call that the JIT inlines.
 *
 * <p>Compiled against the bridge's source ({@code --patch-module java.base=src/bridge}), and loaded
 * only once {@link BridgeInstaller} has defined the bridge: its superclass exists from then on. No
 * other class may name this one where the verifier would load it (a field, a parameter, an
 * assignment to the bridge's type) before that.
 */
final class BridgeDispatcher extends java.lang.RetryAgentBridge {
  private BridgeDispatcher() {}

  /** Makes the agent's dispatcher the bridge's, once per JVM. */
  static void installIntoTheBridge() {
    install(new BridgeDispatcher(), Bridge.NULL_RESULT);
  }

  @Override
  protected Object dispatch(int hook, Object a, Object b, Object c, Object d, Object e, Object f) {
    return Bridge.dispatch(hook, a, b, c, d, e, f);
  }
}
