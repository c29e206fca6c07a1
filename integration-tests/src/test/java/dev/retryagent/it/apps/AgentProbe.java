package dev.retryagent.it.apps;

import java.lang.reflect.Method;

/**
 * Reads the agent's counters from its bridge, {@code java.lang.RetryAgentBridge}, which the agent
 * defines into {@code java.base} at start-up: public, so any class may read it by reflection.
 */
final class AgentProbe {
  /** Hook numbers of {@code dev.retryagent.agent.tooling.Bridge}. */
  static final int JDK_SEND = 0;

  static final int JDK_SEND_ASYNC = 1;
  static final int OKHTTP_ENQUEUE = 3;
  static final int APACHE_EXECUTE = 6;
  static final int URL_OPENED = 7;

  private AgentProbe() {}

  /**
   * The number of {@code java.net.http} calls the hook handed to the agent and the agent took; "0"
   * when the agent runs without its bridge (it hooked nothing: mode off, an invalid configuration),
   * "absent" without the agent.
   */
  static String interceptedCalls() {
    return handled(JDK_SEND, JDK_SEND_ASYNC);
  }

  /** The sum of the bridge's {@code handled(hook)} over {@code hooks}, as above. */
  static String handled(int... hooks) {
    try {
      Class<?> bridge = Class.forName("java.lang.RetryAgentBridge", true, null);
      Method handled = bridge.getMethod("handled", int.class);
      long sum = 0;
      for (int hook : hooks) {
        sum += (Long) handled.invoke(null, hook);
      }
      return String.valueOf(sum);
    } catch (ClassNotFoundException e) {
      return System.getProperty("retryagent.status") == null ? "absent" : "0";
    } catch (ReflectiveOperationException e) {
      return "error:" + e;
    }
  }
}
