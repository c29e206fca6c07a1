package dev.retryagent.agent;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ClientSwitches;
import dev.retryagent.config.ConfigSources;
import dev.retryagent.config.LogLevel;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.jdk.JdkRetrying;
import dev.retryagent.observe.DeadLetterWriter;
import dev.retryagent.observe.ExitSummary;
import dev.retryagent.observe.LogListener;
import dev.retryagent.observe.RetryMetrics;
import dev.retryagent.observe.Sinks;
import dev.retryagent.policy.Mode;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * Everything the agent runs on, built from one configuration and updated by reloads: the engine,
 * its listeners (log, metrics, dead letters) and the exporters (JMX, Prometheus).
 *
 * <p>Start-up cost is kept off {@code premain}: the engine is built on the first intercepted call,
 * and the exporters and the reload watcher start on a daemon thread at that call, or 10 s after
 * start-up when no call comes first.
 *
 * <p>A reload ({@link #apply}) takes effect for calls that start after it: a call resolves its
 * policy and mode once, when it starts, and keeps them to its end, retries included. Every thread
 * the agent starts is a daemon, so the application exits as it would without the agent.
 */
final class AgentRuntime {
  /**
   * The exporters (JMX, Prometheus) and the reload watcher start at the first intercepted call, or
   * this long after start-up, whichever comes first: JMX alone loads a few hundred classes, which
   * must not compete with the application's own start-up (nor burden a short-lived tool that never
   * makes a call).
   */
  private static final long EXPORTERS_DELAY_MILLIS =
      Long.getLong("retryagent.exporters.delayMillis", 10_000);

  private final java.util.concurrent.CountDownLatch firstUse =
      new java.util.concurrent.CountDownLatch(1);

  private final ConfigSources sources;
  // The observe classes write whole lines, "retry-agent: " included.
  private final Consumer<String> errors = Sinks.stderr();
  private volatile AgentConfig config;
  private volatile Built built;

  /** The clients whose hooks were installed at start: a reload cannot add a hook. */
  private final ClientSwitches hookedClients;

  /** Set once the exporters have started; reloads apply {@code agent.metrics} from then on. */
  private boolean exportersStarted;

  /** What is built on first use. */
  private static final class Built {
    final RetryEngine engine;
    final RetryMetrics metrics;
    final LogListener log;
    final DeadLetters deadLetters;
    final JdkRetrying jdk;
    final Exporters exporters;

    Built(
        RetryEngine engine,
        RetryMetrics metrics,
        LogListener log,
        DeadLetters deadLetters,
        Consumer<String> errors) {
      this.engine = engine;
      this.metrics = metrics;
      this.log = log;
      this.deadLetters = deadLetters;
      this.jdk = new JdkRetrying(engine);
      this.exporters = new Exporters(metrics, engine, errors);
    }
  }

  AgentRuntime(ConfigSources sources, AgentConfig config) {
    this.sources = sources;
    this.config = config;
    this.hookedClients = config.clients();
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
          firstUse.countDown();
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
    return new Built(engine, metrics, log, deadLetters, errors);
  }

  private boolean observing() {
    return config.mode() == Mode.OBSERVE;
  }

  /**
   * Applies a reloaded configuration to calls that start from now on: mode, policies, log level,
   * dead-letter file, and (once they have started) the exporters. Breakers, budgets and rate
   * limiters of unchanged policy sections keep their state (the engine keys them by host and
   * section). Calls in flight keep the policy and mode they started with.
   *
   * @return what changed but needs a restart to take effect (a client switched on whose hook was
   *     not installed at start), or an empty string
   */
  synchronized String apply(AgentConfig next) {
    config = next;
    Built b = built;
    if (b != null) {
      b.engine.reconfigure(next.mode(), next::resolve);
      b.log.setLevel(next.logLevel());
      b.deadLetters.use(next.deadLetterPath());
      if (exportersStarted) {
        b.exporters.apply(next.metrics());
      }
    }
    StringBuilder restart = new StringBuilder();
    if (next.clients().jdkHttp() && !hookedClients.jdkHttp()) {
      restart.append(" agent.clients.jdk-http");
    }
    if (next.clients().okhttp() && !hookedClients.okhttp()) {
      restart.append(" agent.clients.okhttp");
    }
    return restart.toString().trim();
  }

  /**
   * Starts the exporters and the reload watcher on a daemon thread; see the delay above. The
   * watcher takes its first look at the file now, so an edit made before it starts is not missed.
   *
   * @param watchedFile the configuration file to watch, or null for none
   */
  void startBackground(Path watchedFile) {
    ConfigReloader reloader = watchedFile == null ? null : new ConfigReloader(this, watchedFile);
    Thread t =
        new Thread(
            new Runnable() {
              @Override
              public void run() {
                try {
                  firstUse.await(
                      EXPORTERS_DELAY_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                  return;
                }
                startExporters();
                if (reloader != null) {
                  reloader.start();
                }
              }
            },
            "retry-agent-init");
    t.setDaemon(true);
    t.start();
  }

  private synchronized void startExporters() {
    try {
      built().exporters.apply(config.metrics());
    } catch (RuntimeException | LinkageError e) {
      AgentLog.error("metrics exporters not started: " + e);
    }
    exportersStarted = true;
  }

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
    if (b.metrics.total().calls() > 0 && config.logLevel().allows(LogLevel.INFO)) {
      for (String line : ExitSummary.lines(b.metrics)) {
        System.err.println(line);
      }
    }
    b.deadLetters.close();
    b.exporters.stop();
  }

  /**
   * The dead-letter file, switchable by reload: a new path gets a new writer, and the old one
   * writes what it had queued and closes. A give-up that races the switch may still go to the old
   * file, or be counted as dropped by it.
   */
  static final class DeadLetters implements RetryListener {
    private final Consumer<String> errors;
    private volatile DeadLetterWriter writer;

    DeadLetters(Consumer<String> errors) {
      this.errors = errors;
    }

    synchronized void use(String path) {
      DeadLetterWriter current = writer;
      Path next;
      try {
        next = path == null ? null : Path.of(path);
      } catch (InvalidPathException e) {
        errors.accept(
            "retry-agent: agent.deadLetter.path is not a valid path here ("
                + e.getMessage()
                + "); dead letters are not written");
        next = null;
      }
      if (current != null && next != null && current.path().equals(next)) {
        return;
      }
      writer = next == null ? null : new DeadLetterWriter(next, errors);
      if (current != null) {
        current.close();
      }
    }

    @Override
    public void onGiveUp(RetryEvent e) {
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
