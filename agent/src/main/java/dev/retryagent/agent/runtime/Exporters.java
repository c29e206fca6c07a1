package dev.retryagent.agent.runtime;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.MetricsSettings;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.internal.observe.JmxMetrics;
import dev.retryagent.internal.observe.PrometheusServer;
import dev.retryagent.internal.observe.RetryMetrics;
import dev.retryagent.internal.observe.Sanitizer;
import java.util.function.Consumer;

/**
 * {@code agent.metrics} made real, and kept in step with reloads: the JMX MBeans are registered or
 * unregistered, the Prometheus endpoint started, stopped, or moved to its new address. The counters
 * themselves ({@link RetryMetrics}) live on whatever is exported, so nothing is lost when an
 * exporter comes and goes.
 *
 * <p>The error sink receives whole lines, already prefixed {@code retry-agent: }.
 *
 * <p>Thread-safe. Call {@link #apply} from a daemon thread: the JDK HTTP server's dispatcher
 * inherits the daemon flag of the thread that starts it.
 */
final class Exporters {
  private final RetryMetrics metrics;
  private final RetryEngine engine;
  private final Consumer<String> errors;

  private JmxMetrics jmx;
  private PrometheusServer prometheus;
  private MetricsSettings prometheusSettings;

  Exporters(RetryMetrics metrics, RetryEngine engine, Consumer<String> errors) {
    this.metrics = metrics;
    this.engine = engine;
    this.errors = errors;
  }

  /** Brings the exporters to {@code m}; failures are reported on the error sink, never thrown. */
  synchronized void apply(MetricsSettings m) {
    apply(m, null);
  }

  /**
   * {@link #apply(MetricsSettings)}, {@code m} read from {@code source} (a file, named by a failed
   * bind with the keys; null or the built-in defaults: none).
   */
  synchronized void apply(MetricsSettings m, String source) {
    try {
      if (m.jmx() && jmx == null) {
        jmx = new JmxMetrics(metrics, engine, errors);
        jmx.register();
      } else if (!m.jmx() && jmx != null) {
        jmx.unregister();
        jmx = null;
      } else if (jmx != null) {
        // A reload may have turned fleet mode on or off: the route MBeans show the fleet
        // attributes while it is on (docs/fleet.md), whenever they were registered.
        jmx.refresh();
      }
    } catch (LinkageError e) {
      errors.accept(jmxUnavailable(e, AgentConfig.BUILT_IN.equals(source) ? null : source));
    } catch (RuntimeException e) {
      errors.accept(
          "retry-agent: JMX metrics not registered: " + Sanitizer.exception(e, true, null));
    }
    try {
      applyPrometheus(m, AgentConfig.BUILT_IN.equals(source) ? null : source);
    } catch (RuntimeException | LinkageError e) {
      // Through the one home, as every line the endpoint writes itself: a message is text from
      // outside (a sink's, a library's) and may quote a URL or a header.
      errors.accept(
          "retry-agent: Prometheus metrics not served: " + Sanitizer.exception(e, true, null));
    }
  }

  /**
   * JMX's classes are not in this runtime (a jlink image without java.management): which module is
   * missing and the key that turns JMX off (on by default), in the file when there is one.
   */
  private static String jmxUnavailable(LinkageError e, String source) {
    String message = String.valueOf(e.getMessage());
    String cause =
        message.contains("javax/management") || message.contains("java/lang/management")
            ? "this Java runtime has no java.management module (add it to the runtime image:"
                + " jlink --add-modules java.management)"
            : Sanitizer.exception(e, true, null);
    return "retry-agent: JMX metrics not registered: "
        + cause
        + "; agent.metrics.jmx: false"
        + (source == null ? "" : " in " + Sanitizer.oneLine(source))
        + " turns them off; the application goes on without them";
  }

  private void applyPrometheus(MetricsSettings m, String source) {
    boolean sameAddress =
        prometheusSettings != null
            && prometheusSettings.prometheusHost().equals(m.prometheusHost())
            && prometheusSettings.prometheusPort() == m.prometheusPort();
    if (prometheus != null && (!m.prometheusEnabled() || !sameAddress)) {
      prometheus.stop();
      prometheus = null;
      prometheusSettings = null;
    }
    if (m.prometheusEnabled() && prometheus == null) {
      // Also retried on a reload after a failed bind: the port may be free now.
      PrometheusServer server =
          new PrometheusServer(
              metrics, engine, m.prometheusHost(), m.prometheusPort(), errors, source);
      if (server.start()) {
        prometheus = server;
        prometheusSettings = m;
      }
    }
  }

  /** True while the MBeans are registered. */
  synchronized boolean jmxRegistered() {
    return jmx != null;
  }

  /** The port served now, or -1. */
  synchronized int prometheusPort() {
    return prometheus == null ? -1 : prometheus.port();
  }

  /** At JVM exit: stops serving. The MBeans go with the JVM. */
  synchronized void stop() {
    if (prometheus != null) {
      prometheus.stop();
      prometheus = null;
      prometheusSettings = null;
    }
  }
}
