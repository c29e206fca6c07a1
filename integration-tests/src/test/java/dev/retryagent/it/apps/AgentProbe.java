package dev.retryagent.it.apps;

/** Reads the agent's intercepted-call counter, if the agent is there (it is on the boot path). */
final class AgentProbe {
  private AgentProbe() {}

  /** The number of calls the hook handed to the agent, or "absent" without the agent. */
  static String interceptedCalls() {
    try {
      Class<?> bridge = Class.forName("dev.retryagent.bootstrap.JdkHttpBridge", true, null);
      return String.valueOf(bridge.getMethod("interceptedCalls").invoke(null));
    } catch (ClassNotFoundException e) {
      return "absent";
    } catch (ReflectiveOperationException e) {
      return "error:" + e;
    }
  }
}
