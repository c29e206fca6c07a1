/**
 * What every instrumentation shares: the transformer base ({@link
 * dev.retryagent.agent.tooling.HookTransformer}), the one bytecode prologue that hands a hooked
 * call to its bootstrap bridge ({@link dev.retryagent.agent.tooling.BridgePrologue}), and the class
 * loaders of other agents to stay out of. Part of the agent, not a library: no compatibility
 * promise.
 */
package dev.retryagent.agent.tooling;
