/**
 * The agent's OkHttp glue: defined once per OkHttp class loader, in a child loader of it ({@code
 * dev.retryagent.agent.tooling.GlueClassLoader}), never by the agent's own loader (which cannot see
 * OkHttp). Only this package and {@code dev.retryagent.okhttp} may reference {@code okhttp3} types;
 * what they share with the rest of the agent ({@code OkHttpSupport}, the engine, the bridge) comes
 * from the agent's loader.
 */
package dev.retryagent.agent.okhttp.glue;
