package dev.retryagent.agent;

/** The agent's own messages: one line each on stderr, prefixed so they are easy to find. */
final class AgentLog {
  private AgentLog() {}

  static void error(String message) {
    System.err.println("retry-agent: " + message);
  }

  static void info(String message) {
    System.err.println("retry-agent: " + message);
  }
}
