/**
 * {@link java.net.HttpURLConnection} with retries: {@link
 * dev.retryagent.urlconnection.RetryingUrlConnections} returns a facade over the JDK's own
 * connection whose attempts the engine decides; the agent hands the same facade to every connection
 * the JDK's http and https handlers make. The facade's logic is in {@code ConnectionView} and
 * {@code UrlExchange}; what a fresh attempt needs in {@code UrlRequest}; the body in {@code
 * RequestBody}; how attempts are opened in {@link dev.retryagent.urlconnection.UrlTransport}. See
 * docs/url-connection.md.
 */
package dev.retryagent.urlconnection;
