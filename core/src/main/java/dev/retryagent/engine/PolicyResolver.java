package dev.retryagent.engine;

import dev.retryagent.policy.Policy;

/**
 * Finds the policy of a request: the configuration's route table. Called once per call; must be
 * cheap and thread-safe.
 */
@FunctionalInterface
public interface PolicyResolver {
  /**
   * @param method upper-case method
   * @param host host as in the URL
   * @param port effective port
   * @param path path without query
   */
  Policy resolve(String method, String host, int port, String path);

  /** Every request gets {@code policy}. */
  static PolicyResolver always(Policy policy) {
    return (method, host, port, path) -> policy;
  }
}
