/**
 * The agent's OpenTelemetry glue: compiled against the plain OpenTelemetry API, defined (with the
 * API's names relocated to the OpenTelemetry agent's) by {@code
 * dev.retryagent.agent.otel.OtelSupport} only when the OpenTelemetry Java agent runs in the JVM,
 * never by the agent's own loader. Only this package may reference {@code io.opentelemetry} types.
 */
package dev.retryagent.agent.otel.glue;
