package dev.retryagent.internal.observe;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.internal.AgentThreads;
import dev.retryagent.internal.engine.TargetKey;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * Serves {@link RetryMetrics} (and the engine's gauges) in the Prometheus text format on {@code
 * http://host:port/metrics} (and {@code /}), with the JDK's own HTTP server: no dependency; its
 * dispatcher and idle timer, and at most {@link Deadlined#SERVING_THREADS} serving threads while
 * requests come (daemons).
 *
 * <p>Off until {@link #start()}; a port that cannot be bound is reported once on the error sink and
 * the application goes on. A bind to an address that is not loopback is said once on the error sink
 * (the configuration's default is {@code 127.0.0.1}). Every thread it starts, the JDK server's own
 * included, is a daemon named {@code retry-agent-prometheus-*} with the system class loader ({@link
 * AgentThreads}): the JDK's dispatcher and timer threads inherit the daemon flag, class loader and
 * group of the thread that creates and starts the server, so an agent thread does that (a
 * non-daemon dispatcher would keep the JVM from exiting).
 */
public final class PrometheusServer implements AutoCloseable {
  /**
   * How long one exchange may hold a serving thread before it is taken back and the connection
   * closed: longer than any scrape (Prometheus gives up after 10 s by default).
   */
  static final long EXCHANGE_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(10);

  private final RetryMetrics metrics;
  private final RetryEngine engine;
  private final String host;
  private final int port;
  private final ErrorReporter errors;
  private final String source;
  private final long exchangeDeadlineNanos;
  private final Scheduler scheduler; // null: Scheduler.shared()

  private HttpServer server;
  private Deadlined executor;

  /**
   * @param engine the engine whose breakers and pending async retries to export, or null
   * @param host {@code agent.metrics.prometheus.host}, e.g. {@code 127.0.0.1}
   * @param port {@code agent.metrics.prometheus.port}, 0..65535 (0 = any free port)
   * @param errors receives the one line that says the server could not start; null = stderr
   */
  public PrometheusServer(
      RetryMetrics metrics, RetryEngine engine, String host, int port, Consumer<String> errors) {
    this(metrics, engine, host, port, errors, null);
  }

  /**
   * As {@link #PrometheusServer(RetryMetrics, RetryEngine, String, int, Consumer)}, with the file
   * {@code host} and {@code port} came from, which a failed bind names with their keys.
   *
   * @param source the configuration file, or null when not known
   */
  public PrometheusServer(
      RetryMetrics metrics,
      RetryEngine engine,
      String host,
      int port,
      Consumer<String> errors,
      String source) {
    this(metrics, engine, host, port, errors, source, EXCHANGE_DEADLINE_NANOS, null);
  }

  /**
   * For tests: with another {@link #EXCHANGE_DEADLINE_NANOS}, and the exchanges' deadlines and read
   * graces on {@code scheduler} (null: {@link Scheduler#shared()}, looked up at {@link #start()}:
   * nothing loads before).
   */
  PrometheusServer(
      RetryMetrics metrics,
      RetryEngine engine,
      String host,
      int port,
      Consumer<String> errors,
      String source,
      long exchangeDeadlineNanos,
      Scheduler scheduler) {
    this.scheduler = scheduler;
    this.exchangeDeadlineNanos = exchangeDeadlineNanos;
    this.source = source;
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    this.engine = engine;
    this.host = Objects.requireNonNull(host, "host");
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port must be 0..65535, was " + port);
    }
    this.port = port;
    this.errors = new ErrorReporter(errors);
  }

  /**
   * Binds and starts serving. Never throws for a runtime failure.
   *
   * @return true when serving (also when it already was); false when the address could not be
   *     bound, after one line on the error sink naming the address and the cause
   */
  public synchronized boolean start() {
    if (server != null) {
      return true;
    }
    Deadlined ex =
        new Deadlined(exchangeDeadlineNanos, scheduler == null ? Scheduler.shared() : scheduler);
    AtomicReference<HttpServer> started = new AtomicReference<>();
    AtomicReference<Exception> bindFailure = new AtomicReference<>();
    AtomicReference<RuntimeException> failure = new AtomicReference<>();
    AtomicReference<LinkageError> missing = new AtomicReference<>();
    // The JDK's server starts threads of its own (a dispatcher, idle timers) in the group of the
    // thread that creates and starts it, with that thread's daemon flag and class loader: an agent
    // thread does both, in a group of its own, whose threads are then claimed as the agent's.
    ThreadGroup group = new ThreadGroup("retry-agent-prometheus");
    Thread starter =
        AgentThreads.newThread(
            group,
            () -> {
              HttpServer s;
              try {
                s = HttpServer.create(new InetSocketAddress(host, port), 0);
              } catch (IOException | RuntimeException e) {
                bindFailure.set(e);
                return;
              } catch (LinkageError e) {
                // A runtime without jdk.httpserver (a jlink image): said below, never thrown, or
                // the application's own uncaught-exception handler would see our thread die.
                missing.set(e);
                return;
              }
              s.setExecutor(ex);
              s.createContext("/", exchange -> handle(exchange, ex));
              try {
                s.start();
                started.set(s);
              } catch (RuntimeException e) {
                s.stop(0);
                failure.set(e);
              }
            },
            "retry-agent-prometheus-start");
    starter.start();
    boolean interrupted = joinUninterruptibly(starter);
    AgentThreads.claim(group, "retry-agent-prometheus-");
    HttpServer s = started.get();
    if (interrupted) {
      // Asked to stop while starting: the server goes as if it had failed to start.
      Thread.currentThread().interrupt();
      failure.compareAndSet(null, new IllegalStateException("interrupted while starting"));
      if (s != null) {
        s.stop(0);
      }
    }
    if (missing.get() != null) {
      ex.shutdownNow();
      errors.once("missing", unavailable(missing.get()));
      return false;
    }
    if (bindFailure.get() != null) {
      ex.shutdownNow();
      errors.once("bind", bindFailure(bindFailure.get()));
      return false;
    }
    if (failure.get() != null) {
      ex.shutdownNow();
      errors.once(
          "start",
          "retry-agent: cannot start the Prometheus endpoint on "
              + shownHost(host)
              + ":"
              + port
              + " ("
              + Sanitizer.exception(failure.get(), true, null)
              + ")");
      return false;
    }
    server = s;
    executor = ex;
    warnIfReachableFromOtherHosts(s.getAddress());
    return true;
  }

  /**
   * What could not be bound, why, and where it is configured: the keys, and the file when known.
   * The host as a configuration problem shows it, user-info as {@code ***}.
   */
  private String bindFailure(Exception e) {
    return "retry-agent: cannot serve Prometheus metrics on "
        + shownHost(host)
        + ":"
        + port
        + " ("
        + Sanitizer.exception(e, true, null)
        + "); check agent.metrics.prometheus.host and agent.metrics.prometheus.port"
        + (source == null ? "" : " in " + Sanitizer.oneLine(source))
        + "; the application goes on without it (JMX and the exit summary still work)";
  }

  /**
   * The JDK's HTTP server is not in this runtime: which module is missing, how to add it, and the
   * key (and file) that asks for the endpoint.
   */
  private String unavailable(LinkageError e) {
    String cause =
        String.valueOf(e.getMessage()).contains("com/sun/net/httpserver")
            ? "this Java runtime has no jdk.httpserver module, which the endpoint needs (add it"
                + " to the runtime image: jlink --add-modules jdk.httpserver)"
            : "the JDK's HTTP server cannot be loaded (" + Sanitizer.exception(e, true, null) + ")";
    return "retry-agent: cannot serve Prometheus metrics: "
        + cause
        + "; or set agent.metrics.prometheus.enabled: false"
        + (source == null ? "" : " in " + Sanitizer.oneLine(source))
        + "; the application goes on without it (the exit summary still works)";
  }

  /** An IPv6 literal in brackets, as a port follows it ({@code [::]:9464}). */
  private static String shownHost(String host) {
    int at = host.lastIndexOf('@');
    return Sanitizer.oneLine(at < 0 ? TargetKey.bracketed(host) : "***" + host.substring(at));
  }

  /**
   * One line, once per server, when the endpoint listens on an address other hosts can reach: the
   * default is loopback ({@code 127.0.0.1}), and anything else is a choice an operator should see
   * made. The counters name routes and hosts, never paths, queries or credentials.
   */
  private void warnIfReachableFromOtherHosts(InetSocketAddress bound) {
    InetAddress a = bound.getAddress();
    if (a != null && a.isLoopbackAddress()) {
      return;
    }
    errors.once(
        "exposed",
        "retry-agent: the Prometheus endpoint listens on "
            + shownHost(host)
            + ":"
            + bound.getPort()
            + (a != null && a.isAnyLocalAddress() ? " (every interface)" : "")
            + ", not on loopback: other hosts can read the agent's counters (route and host names);"
            + " agent.metrics.prometheus.host: 127.0.0.1 keeps them on this machine");
  }

  /** Waits for {@code t} to end; true when this thread was interrupted meanwhile. */
  private static boolean joinUninterruptibly(Thread t) {
    boolean interrupted = false;
    while (true) {
      try {
        t.join();
        return interrupted;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
  }

  /** The bound port while serving (the real one when 0 was asked), else -1. */
  public synchronized int port() {
    return server == null ? -1 : server.getAddress().getPort();
  }

  /** The address served while serving, else null. */
  public synchronized InetSocketAddress address() {
    return server == null ? null : server.getAddress();
  }

  public synchronized boolean isRunning() {
    return server != null;
  }

  /** Stops serving at once; safe to call more than once. */
  public synchronized void stop() {
    if (server != null) {
      server.stop(0);
      executor.shutdownNow();
      server = null;
      executor = null;
    }
  }

  @Override
  public void close() {
    stop();
  }

  /** The text a scrape returns now. */
  public String scrape() {
    return PrometheusText.render(metrics, engine);
  }

  /** Package-private for tests. */
  void handle(HttpExchange exchange, Deadlined serving) throws IOException {
    serving.answering();
    try {
      String path = exchange.getRequestURI().getPath();
      String method = exchange.getRequestMethod();
      if (!"/".equals(path) && !"/metrics".equals(path)) {
        respond(exchange, 404, "text/plain; charset=utf-8", "not found: try /metrics\n", method);
      } else if (!"GET".equals(method) && !"HEAD".equals(method)) {
        exchange.getResponseHeaders().set("Allow", "GET, HEAD");
        respond(exchange, 405, "text/plain; charset=utf-8", "method not allowed\n", method);
      } else {
        respond(exchange, 200, PrometheusText.CONTENT_TYPE, scrape(), method);
      }
    } catch (RuntimeException | Error e) {
      // An OutOfMemoryError, a LinkageError: the JDK server only logs it at TRACE, so said here,
      // once per exception and once per error (one on every scrape must not flood the sink). Not
      // rethrown: the serving thread serves on, and the connection gets its 500 unless the answer
      // had begun (a second status line would only fail: the headers went with the first).
      errors.once(
          e instanceof Error ? "scrape-error" : "scrape",
          "retry-agent: a Prometheus scrape failed: " + e.getClass().getName());
      if (exchange.getResponseCode() == -1) {
        respond(exchange, 500, "text/plain; charset=utf-8", "internal error\n", "GET");
      }
    } finally {
      exchange.close();
    }
  }

  private static void respond(
      HttpExchange exchange, int status, String contentType, String body, String method)
      throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", contentType);
    if ("HEAD".equals(method)) {
      exchange.sendResponseHeaders(status, -1);
      return;
    }
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  /**
   * Runs the JDK server's exchanges on at most {@link #SERVING_THREADS} serving threads (started
   * when exchanges come, ended after {@link #IDLE_NANOS} without one), and takes a thread back from
   * an exchange that holds it past the deadline. The JDK server reads the request on this thread
   * with no time limit of its own (sun.net.httpserver.maxReqTime is off by default, and a system
   * property would change the application's own servers too): a client that sent half a request
   * line and nothing more held the thread. The interrupt closes the blocked channel (the JDK server
   * reads a {@code SocketChannel}), and the JDK server then drops that connection. The deadline is
   * a task on the shared scheduler, where the agent's other timed work runs, so no thread of its
   * own.
   *
   * <p>A deadline alone let N stalled clients delay a scrape N x 10 s, served one after another.
   * So: an exchange that comes while no thread is free takes back the thread of the oldest exchange
   * that has been reading its request for {@link #READ_GRACE_NANOS} (a scraper sends its request at
   * once, which its thread reads as soon as it runs; one still reading it after that is the stalled
   * one), or, when none has yet, the first that passes that grace, or, beyond {@link #CROWD}
   * waiting, the oldest reader at once; the newest waiting exchange is served first (a scraper is
   * the newest, stalled clients the older); and beyond {@link #QUEUED} waiting, the oldest is
   * closed at once (run with its thread interrupted: the JDK server then closes it). Connections
   * that hold a request are thus at most {@link #SERVING_THREADS} + {@link #QUEUED}; a connection
   * that sends nothing takes no thread (the JDK server waits for its first byte), and the JDK
   * server closes it after its idle interval (30 s, checked every 10 s). Their number is not
   * bounded here: the JDK server accepts them and none is seen before its first byte, and its own
   * limit (jdk.httpserver.maxConnections) is JVM-wide, the application's servers' too
   * (docs/operations.md, Prometheus).
   *
   * <p>The grace: taking back the oldest reader at once cut a scrape whose whole request had come
   * (three scrapes at once, a Prometheus HA pair and a curl): its thread had not yet read it when
   * the third came, and the interrupt closed the channel at that read. Stalled clients that come
   * together now hold a scrape back at most the grace; ones that keep coming are newer than a
   * waiting scrape and served first, until more than {@link #CROWD} wait: then each newer one takes
   * a reader's thread at once, as before the grace. When the scheduler refuses an exchange's grace,
   * that exchange is never stalled: only the crowd rule or its deadline takes it back.
   */
  static final class Deadlined implements Executor {
    /** Two, so two scrapers at once (two Prometheus servers) never take each other's thread. */
    static final int SERVING_THREADS = 2;

    static final int QUEUED = 16;

    /**
     * How long an exchange may read its request before a newer one may take its thread back: far
     * longer than reading a request that has come (microseconds once its thread runs), short
     * against a scrape's timeout (10 s). A grace of 1 s let clients opening three half requests a
     * second hold back most scrapes (below {@link #CROWD} waiting, a newer one is served first).
     */
    static final long READ_GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    /**
     * Beyond this many waiting, a newer exchange takes back the oldest reader's thread at once,
     * grace or not: a few scrapes at once never wait so many, and clients that keep opening
     * connections with half a request (more than two per grace) would otherwise each be newer than
     * a waiting scrape and served first.
     */
    static final int CROWD = 4;

    static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final long deadlineNanos;
    private final Scheduler scheduler;
    private final ThreadFactory threadFactory; // null: AgentThreads (no lambda before main)
    // All guarded by this:
    private final ArrayDeque<Runnable> waiting = new ArrayDeque<>(); // the newest last
    private final ArrayDeque<Runnable> dropped = new ArrayDeque<>(); // to close at once
    private final List<Running> running = new ArrayList<>(); // not expired yet
    // Expired for a newer exchange as they still read their request, not ended yet:
    private final List<Running> takenBack = new ArrayList<>();
    private int threads; // serving threads alive
    private int idle; // of those, the ones waiting for an exchange
    private int freeing; // of those, the ones whose exchange expired and has not ended yet
    private long exchanges; // the number of the last one started
    private boolean shutdown;

    Deadlined(long deadlineNanos, Scheduler scheduler) {
      this(deadlineNanos, scheduler, null);
    }

    /** For tests: serving threads from {@code threadFactory} rather than {@link AgentThreads}. */
    Deadlined(long deadlineNanos, Scheduler scheduler, ThreadFactory threadFactory) {
      this.deadlineNanos = deadlineNanos;
      this.scheduler = scheduler;
      this.threadFactory = threadFactory;
    }

    /** Never blocks: the JDK server's dispatcher calls it. */
    @Override
    public void execute(Runnable exchange) {
      boolean startThread = false;
      synchronized (this) {
        if (shutdown) {
          throw new RejectedExecutionException("the Prometheus endpoint stopped");
        }
        waiting.addLast(exchange);
        if (waiting.size() > QUEUED) {
          dropped.addLast(waiting.pollFirst());
        }
        int wanted = waiting.size() + dropped.size();
        if (wanted > idle + freeing && threads < SERVING_THREADS) {
          threads++;
          idle++;
          startThread = true;
        }
        if (wanted > idle + freeing) {
          expireOldestReader(waiting.size() <= CROWD);
        }
        notifyAll();
      }
      if (startThread) {
        try {
          Runnable serve = this::serve;
          Thread thread =
              threadFactory == null
                  ? AgentThreads.newThread(serve, "retry-agent-prometheus")
                  : threadFactory.newThread(serve);
          thread.start();
        } catch (RuntimeException | Error notStarted) {
          // "unable to create native thread": counted above, the thread would stay counted and
          // never serve; the exchange, unrun, would hold its connection open. Undone, and the
          // exchange refused if no thread took it meanwhile: the JDK server then closes the
          // connection (JDK 17 and 25 close it on any Throwable from execute).
          synchronized (this) {
            threads--;
            idle--;
            if (waiting.removeLastOccurrence(exchange) || dropped.removeLastOccurrence(exchange)) {
              throw new RejectedExecutionException(
                  "the Prometheus endpoint could not start a serving thread", notStarted);
            }
          }
        }
      }
    }

    /** A serving thread: the newest waiting exchange first, until none comes for a while. */
    private void serve() {
      while (true) {
        Runnable next;
        boolean drop;
        Running r = null;
        synchronized (this) {
          long until = System.nanoTime() + IDLE_NANOS;
          long left = IDLE_NANOS;
          while (!shutdown && waiting.isEmpty() && dropped.isEmpty() && left > 0) {
            try {
              TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException e) {
              // Only shutdownNow() interrupts a thread between exchanges: checked above.
            }
            left = until - System.nanoTime();
          }
          idle--;
          if (shutdown || (waiting.isEmpty() && dropped.isEmpty())) {
            threads--;
            return;
          }
          drop = !dropped.isEmpty();
          next = drop ? dropped.pollFirst() : waiting.pollLast();
          if (!drop) {
            r = new Running(Thread.currentThread(), ++exchanges);
            running.add(r);
          }
        }
        try {
          if (drop) {
            // Its first read fails at once, and the JDK server closes the connection.
            Thread.currentThread().interrupt();
            try {
              next.run();
            } finally {
              Thread.interrupted();
            }
          } else {
            run(next, r);
          }
        } catch (Throwable e) {
          // The JDK server rethrows an Error of the exchange (it logged it): ending this thread
          // would leave it counted in threads, and after two no thread would serve again, the
          // exchanges that come left unrun with their connections open. It serves on.
        }
        // The exchange's end and this thread idle in one step: counted neither running nor idle
        // meanwhile (its timers' cancel, a second lock), the thread let an exchange come then
        // take back a reader (cut a scrape) for want of a thread this one was about to be.
        synchronized (this) {
          if (r != null && !running.remove(r)) {
            freeing--;
            takenBack.remove(r);
          }
          // An interrupt that came as the exchange ended must not reach the next one.
          Thread.interrupted();
          idle++;
        }
        if (r != null) {
          try {
            // After: a task that runs meanwhile finds r gone (expire and stalled check running).
            r.cancelTimers();
          } catch (Throwable e) {
            // A scheduler's bug: this thread, counted idle, serves on.
          }
        }
      }
    }

    /** Runs {@code exchange} as {@code r}, under its deadline and read grace. */
    private void run(Runnable exchange, Running r) {
      // Each refusal caught, an Error of the scheduler among them (its pool could not start a
      // thread, "unable to create native thread"): it skipped the exchange, whose connection
      // stayed open unanswered. serve() ends r, whatever happens here, and cancels its timers.
      try {
        r.deadline = scheduler.schedule(() -> expire(r), deadlineNanos);
      } catch (RuntimeException | Error refused) {
        // Unrun, the exchange's connection would stay open: served without a deadline instead.
        // A task queued all the same finds r gone when it runs (expire checks running).
      }
      if (READ_GRACE_NANOS < deadlineNanos) {
        try {
          r.grace = scheduler.schedule(() -> stalled(r), READ_GRACE_NANOS);
        } catch (RuntimeException | Error refused) {
          // Not stalled at once: on this thread, before the exchange reads its request, that
          // took this very thread back when another exchange waited (a scrape whose whole
          // request had come, cut at its read), and let any newer one take it. Never stalled,
          // it is taken back only beyond CROWD waiting, or at its deadline.
        }
      }
      exchange.run();
    }

    /**
     * The exchange on this thread has read its request and now answers it. One taken back for a
     * newer exchange between the end of its request and here (its thread held up past the grace
     * after its last read) was not reading: the interrupt came after its last read, so its channel
     * is still open. It keeps its thread and answers, the interrupt cleared (a write would close
     * the channel); the newer exchange waits for a thread. One whose deadline passed stays expired.
     */
    synchronized void answering() {
      Thread me = Thread.currentThread();
      for (Running r : running) {
        if (r.thread == me) {
          r.answering = true;
        }
      }
      for (int i = 0; i < takenBack.size() && !shutdown; i++) {
        Running r = takenBack.get(i);
        if (r.thread == me) {
          takenBack.remove(i);
          freeing--;
          r.answering = true;
          running.add(r);
          Thread.interrupted();
          return;
        }
      }
    }

    /**
     * {@code r} has read its request for {@link #READ_GRACE_NANOS}: a stalled client, whose thread
     * an exchange waiting for one (come meanwhile) takes back now.
     */
    private synchronized void stalled(Running r) {
      if (!r.answering && running.contains(r)) {
        r.stalled = true;
        if (waiting.size() + dropped.size() > idle + freeing) {
          expireOldestReader(true);
        }
      }
    }

    /** The oldest exchange reading its request, only past its grace when {@code stalledOnly}. */
    private void expireOldestReader(boolean stalledOnly) {
      Running oldest = null;
      for (Running r : running) {
        if ((r.stalled || !stalledOnly)
            && !r.answering
            && (oldest == null || r.number < oldest.number)) {
          oldest = r;
        }
      }
      if (oldest != null) {
        expire(oldest);
        takenBack.add(oldest);
      }
    }

    /** Interrupts {@code r} if it still runs: never a later exchange on its thread. */
    private synchronized void expire(Running r) {
      if (running.remove(r)) {
        freeing++;
        r.thread.interrupt();
      } else {
        takenBack.remove(r); // its deadline passed: it stays expired, answering or not
      }
    }

    /** Interrupts the exchanges under way and ends the serving threads. */
    synchronized void shutdownNow() {
      shutdown = true;
      for (Running r : running) {
        r.thread.interrupt();
      }
      notifyAll();
    }

    /** One exchange under way on a serving thread. */
    private static final class Running {
      final Thread thread;
      final long number;
      boolean answering; // guarded by Deadlined.this
      boolean stalled; // past READ_GRACE_NANOS reading its request; guarded by Deadlined.this
      // Its timers, null when refused; its serving thread's alone.
      Scheduler.Cancellable deadline;
      Scheduler.Cancellable grace;

      Running(Thread thread, long number) {
        this.thread = thread;
        this.number = number;
      }

      void cancelTimers() {
        if (grace != null) {
          grace.cancel();
        }
        if (deadline != null) {
          deadline.cancel();
        }
      }
    }
  }
}
