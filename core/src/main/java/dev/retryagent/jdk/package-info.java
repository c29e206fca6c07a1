/**
 * API: retries for {@code java.net.http} in code you can change. {@link
 * dev.retryagent.jdk.RetryingHttpClient} decorates an {@link java.net.http.HttpClient} and runs
 * {@code send} and {@code sendAsync} through a {@link dev.retryagent.engine.RetryEngine}; the agent
 * gives the same behaviour to clients it cannot see being built. Supported: it changes only in a
 * release that says so (docs/library.md).
 *
 * <p>The machinery the decorator shares with the agent's hook (the request view, the replayable
 * body, the body handler that decides on the status) is in {@code dev.retryagent.internal.jdk},
 * with no promise.
 */
package dev.retryagent.jdk;
