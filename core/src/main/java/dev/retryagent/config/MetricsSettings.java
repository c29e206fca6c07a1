package dev.retryagent.config;

import dev.retryagent.internal.engine.TargetKey;
import java.util.Objects;

/**
 * {@code agent.metrics}: JMX MBeans (on by default) and an optional Prometheus text endpoint (off
 * by default, on {@value #DEFAULT_PROMETHEUS_HOST}:{@value #DEFAULT_PROMETHEUS_PORT}). Immutable
 * and thread-safe.
 */
public final class MetricsSettings {
  public static final String DEFAULT_PROMETHEUS_HOST = "127.0.0.1";
  public static final int DEFAULT_PROMETHEUS_PORT = 9464;

  private static final MetricsSettings DEFAULTS =
      new MetricsSettings(true, false, DEFAULT_PROMETHEUS_HOST, DEFAULT_PROMETHEUS_PORT);

  private final boolean jmx;
  private final boolean prometheusEnabled;
  private final String prometheusHost;
  private final int prometheusPort;

  MetricsSettings(
      boolean jmx, boolean prometheusEnabled, String prometheusHost, int prometheusPort) {
    this.jmx = jmx;
    this.prometheusEnabled = prometheusEnabled;
    this.prometheusHost = Objects.requireNonNull(prometheusHost, "prometheusHost");
    this.prometheusPort = prometheusPort;
  }

  /** JMX on, Prometheus off (127.0.0.1:9464 when turned on). */
  public static MetricsSettings defaults() {
    return DEFAULTS;
  }

  public boolean jmx() {
    return jmx;
  }

  public boolean prometheusEnabled() {
    return prometheusEnabled;
  }

  /** Address the Prometheus endpoint binds to; loopback by default. */
  public String prometheusHost() {
    return prometheusHost;
  }

  /** 1..65535. */
  public int prometheusPort() {
    return prometheusPort;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof MetricsSettings)) {
      return false;
    }
    MetricsSettings t = (MetricsSettings) o;
    return jmx == t.jmx
        && prometheusEnabled == t.prometheusEnabled
        && prometheusHost.equals(t.prometheusHost)
        && prometheusPort == t.prometheusPort;
  }

  @Override
  public int hashCode() {
    return Objects.hash(jmx, prometheusEnabled, prometheusHost, prometheusPort);
  }

  @Override
  public String toString() {
    return "metrics{jmx="
        + jmx
        + ", prometheus="
        + (prometheusEnabled ? TargetKey.bracketed(prometheusHost) + ":" + prometheusPort : "off")
        + "}";
  }
}
