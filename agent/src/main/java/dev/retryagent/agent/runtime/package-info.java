/**
 * What runs once the hooks are in, built from one configuration and updated by reloads: the engine
 * (built on the first intercepted call), its listeners (log lines, metrics, dead letters), the
 * exporters (JMX, Prometheus), the reload watcher and the agent's own log. Part of the agent, not a
 * library: no compatibility promise.
 */
package dev.retryagent.agent.runtime;
