package dev.retryagent.agent.runtime;

/** The agent's own messages: one line each on stderr, prefixed so they are easy to find. */
public final class AgentLog {
  private AgentLog() {}

  public static void error(String message) {
    System.err.println("retry-agent: " + message);
  }

  public static void info(String message) {
    System.err.println("retry-agent: " + message);
  }
}
