package dev.retryagent.agent.runtime;

import dev.retryagent.agent.otel.OtelSupport;
import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ClientSwitches;
import dev.retryagent.config.ConfigSources;
import dev.retryagent.config.FleetConfig;
import dev.retryagent.config.LogLevel;
import dev.retryagent.config.PathMask;
import dev.retryagent.config.Route;
import dev.retryagent.engine.FleetLimits;
import dev.retryagent.engine.PolicyResolver;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.internal.AgentThreads;
import dev.retryagent.internal.jdk.JdkRetrying;
import dev.retryagent.internal.observe.DeadLetterWriter;
import dev.retryagent.internal.observe.ExitSummary;
import dev.retryagent.internal.observe.LogListener;
import dev.retryagent.internal.observe.RetryMetrics;
import dev.retryagent.internal.observe.Sanitizer;
import dev.retryagent.internal.observe.Sinks;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * Everything the agent runs on, built from one configuration and updated by reloads: the engine,
 * its listeners (log, metrics, dead letters) and the exporters (JMX, Prometheus).
 *
 * <p>Start-up cost is kept off {@code premain}: the engine is built on the first intercepted call,
 * and the exporters and the reload watcher start a second after that call, or 10 s after start-up
 * when no call comes first. Both are timed tasks on the agent's shared threads ({@link
 * Scheduler#shared()}, at most two, the very threads that run asynchronous retries): the agent has
 * no thread of its own for them (issue 13: at most two agent threads, whatever waits). They are
 * scheduled at start-up only when something must run even if no call ever comes (the reload
 * watcher, the Prometheus endpoint), and then on a {@link StartUpTimer}, whose one thread ends when
 * the first call brings the start forward onto the shared threads; otherwise (JMX only, or no
 * exporter) at the first call: no thread runs before the agent needs one.
 *
 * <p>A reload ({@link #apply}) takes effect for calls that start after it: a call resolves its
 * policy and mode once, when it starts, and keeps them to its end, retries included. Every thread
 * the agent starts is a daemon, so the application exits as it would without the agent.
 */
public final class AgentRuntime {
  /**
   * The exporters (JMX, Prometheus) and the reload watcher start a second after the first
   * intercepted call ({@link #AFTER_FIRST_USE_MILLIS}), or this long after start-up, whichever
   * comes first: JMX alone loads a few hundred classes, which must not compete with the
   * application's own start-up (nor burden a short-lived tool).
   */
  private static final long EXPORTERS_DELAY_MILLIS =
      Long.getLong("retryagent.exporters.delayMillis", 10_000);

  /**
   * At exit, the wait for the dead letters still to write, every writer's in all (the current one's
   * and those of paths a reload switched away from): a hung disk never hangs the exit.
   */
  private static final long EXIT_DEAD_LETTERS_WAIT_MILLIS = 2_000;

  /**
   * After the first call, the exporters wait this much longer (never past the delay above): an
   * application that makes its calls and ends at once (a tool, a batch job) never pays for JMX's
   * few hundred classes, and no application's first call competes with them for a core; a service
   * has its MBeans a second after its first call.
   */
  static final long AFTER_FIRST_USE_MILLIS = 1_000;

  private final long createdNanos = System.nanoTime();

  /**
   * Runs the exporters' start and the watcher's polls; null for {@link Scheduler#shared()}, asked
   * for only when something is scheduled (no file, no endpoint: not before the first call).
   */
  private final Scheduler scheduler;

  private final ConfigSources sources;
  // The observe classes write whole lines, "retry-agent: " included.
  private final Consumer<String> errors = Sinks.stderr();
  private volatile AgentConfig config;
  private volatile Built built;

  /**
   * Fleet mode, started in {@code premain} when the file has a {@code fleet} section (it never
   * waits for Redis), and again by a reload that names another one; null without.
   */
  private volatile FleetLimits fleet;

  private FleetConfig fleetConfig;

  /**
   * The fleet a reload switched off, kept for its 429 pauses (held maybe only in this JVM while
   * Redis was away) and counters: switched on again, the next fleet honours the pauses still
   * running and counts on.
   */
  private FleetLimits leftFleet;

  /**
   * Set when the JVM's exit begins ({@link #onExit}): reloads are neither made nor applied from
   * then on. Volatile: the watcher reads it on the scheduler's threads.
   */
  private volatile boolean exiting;

  /** The clients whose hooks were installed at start: a reload cannot add a hook. */
  private final ClientSwitches hookedClients;

  /** Set once the exporters have started; reloads apply {@code agent.metrics} from then on. */
  private boolean exportersStarted;

  /**
   * What {@link #startBackground} was given to start (the file to watch, if any): set once it has
   * been called; the first call schedules the start from then on. Guarded by {@code this}.
   */
  private Background background;

  /**
   * Whether {@code java.net.http} is in the boot layer. It is not for an application started as a
   * named module that does not require it ({@code java -m app}, OkHttp on the module path), nor on
   * a {@code jlink} image without it. There no {@code HttpClient} can exist, and {@link
   * JdkRetrying}, whose loading links {@code java.net.http}'s types, must not be loaded: its {@code
   * NoClassDefFoundError} would end every other client's call (an OkHttp call threw it, an {@code
   * HttpURLConnection} went without retries).
   */
  private static final boolean JAVA_NET_HTTP =
      ModuleLayer.boot().findModule("java.net.http").isPresent();

  /**
   * Whether {@code java.net.http} is in the boot layer: without it no {@code HttpClient} can exist,
   * and its hook is not armed (the start-up line says so).
   */
  public static boolean hasJavaNetHttp() {
    return JAVA_NET_HTTP;
  }

  /**
   * What is built on first use. The code that hands the engine its resolver and listeners is here,
   * not in the enclosing class, which {@code premain} loads: verifying a method that passes an
   * object as an interface type loads that interface at once (and core's {@code PolicyResolver}
   * holds a lambda).
   */
  private static final class Built {
    final RetryEngine engine;
    final RetryMetrics metrics;
    final LogListener log;
    final DeadLetters deadLetters;
    final OtelSupport otel; // null when the operator switched tracing off
    final JdkRetrying jdk; // null without java.net.http (JAVA_NET_HTTP)
    final Exporters exporters;

    Built(AgentRuntime runtime, AgentConfig c, Consumer<String> errors) {
      metrics = new RetryMetrics(Math.min(1000, c.defaultPolicy().circuitBreaker().maxHosts()));
      // The engine does not exist yet when the log listener is made; it reads the mode from there.
      log = LogListener.toStderr(c.logLevel(), new Observing(runtime));
      log.setPathMask(c.pathMask());
      deadLetters = new DeadLetters(errors, metrics);
      deadLetters.use(
          c.deadLetterPath(), c.deadLetterMaxBytes(), c.pathMask()); // nothing to replace yet
      // Every attempt a span when the OpenTelemetry agent runs too (docs/opentelemetry.md).
      otel = OtelSupport.forEngine();
      if (otel != null) {
        otel.usePathMask(c.pathMask());
      }
      engine =
          RetryEngine.builder()
              .mode(c.mode())
              .policies(new Routes(c))
              .listener(metrics)
              .listener(log)
              .listener(deadLetters)
              .callContexts(otel)
              .build();
      engine.useFleet(runtime.fleet);
      jdk = JAVA_NET_HTTP ? new JdkRetrying(engine) : null;
      exporters = new Exporters(metrics, engine, errors);
    }

    /**
     * Everything but the exporters, for calls that start from now on.
     *
     * @return the dead-letter writer a new path replaced, to close outside the runtime's lock; or
     *     null
     */
    DeadLetterWriter reconfigure(AgentConfig next) {
      engine.reconfigure(next.mode(), new Routes(next));
      log.setLevel(next.logLevel());
      log.setPathMask(next.pathMask());
      DeadLetterWriter replaced =
          deadLetters.use(next.deadLetterPath(), next.deadLetterMaxBytes(), next.pathMask());
      if (otel != null) {
        otel.usePathMask(next.pathMask());
      }
      return replaced;
    }
  }

  /**
   * A configuration's route table as the engine's policy resolver. A named class, as every function
   * object of the agent: a lambda or a method reference is an {@code invokedynamic}, which spins
   * classes when it first runs (start-up time; the integration tests check the classes loaded
   * before {@code main}).
   */
  private static final class Routes implements PolicyResolver {
    private final AgentConfig config;

    Routes(AgentConfig config) {
      this.config = config;
    }

    @Override
    public Policy resolve(String method, String host, int port, String path) {
      return config.resolve(method, host, port, path);
    }

    /** Without a route by path, no request is asked for its path (issue 13). */
    @Override
    public boolean readsPath() {
      return config.routesByPath();
    }

    @Override
    public PathMask pathMask() {
      return config.pathMask();
    }

    @Override
    public Collection<Policy> policies() {
      List<Policy> all = new ArrayList<>(config.routes().size() + 1);
      for (Route r : config.routes()) {
        all.add(r.policy());
      }
      all.add(config.defaultPolicy());
      return all;
    }
  }

  /** Whether the engine observes, read from the running configuration. */
  private static final class Observing implements BooleanSupplier {
    private final AgentRuntime runtime;

    Observing(AgentRuntime runtime) {
      this.runtime = runtime;
    }

    @Override
    public boolean getAsBoolean() {
      return runtime.config.mode() == Mode.OBSERVE;
    }
  }

  public AgentRuntime(ConfigSources sources, AgentConfig config) {
    this(sources, config, null);
  }

  /**
   * Test seam: {@code scheduler} runs the exporters' start and the watcher's polls, the delay after
   * start-up included.
   */
  AgentRuntime(ConfigSources sources, AgentConfig config, Scheduler scheduler) {
    this.scheduler = scheduler;
    this.sources = sources;
    this.config = config;
    this.hookedClients = config.clients();
    startFleet(config.fleet()); // none to leave yet
  }

  /**
   * Joins the fleet of {@code next} (null: none) if it differs from the current one.
   *
   * @return the fleet left, which the caller must {@link FleetLimits#close() close} once it holds
   *     no lock (its close waits for Redis: up to {@code connectTimeout} + 4 × {@code
   *     commandTimeout}); null when none was left
   */
  private synchronized FleetLimits startFleet(FleetConfig next) {
    if (Objects.equals(next, fleetConfig)) {
      return null;
    }
    FleetLimits old = fleet;
    // A pause is the provider's word about a route, whichever fleet this JVM is in; and a reload
    // resets no counter.
    FleetLimits previous = old != null ? old : leftFleet;
    fleet = next == null ? null : FleetStarter.start(next, errors, previous);
    leftFleet = fleet == null ? previous : null;
    fleetConfig = next;
    Built b = built;
    if (b != null) {
      b.engine.useFleet(fleet);
    }
    return old;
  }

  AgentConfig config() {
    return config;
  }

  private Scheduler scheduler() {
    return scheduler != null ? scheduler : Scheduler.shared();
  }

  /**
   * What runs the start's schedule made in {@code premain} (the delay after start-up): made only
   * then, so that without a file neither it nor {@link Scheduler} loads before {@code main}.
   */
  private Scheduler startUpTimer() {
    return scheduler != null ? scheduler : StartUpTimer.create();
  }

  ConfigSources sources() {
    return sources;
  }

  /**
   * The java.net.http runner, or null while {@code agent.clients.jdk-http} is false or the runtime
   * has no {@code java.net.http}.
   */
  public JdkRetrying jdk() {
    return config.clients().jdkHttp() ? built().jdk : null;
  }

  /** The engine, built on first use. */
  public RetryEngine engine() {
    return built().engine;
  }

  /** True while {@code agent.clients.okhttp} is on; a reload may switch it off (and back on). */
  public boolean okhttpEnabled() {
    return config.clients().okhttp();
  }

  /** True while {@code agent.clients.apache-httpclient} is on; a reload may switch it. */
  public boolean apacheHttpClientEnabled() {
    return config.clients().apacheHttpClient();
  }

  /**
   * True while {@code agent.clients.url-connection} is on and the agent is not off: connections
   * opened then get the retrying facade (a reload may switch it off and back on).
   */
  public boolean urlConnectionEnabled() {
    AgentConfig c = config;
    return c.clients().urlConnection() && c.mode() != Mode.OFF;
  }

  private Built built() {
    Built b = built;
    if (b == null) {
      synchronized (this) {
        b = built;
        if (b == null) {
          b = new Built(this, config, errors);
          built = b;
          if (exiting) {
            // A first call from the application's own shutdown hook (deregistering from service
            // discovery, say), after the exit hook ran: its dead letters are refused and counted
            // as after the exit, as an engine built earlier has them; no exporter starts.
            b.deadLetters.closeAtExit(Duration.ZERO);
          } else if (background != null) {
            background.scheduleAfterFirstCall();
          }
        }
      }
    }
    return b;
  }

  /**
   * Applies a reloaded configuration to calls that start from now on: mode, policies, log level,
   * dead-letter file, and (once they have started) the exporters. Breakers, budgets and rate
   * limiters of unchanged policy sections keep their state (the engine keys them by host and
   * section). Calls in flight keep the policy and mode they started with.
   *
   * @return what changed but needs a restart to take effect (a client switched on whose hook was
   *     not installed at start), or an empty string; null when nothing was applied because the
   *     JVM's exit has begun
   */
  public String apply(AgentConfig next) {
    FleetLimits left;
    DeadLetterWriter replaced;
    String restart;
    synchronized (this) {
      if (exiting) {
        // The exit hook has closed the fleet, the dead letters and the exporters: a reload now
        // (a ConfigMap edited during a rolling deploy, while the application drains) would open
        // them again, with no exit left to close them.
        return null;
      }
      config = next;
      left = startFleet(next.fleet());
      replaced = reconfigureLocked(next);
      restart = restartNeeded(next);
    }
    if (left != null) {
      // Writes its pauses and leaves, waiting for a slow or hung Redis: never while holding this
      // runtime, whose lock the application's first call takes to build the engine.
      left.close();
    }
    if (replaced != null) {
      // Writes what it had queued, waiting up to 2 s for a slow disk (a hung mount): never while
      // holding this runtime, whose lock a first call that builds the engine, the exporters'
      // start and the next reload take too.
      replaced.close();
    }
    return restart;
  }

  /** {@link #apply} under the runtime's lock; returns the dead-letter writer to close. */
  private DeadLetterWriter reconfigureLocked(AgentConfig next) {
    Built b = built;
    DeadLetterWriter replaced = null;
    if (b != null) {
      replaced = b.reconfigure(next);
      if (exportersStarted) {
        b.exporters.apply(next.metrics(), next.source());
      }
    }
    return replaced;
  }

  private String restartNeeded(AgentConfig next) {
    StringBuilder restart = new StringBuilder();
    if (next.clients().jdkHttp() && !hookedClients.jdkHttp()) {
      restart.append(" agent.clients.jdk-http");
    }
    if (next.clients().okhttp() && !hookedClients.okhttp()) {
      restart.append(" agent.clients.okhttp");
    }
    if (next.clients().apacheHttpClient() && !hookedClients.apacheHttpClient()) {
      restart.append(" agent.clients.apache-httpclient");
    }
    if (next.clients().urlConnection() && !hookedClients.urlConnection()) {
      restart.append(" agent.clients.url-connection");
    }
    return restart.toString().trim();
  }

  /**
   * Starts the exporters and the reload watcher; see the delay above. The watcher compares the file
   * with {@code loadedContent}, what the running configuration was parsed from, so an edit made
   * after that read is applied, however soon after, even before the watcher starts. Their start is
   * scheduled now when the watcher or the Prometheus endpoint must run even if no call ever comes;
   * otherwise at the first call (JMX alone has nothing to show before it).
   *
   * @param watchedFile the configuration file to watch, or null for none
   * @param loadedContent the bytes the configuration was parsed from; null: the file as it is now
   */
  public void startBackground(Path watchedFile, byte[] loadedContent) {
    // With the loaded bytes, the watcher is made when the watching starts: its classes then load
    // on the scheduler's thread, not in premain. Without them, it looks at the file now.
    ConfigReloader reloader =
        watchedFile == null || loadedContent != null
            ? null
            : ConfigReloader.loadedFrom(this, watchedFile, null);
    boolean evenWithoutCalls = watchedFile != null || config.metrics().prometheusEnabled();
    synchronized (this) {
      background = new Background(reloader, watchedFile, loadedContent);
      if (built != null) {
        background.scheduleAfterFirstCall(); // it came first, on another thread, during premain
      } else if (evenWithoutCalls) {
        background.scheduleIn(startUpTimer(), EXPORTERS_DELAY_MILLIS);
      }
    }
  }

  /**
   * Whether the application's first call will still schedule the exporters' and the watcher's
   * start: {@link #startBackground} recorded it, but its schedule at start-up was refused (no
   * thread to be had) and no call has come yet. The start-up line says so rather than "not
   * scheduled".
   */
  public synchronized boolean startsAtFirstCall() {
    return background != null && !background.started && built == null;
  }

  /**
   * The exporters' and the watcher's start, run once by whichever of its schedules comes first (the
   * delay after start-up, or the pause after the first call); the other is cancelled. A named
   * class, not a lambda: it is made in {@code premain}.
   */
  private final class Background implements Runnable {
    private final ConfigReloader reloader; // made at start-up, or null
    private final Path watchedFile; // null for no watching
    private final byte[] loadedContent; // the watcher's first content, when made at the start
    private Scheduler.Cancellable scheduled; // guarded by AgentRuntime.this
    private boolean started; // guarded by AgentRuntime.this

    Background(ConfigReloader reloader, Path watchedFile, byte[] loadedContent) {
      this.reloader = reloader;
      this.watchedFile = watchedFile;
      this.loadedContent = loadedContent;
    }

    /**
     * Schedules the start a second after the first call (never past the delay). On the
     * application's first call: a refusal (the JVM out of threads) must not fail that call; the
     * start at the delay after start-up, if scheduled, stands.
     */
    void scheduleAfterFirstCall() {
      long sinceStart = (System.nanoTime() - createdNanos) / 1_000_000;
      try {
        scheduleIn(scheduler(), pauseAfterFirstUse(sinceStart, EXPORTERS_DELAY_MILLIS));
      } catch (RuntimeException refused) {
        AgentLog.error(
            "could not schedule the exporters' and the config watcher's start ("
                + Sanitizer.exception(refused, true, null)
                + ")");
      }
    }

    /**
     * Schedules the start on {@code timer} {@code millis} from now, in place of any earlier
     * schedule (never a sooner one: a first call's pause ends before the delay after start-up).
     * Holds the runtime.
     */
    void scheduleIn(Scheduler timer, long millis) {
      if (started) {
        return;
      }
      Scheduler.Cancellable earlier = scheduled;
      scheduled = timer.schedule(this, millis * 1_000_000L);
      if (earlier != null) {
        earlier.cancel(); // the start after the first call comes before the one at the delay
      }
    }

    @Override
    public void run() {
      synchronized (AgentRuntime.this) {
        if (started || exiting) {
          return; // after the exit hook: no exporter, no watcher, to be stopped by nobody
        }
        started = true;
      }
      startExporters();
      if (watchedFile != null) {
        ConfigReloader r = reloader;
        if (r == null) {
          r = ConfigReloader.loadedFrom(AgentRuntime.this, watchedFile, loadedContent);
        }
        r.watch(scheduler());
      }
    }
  }

  /**
   * How much longer the exporters wait once the first call came {@code sinceStartMillis} after
   * start-up: {@link #AFTER_FIRST_USE_MILLIS}, but never past {@code delayMillis} after start-up.
   */
  static long pauseAfterFirstUse(long sinceStartMillis, long delayMillis) {
    return Math.max(0, Math.min(AFTER_FIRST_USE_MILLIS, delayMillis - sinceStartMillis));
  }

  private synchronized void startExporters() {
    if (exiting) {
      return; // the exit hook ran after Background.run let go of the lock (r25)
    }
    try {
      built().exporters.apply(config.metrics(), config.source());
    } catch (RuntimeException | LinkageError e) {
      AgentLog.error("metrics exporters not started: " + Sanitizer.exception(e, true, null));
    }
    exportersStarted = true;
  }

  /** True once the JVM's exit has begun (the exit hook ran): no reload from then on. */
  boolean exiting() {
    return exiting;
  }

  /** At JVM exit: one summary line per route (when there were calls), dead letters flushed. */
  public void registerShutdownHook() {
    // An agent thread: made privileged, so that under a SecurityManager the application installs
    // later it does not carry premain's launcher frames (whose permissions are the policy's) and
    // stopping the exporters at exit is allowed.
    Runtime.getRuntime()
        .addShutdownHook(AgentThreads.newThread(new ExitHook(), AgentThreads.PREFIX + "exit"));
  }

  /**
   * What the JVM's exit runs. A named class (made in {@code premain}; agent/bench/load-windows.sh
   * also takes its loading as the end of the hooks' install).
   */
  private final class ExitHook implements Runnable {
    @Override
    public void run() {
      onExit();
    }
  }

  /** What the shutdown hook runs; package-private for tests. */
  void onExit() {
    FleetLimits f;
    Built b;
    synchronized (this) {
      // Under the lock a reload applies under: one that began before this either has made its
      // fleet and dead-letter writer, closed below, or sees the flag and applies nothing.
      exiting = true;
      f = fleet;
      b = built;
      if (background != null && background.scheduled != null) {
        background.scheduled.cancel(); // and Background.run, if it runs all the same, sees exiting
      }
    }
    if (f != null) {
      f.close(); // leaves the live count at once rather than after three heartbeats
    }
    if (b == null) {
      return;
    }
    // Every route a call went through, ended or not: calls() counts only calls that ended, and an
    // exit while the only calls wait for their retries (System.exit from the application, a
    // signal) would otherwise leave out the retries already made and logged.
    if (!b.metrics.routes().isEmpty() && config.logLevel().allows(LogLevel.INFO)) {
      for (String line : ExitSummary.lines(b.metrics)) {
        System.err.println(line);
      }
    }
    b.deadLetters.closeAtExit(Duration.ofMillis(EXIT_DEAD_LETTERS_WAIT_MILLIS));
    b.exporters.stop();
  }
}
