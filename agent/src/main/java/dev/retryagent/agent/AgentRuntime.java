package dev.retryagent.agent;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigSources;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.jdk.JdkRetrying;
import dev.retryagent.observe.DeadLetterWriter;
import dev.retryagent.observe.ExitSummary;
import dev.retryagent.observe.JmxMetrics;
import dev.retryagent.observe.LogListener;
import dev.retryagent.observe.PrometheusServer;
import dev.retryagent.observe.RetryMetrics;
import dev.retryagent.policy.Mode;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * Everything the agent runs on, built from one configuration and updated by reloads: the engine,
 * its listeners (log, metrics, dead letters) and the exporters (JMX, Prometheus).
 *
 * <p>Start-up cost is kept off {@code premain}: the engine is built on the first intercepted call,
 * and the exporters and the reload watcher start a little later on a daemon thread.
 */
final class AgentRuntime {
  /** Exporters wait this long after start-up, so they never compete with the application's own. */
  private static final long EXPORTERS_DELAY_MILLIS =
      Long.getLong("retryagent.exporters.delayMillis", 1000);

  private final ConfigSources sources;
  private final Consumer<String> errors = AgentLog::error;
  private volatile AgentConfig config;
  private volatile Built built;

  /** What is built on first use. */
  private static final class Built {
    final RetryEngine engine;
    final RetryMetrics metrics;
    final LogListener log;
    final DeadLetters deadLetters;
    final JdkRetrying jdk;

    Built(RetryEngine engine, RetryMetrics metrics, LogListener log, DeadLetters deadLetters) {
      this.engine = engine;
      this.metrics = metrics;
      this.log = log;
      this.deadLetters = deadLetters;
      this.jdk = new JdkRetrying(engine);
    }
  }

  AgentRuntime(ConfigSources sources, AgentConfig config) {
    this.sources = sources;
    this.config = config;
  }

  AgentConfig config() {
    return config;
  }

  ConfigSources sources() {
    return sources;
  }

  /** The java.net.http runner, or null while {@code agent.clients.jdk-http} is false. */
  JdkRetrying jdk() {
    return config.clients().jdkHttp() ? built().jdk : null;
  }

  RetryEngine engine() {
    return built().engine;
  }

  /** True while {@code agent.clients.okhttp} is on; a reload may switch it off (and back on). */
  boolean okhttpEnabled() {
    return config.clients().okhttp();
  }

  RetryMetrics metrics() {
    return built().metrics;
  }

  private Built built() {
    Built b = built;
    if (b == null) {
      synchronized (this) {
        b = built;
        if (b == null) {
          b = build(config);
          built = b;
        }
      }
    }
    return b;
  }

  private Built build(AgentConfig c) {
    RetryMetrics metrics =
        new RetryMetrics(Math.min(1000, c.defaultPolicy().circuitBreaker().maxHosts()));
    // The engine does not exist yet when the log listener is made; it reads the mode from here.
    LogListener log = LogListener.toStderr(c.logLevel(), this::observing);
    DeadLetters deadLetters = new DeadLetters(errors);
    deadLetters.use(c.deadLetterPath());
    RetryEngine engine =
        RetryEngine.builder()
            .mode(c.mode())
            .policies(c::resolve)
            .listener(metrics)
            .listener(log)
            .listener(deadLetters)
            .build();
    return new Built(engine, metrics, log, deadLetters);
  }

  private boolean observing() {
    return config.mode() == Mode.OBSERVE;
  }

  /**
   * Applies a reloaded configuration to calls that start from now on. Breakers, budgets and rate
   * limiters of unchanged policies keep their state (the engine keys them by policy).
   *
   * @return what changed that needs a restart to take effect, or an empty string
   */
  synchronized String apply(AgentConfig next) {
    AgentConfig previous = config;
    config = next;
    Built b = built;
    if (b != null) {
      b.engine.reconfigure(next.mode(), next::resolve);
      b.log.setLevel(next.logLevel());
      b.deadLetters.use(next.deadLetterPath());
    }
    StringBuilder restart = new StringBuilder();
    if (!previous.metrics().equals(next.metrics())) {
      restart.append(" agent.metrics");
    }
    if (previous.clients().jdkHttp() != next.clients().jdkHttp() && !previous.clients().jdkHttp()) {
      restart.append(" agent.clients.jdk-http");
    }
    if (previous.clients().okhttp() != next.clients().okhttp() && !previous.clients().okhttp()) {
      restart.append(" agent.clients.okhttp");
    }
    return restart.toString().trim();
  }

  /** Starts the exporters and the reload watcher on a daemon thread, after a short delay. */
  void startBackground(Path watchedFile) {
    Thread t =
        new Thread(
            new Runnable() {
              @Override
              public void run() {
                try {
                  Thread.sleep(EXPORTERS_DELAY_MILLIS);
                } catch (InterruptedException e) {
                  return;
                }
                startExporters();
                if (watchedFile != null && config.reload()) {
                  new ConfigReloader(AgentRuntime.this, watchedFile).start();
                }
              }
            },
            "retry-agent-init");
    t.setDaemon(true);
    t.start();
  }

  private void startExporters() {
    AgentConfig c = config;
    try {
      Built b = built();
      if (c.metrics().jmx()) {
        new JmxMetrics(b.metrics, b.engine, errors).register();
      }
      if (c.metrics().prometheusEnabled()) {
        PrometheusServer server =
            new PrometheusServer(
                b.metrics,
                b.engine,
                c.metrics().prometheusHost(),
                c.metrics().prometheusPort(),
                errors);
        if (server.start()) {
          prometheus = server;
        }
      }
    } catch (RuntimeException | LinkageError e) {
      AgentLog.error("metrics exporters not started: " + e);
    }
  }

  private volatile PrometheusServer prometheus;

  /** At JVM exit: one summary line per route (when there were calls), dead letters flushed. */
  void registerShutdownHook() {
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                new Runnable() {
                  @Override
                  public void run() {
                    onExit();
                  }
                },
                "retry-agent-exit"));
  }

  private void onExit() {
    Built b = built;
    if (b == null) {
      return;
    }
    if (b.metrics.total().calls() > 0
        && config.logLevel().allows(dev.retryagent.config.LogLevel.INFO)) {
      for (String line : ExitSummary.lines(b.metrics)) {
        System.err.println(line);
      }
    }
    b.deadLetters.close();
    PrometheusServer p = prometheus;
    if (p != null) {
      p.stop();
    }
  }

  /** The dead-letter file, switchable by reload. */
  static final class DeadLetters implements dev.retryagent.engine.RetryListener {
    private final Consumer<String> errors;
    private volatile DeadLetterWriter writer;

    DeadLetters(Consumer<String> errors) {
      this.errors = errors;
    }

    synchronized void use(String path) {
      DeadLetterWriter current = writer;
      if (current != null && path != null && current.path().equals(Path.of(path))) {
        return;
      }
      writer = path == null ? null : new DeadLetterWriter(Path.of(path), errors);
      if (current != null) {
        current.close();
      }
    }

    @Override
    public void onGiveUp(dev.retryagent.engine.RetryEvent e) {
      DeadLetterWriter w = writer;
      if (w != null) {
        w.onGiveUp(e);
      }
    }

    void close() {
      DeadLetterWriter w = writer;
      if (w != null) {
        w.close();
      }
    }
  }
}
