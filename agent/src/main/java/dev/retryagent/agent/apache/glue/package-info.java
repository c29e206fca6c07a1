/**
 * The agent's Apache HttpClient glue: defined once per HttpClient class loader, in a child loader
 * of it ({@code dev.retryagent.agent.tooling.GlueClassLoader}), never by the agent's own loader
 * (which cannot see HttpClient). Only this package and core's {@code dev.retryagent.apache4} /
 * {@code dev.retryagent.apache5} may reference HttpClient types; {@code Apache4Glue} names only 4.5
 * types and {@code Apache5Glue} only 5.x types, so each loads next to its own copy.
 */
package dev.retryagent.agent.apache.glue;
