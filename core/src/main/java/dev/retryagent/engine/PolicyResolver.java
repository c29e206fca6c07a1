package dev.retryagent.engine;

import dev.retryagent.config.PathMask;
import dev.retryagent.policy.Policy;
import java.util.Collection;
import java.util.Collections;

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

  /**
   * Whether {@link #resolve} reads its {@code path}. When false the engine passes {@code null} and
   * never asks the request for its path, which some clients build anew on each ask (OkHttp's {@code
   * encodedPath()}, issue 13). Asked when the resolver is given to the engine, not per call.
   * Default: true.
   */
  default boolean readsPath() {
    return true;
  }

  /**
   * Every policy {@link #resolve} may return, or null when the resolver cannot list them. At a
   * reload the engine stops tracking (and reporting) the breakers of sections that none of them has
   * any more: a removed route's, a changed section's. Default: null, every breaker is kept until
   * the registry's bound drops it.
   */
  default Collection<Policy> policies() {
    return null;
  }

  /**
   * The configuration's {@code agent.redact.pathSegments}: {@link RetryEvent#toString()} writes the
   * path as the agent's own log lines do, masked by it, so that a listener logging an event shows
   * no more than the agent does. Asked when the resolver is given to the engine, not per call.
   * Default: {@link PathMask#NONE}.
   */
  default PathMask pathMask() {
    return PathMask.NONE;
  }

  /** Every request gets {@code policy}; the path is not read. */
  static PolicyResolver always(Policy policy) {
    return new PolicyResolver() {
      @Override
      public Policy resolve(String method, String host, int port, String path) {
        return policy;
      }

      @Override
      public boolean readsPath() {
        return false;
      }

      @Override
      public Collection<Policy> policies() {
        return Collections.singletonList(policy);
      }
    };
  }
}
