/**
 * Retries for Apache HttpClient 5.x classic ({@code CloseableHttpClient}, every {@code execute}
 * overload, with or without an {@code HttpClientResponseHandler}): {@link
 * dev.retryagent.apache5.RetryExecHandler}, an {@code ExecChainHandler} put first in the client's
 * execution chain. Compiled against HttpClient 5.1, the oldest 5.x supported.
 */
package dev.retryagent.apache5;
