/**
 * Implementation, no compatibility promise (see {@code dev.retryagent.internal}): what an operator
 * sees of the agent, as engine listeners and exporters that the agent wires from the configuration.
 * An application using the library writes its own {@link dev.retryagent.engine.RetryListener}.
 *
 * <ul>
 *   <li>{@link dev.retryagent.internal.observe.LogListener}: one readable line per retry, give-up,
 *       rejection and breaker transition ({@code agent.log.level}).
 *   <li>{@link dev.retryagent.internal.observe.RetryMetrics}: lock-free counters per route and
 *       target host, bounded in the number of hosts; read by {@link
 *       dev.retryagent.internal.observe.ExitSummary}, {@link
 *       dev.retryagent.internal.observe.JmxMetrics} ({@code agent.metrics.jmx}) and {@link
 *       dev.retryagent.internal.observe.PrometheusServer} ({@code agent.metrics.prometheus}).
 *   <li>{@link dev.retryagent.internal.observe.DeadLetterWriter}: one JSON line per call that gave
 *       up ({@code agent.deadLetter.path}).
 * </ul>
 *
 * <p>Nothing here may break a call: listener methods catch their own failures, and a failure of an
 * exporter or of the dead-letter file is reported once through an injected error sink. Nothing
 * printed or exported contains a query string, a header value or an idempotency key: events carry
 * only method, scheme, host, port and path, and exception text goes through {@link
 * dev.retryagent.internal.observe.Sanitizer}.
 */
package dev.retryagent.internal.observe;
