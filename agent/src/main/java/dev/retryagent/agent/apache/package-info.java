/**
 * The Apache HttpClient instrumentation (4.5, 5.x classic and async): the transformer and bytecode
 * hook ({@code doExecute} of 4.5's clients, the constructors of 5.x's {@code HttpClientBuilder},
 * {@code HttpAsyncClientBuilder} and {@code H2AsyncClientBuilder}), the loaders that define the
 * glue ({@code dev.retryagent.agent.apache.glue}) and core's adapters next to each HttpClient copy,
 * and the entries its hook numbers on {@code java.lang.RetryAgentBridge} reach. Part of the agent,
 * not a library: no compatibility promise.
 */
package dev.retryagent.agent.apache;
