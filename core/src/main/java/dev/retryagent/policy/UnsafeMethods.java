package dev.retryagent.policy;

import java.util.Locale;

/** What may be retried for a method that is not in {@code retry.methods} (POST, PATCH, ...). */
public enum UnsafeMethods implements ConfigNamed {
  /** Never retried. */
  NEVER("never"),
  /** Retried only after a {@link TransportFailure#CONNECT} failure: the request was never sent. */
  IF_NOT_SENT("if-not-sent"),
  /**
   * As {@link #IF_NOT_SENT}, and also on any retryable outcome when the request carries the
   * idempotency-key header (the server deduplicates).
   */
  IF_IDEMPOTENCY_KEY("if-idempotency-key"),
  /** Retried like an idempotent method. Only for servers known to deduplicate. */
  ALWAYS("always");

  private final String configName;

  UnsafeMethods(String configName) {
    this.configName = configName;
  }

  /** The name used in YAML. */
  @Override
  public String configName() {
    return configName;
  }

  /** The mode with this YAML name, or null. */
  public static UnsafeMethods fromConfigName(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    for (UnsafeMethods m : values()) {
      if (m.configName.equals(n)) {
        return m;
      }
    }
    return null;
  }
}
