/**
 * Implementation, no compatibility promise (see {@code dev.retryagent.internal}): what the Apache
 * HttpClient adapters ({@code dev.retryagent.apache4} for 4.5, {@code dev.retryagent.apache5} for
 * 5.x classic) share, with no Apache type in it: the record of the exchanges the client itself made
 * inside one attempt. The agent defines this package, with the adapter, next to each HttpClient
 * copy.
 */
package dev.retryagent.internal.apache;
