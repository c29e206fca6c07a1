/**
 * The agent's OkHttp glue: defined once per OkHttp class loader, in a child loader of it, never by
 * the agent's own loader (which cannot see OkHttp). Nothing outside this package and {@code
 * dev.retryagent.okhttp} may reference {@code okhttp3} types.
 */
package dev.retryagent.agent.okhttp;
