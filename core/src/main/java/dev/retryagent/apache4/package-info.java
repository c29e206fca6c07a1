/**
 * API: retries for Apache HttpClient 4.5 ({@code CloseableHttpClient}, every {@code execute}
 * overload, with or without a {@code ResponseHandler}): {@link
 * dev.retryagent.apache4.ApacheRetrying4} runs a call's attempts; {@link
 * dev.retryagent.apache4.RetryingCloseableHttpClient} wires it by hand around any client, the agent
 * at {@code doExecute} of HttpClient's own clients.
 *
 * <p>Supported: it changes only in a release that says so (docs/library.md). Only this package and
 * its sibling for the other major version may reference HttpClient types: the agent defines each
 * again, with {@code dev.retryagent.internal.apache}, next to every HttpClient copy it finds.
 */
package dev.retryagent.apache4;
