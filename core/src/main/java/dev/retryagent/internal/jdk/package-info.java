/**
 * Implementation, no compatibility promise (see {@code dev.retryagent.internal}): the {@code
 * java.net.http} machinery shared by the decorator ({@link dev.retryagent.jdk.RetryingHttpClient})
 * and the agent's hook on {@code HttpClientImpl}. {@link dev.retryagent.internal.jdk.JdkRetrying}
 * runs {@code send} and {@code sendAsync} through the engine over a {@link
 * dev.retryagent.internal.jdk.JdkTransport} (the real client, or the hooked method itself); the
 * request view, the replayable body and the body handler that decides on the status before the body
 * is read are package-private.
 */
package dev.retryagent.internal.jdk;
