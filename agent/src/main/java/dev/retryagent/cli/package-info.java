/**
 * The commands that read a configuration: {@code validate} and {@code explain}. Loaded from {@code
 * inst/} in the agent's own class loader; {@code explain} asks core's decision ladder ({@code
 * dev.retryagent.engine.RetryRules}), so it cannot disagree with the engine. Part of the agent, not
 * a library: no compatibility promise.
 */
package dev.retryagent.cli;
