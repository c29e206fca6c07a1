/**
 * The agent jar's entry points ({@code Premain-Class}, {@code Agent-Class}, {@code Main-Class}) and
 * the commands that run without the agent's classes ({@code attach}). One of the two packages the
 * jar shows as plain classes (the other is {@code dev.retryagent.bootstrap}); everything else is
 * hidden under {@code inst/}. Part of the agent, not a library: no compatibility promise.
 */
package dev.retryagent.launcher;
