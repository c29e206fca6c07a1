/**
 * The agent proper, loaded from the jar's hidden {@code inst/} entries by the agent's own class
 * loader: configuration seam, the {@code java.net.http} hook (bytecode) and its handler.
 */
package dev.retryagent.agent;
