/**
 * The agent proper, loaded from the jar's hidden {@code inst/} entries by the agent's own class
 * loader. {@link dev.retryagent.agent.Installer} reads the configuration, builds the runtime and
 * installs each instrumentation; the rest is one package per concern:
 *
 * <ul>
 *   <li>{@code jdk}, {@code okhttp}, {@code apache}, {@code urlconnection}: one package per
 *       instrumented client (transformer, bytecode hook, the handlers its hook numbers reach,
 *       installation); a new client is a new package shaped like these.
 *   <li>{@code tooling}: what every instrumentation shares (the bridge {@code
 *       java.lang.RetryAgentBridge} and its hook numbers, transformer base, bytecode prologue,
 *       pass-through tokens, other agents' class loaders).
 *   <li>{@code runtime}: what runs once the hooks are in (engine on first use, reload, exporters,
 *       dead letters, the agent's log lines).
 * </ul>
 */
package dev.retryagent.agent;
