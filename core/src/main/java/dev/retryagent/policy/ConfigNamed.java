package dev.retryagent.policy;

/**
 * An enum constant with a YAML spelling ({@code full-jitter}, {@code if-idempotency-key}). The
 * configuration schema reads it through this interface rather than a method reference per enum: a
 * method reference spins a class at run time, and the schema is built in the agent's {@code
 * premain}.
 */
public interface ConfigNamed {
  /** The name as written in the YAML configuration. */
  String configName();
}
