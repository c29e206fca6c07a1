/**
 * The {@code java.net.http} instrumentation: the transformer that finds {@code HttpClientImpl}, the
 * bytecode hook on {@code send} and {@code sendAsync}, and the entry its hook numbers on {@code
 * java.lang.RetryAgentBridge} reach, which runs the call through core's {@code
 * dev.retryagent.internal.jdk.JdkRetrying}. Part of the agent, not a library: no compatibility
 * promise.
 */
package dev.retryagent.agent.jdk;
