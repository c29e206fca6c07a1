package dev.retryagent.agent.runtime;

import dev.retryagent.config.FleetConfig;
import dev.retryagent.engine.FleetLimits;
import dev.retryagent.fleet.FleetMode;
import java.util.function.Consumer;

/**
 * The one class of the agent that names the fleet module. {@link AgentRuntime} calls it only when
 * the configuration has a {@code fleet} section, so without one neither the fleet classes nor the
 * Redis client are ever loaded (the JVM loads a class when code that names it first runs, and
 * {@code AgentRuntime} holds the result only as core's {@link FleetLimits}).
 */
final class FleetStarter {
  private FleetStarter() {}

  /**
   * Joins the fleet; returns at once (the fleet's own daemon thread connects to Redis), or null
   * after saying why when the fleet code cannot run at all (then fleet-scoped limits are per host).
   *
   * @param previous the fleet a reload leaves (or left earlier), whose 429 pauses still hold and
   *     whose counters go on; null for none
   */
  static FleetLimits start(FleetConfig config, Consumer<String> log, FleetLimits previous) {
    try {
      return FleetMode.start(config, log, previous);
    } catch (RuntimeException | LinkageError e) {
      log.accept(
          "retry-agent: fleet mode not started ("
              + e.getClass().getName()
              + "); routes with rateLimit.scope: fleet are limited per host meanwhile");
      return null;
    }
  }
}
