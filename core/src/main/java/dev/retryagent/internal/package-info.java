/**
 * Implementation, no compatibility promise. {@code dev.retryagent.internal} and its subpackages
 * hold what core's packages and the project's other modules (the agent, the fleet, the benchmarks)
 * share but applications must not use: their classes are public only because Java has no friend
 * packages (core is a plain jar, not a module that could export them to a few modules alone). The
 * package name is the promise: anything here may change or disappear in any release, and no public
 * signature outside {@code internal} names a type from here ({@code PublicApiTest} checks).
 *
 * <p>This package: {@link dev.retryagent.internal.Units}, the one parser and formatter of the
 * durations, sizes, ratios and lists that the configuration, the log lines and {@code explain} read
 * and write; {@link dev.retryagent.internal.AgentThreads}, the factory of every thread the engine
 * and its observers start; {@link dev.retryagent.internal.Waits}, the wait between attempts that a
 * cancel ends (OkHttp, Apache HttpClient); {@link dev.retryagent.internal.Discards}, how much of a
 * retried response's body is read to keep its connection; {@link
 * dev.retryagent.internal.TimeoutMillis}, an attempt's bound on a timeout of whole milliseconds.
 */
package dev.retryagent.internal;
