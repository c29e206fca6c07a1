/**
 * The OkHttp instrumentation: the transformer and bytecode hook on {@code OkHttpClient.Builder} and
 * {@code RealCall.enqueue}/{@code cancel}, {@code Dispatcher.cancelAll}, the class loader that
 * defines the glue ({@code dev.retryagent.agent.okhttp.glue}) and core's {@code
 * dev.retryagent.okhttp} next to each OkHttp copy, and the entry its hook numbers on {@code
 * java.lang.RetryAgentBridge} reach. Part of the agent, not a library: no compatibility promise.
 */
package dev.retryagent.agent.okhttp;
