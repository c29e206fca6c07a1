/**
 * Retries for Apache HttpClient 4.5 ({@code CloseableHttpClient}, every {@code execute} overload,
 * with or without a {@code ResponseHandler}): {@link dev.retryagent.apache4.ApacheRetrying4} runs a
 * call's attempts; {@link dev.retryagent.apache4.RetryingCloseableHttpClient} wires it by hand
 * around any client, the agent at {@code doExecute} of HttpClient's own clients.
 */
package dev.retryagent.apache4;
