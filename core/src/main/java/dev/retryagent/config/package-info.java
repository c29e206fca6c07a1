/**
 * The YAML configuration of retry-agent (contract: shared/CONFIG.md, version 1).
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
 * ConfigSchema}, the single description of every key (type, bounds, default, doc, where the value
 * goes), collecting every problem with its line, column and key path; {@code ConfigAssembler}
 * merges each route over {@code defaults} key by key, runs the cross-key checks and builds the
 * policies. A file with any problem yields a {@link dev.retryagent.config.ConfigException} listing
 * them all, never a partial configuration.
 */
package dev.retryagent.config;
