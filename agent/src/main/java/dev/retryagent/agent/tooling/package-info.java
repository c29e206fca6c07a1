/**
 * What every instrumentation shares: the one bridge ({@code java.lang.RetryAgentBridge}, defined
 * into {@code java.base} by {@link dev.retryagent.agent.tooling.BridgeInstaller}) and its hook
 * numbers ({@link dev.retryagent.agent.tooling.Bridge}), the pass-through tokens, the transformer
 * base ({@link dev.retryagent.agent.tooling.HookTransformer}), the one bytecode prologue that hands
 * a hooked call to the bridge ({@link dev.retryagent.agent.tooling.BridgePrologue}), and the class
 * loaders of other agents to stay out of. Part of the agent, not a library: no compatibility
 * promise.
 */
package dev.retryagent.agent.tooling;
