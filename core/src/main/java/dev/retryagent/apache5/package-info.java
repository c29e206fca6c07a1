/**
 * API: retries for Apache HttpClient 5.x classic ({@code CloseableHttpClient}, every {@code
 * execute} overload, with or without an {@code HttpClientResponseHandler}): {@link
 * dev.retryagent.apache5.RetryExecHandler}, an {@code ExecChainHandler} put first in the client's
 * execution chain; and for the async client ({@code CloseableHttpAsyncClient}): {@link
 * dev.retryagent.apache5.AsyncRetryExecHandler}, first in its async chain. Compiled against
 * HttpClient 5.1, the oldest 5.x supported.
 *
 * <p>Supported: it changes only in a release that says so (docs/library.md). Only this package and
 * its sibling for the other major version may reference HttpClient types: the agent defines each
 * again, with {@code dev.retryagent.internal.apache}, next to every HttpClient copy it finds.
 */
package dev.retryagent.apache5;
