/**
 * API: the YAML configuration of retry-agent (contract: docs/configuration.md, version 1), read and
 * checked the way the agent reads it. The public types are supported: they change only in a release
 * that says so (docs/library.md); every other class here is package-private, with no promise.
 *
 * <p>Entry points: {@link dev.retryagent.config.ConfigSources} decides which file to read and the
 * {@code mode}/{@code strict} overrides (agent argument, then system property, then environment
 * variable); {@link dev.retryagent.config.ConfigLoader} reads a file into an immutable {@link
 * dev.retryagent.config.AgentConfig}, whose {@link
 * dev.retryagent.config.AgentConfig#resolve(String, String, int, String)} gives the policy of a
 * request without allocating.
 *
 * <p>How a file is read: SnakeYAML composes a node tree only (no Java object is ever constructed
 * from the file) under size, alias and nesting limits; {@code ConfigWalker} walks it along {@code
 * ConfigSchema}, collecting every problem with its line, column and key path; {@code
 * ConfigAssembler} merges each route over {@code defaults} key by key, applies the keys to a {@code
 * ConfigDraft}, runs the cross-key checks and builds the policies. A file with any problem yields a
 * {@link dev.retryagent.config.ConfigException} listing them all, never a partial configuration.
 *
 * <p>Where a key is: each section has a file named for it ({@code AgentKeys}, {@code RouteKeys},
 * {@code RetryKeys}, {@code BackoffKeys}, {@code BudgetKeys}, {@code CircuitBreakerKeys}, {@code
 * RateLimitKeys}) that writes each of its keys once, as one statement with its type, bounds (the
 * policy classes' constants), default, doc and the setter its value goes to ({@code KeyVisitor}).
 * Adding a key is that statement and one row of docs/configuration.md.
 */
package dev.retryagent.config;
