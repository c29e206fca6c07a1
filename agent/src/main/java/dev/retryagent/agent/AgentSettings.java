package dev.retryagent.agent;

import dev.retryagent.policy.Mode;

/**
 * What the installer needs to know from the configuration. A stand-in until {@code
 * dev.retryagent.config.AgentConfig} lands in core; {@link ConfigSeam#loadConfig} is where one
 * becomes the other.
 */
final class AgentSettings {
  private final Mode mode;
  private final boolean jdkHttp;
  private final String source;

  AgentSettings(Mode mode, boolean jdkHttp, String source) {
    if (mode == null || source == null) {
      throw new NullPointerException("mode and source are required");
    }
    this.mode = mode;
    this.jdkHttp = jdkHttp;
    this.source = source;
  }

  /** {@code agent.mode}. */
  Mode mode() {
    return mode;
  }

  /** {@code agent.clients.jdk-http}. */
  boolean jdkHttp() {
    return jdkHttp;
  }

  /** Where the configuration came from, for the start-up line. */
  String source() {
    return source;
  }

  /** The start-up line's configuration fragment. */
  String describe() {
    return "config=" + source + ", mode=" + mode.configName();
  }
}
