package dev.retryagent.agent.runtime;

import dev.retryagent.cli.ConfigSummary;
import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigException;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.ConfigProblem;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.internal.observe.Sanitizer;
import java.nio.file.Path;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * {@code agent.reload}: watches the configuration file and applies every valid edit to calls that
 * start after it. An invalid edit is reported with its locations and the previous configuration
 * stays. The file is polled rather than watched with a {@code WatchService}, which misses edits on
 * some file systems and through the symlink swaps of Kubernetes config maps.
 *
 * <p>An edit is applied once the file has stopped changing: when two polls in a row see the same
 * new content. A file caught half-written (an editor that truncates, then writes) is never applied,
 * not even when the half happens to be valid (an empty file is: it means the built-in defaults). So
 * an edit takes effect between one and two poll intervals after it is saved. What is parsed is the
 * very content that settled, never a second read of the file, which could catch the next
 * replacement half-way.
 *
 * <p>A file that asks for nothing but the built-in defaults (only comments, or only {@code version:
 * 1}) while the running configuration is something else waits longer: it is applied once it has
 * stayed the same for {@link #DEFAULTS_QUIET_MILLIS}, said in one line when it starts waiting. A
 * writer caught after its leading comment line, stalled for a poll interval, reads exactly so, and
 * applying it would drop every route, limit, breaker and the dead-letter path until the writer goes
 * on. Commenting out a whole file still asks for the defaults, and gets them, later.
 *
 * <p>Each look reads the file as the loader does ({@link FileFingerprint}): a directory, a named
 * pipe or a file too large to be a configuration is refused without being read whole (a pipe would
 * block the watcher forever), and reported once, with the file's name, as an invalid edit.
 *
 * <p>A file that disappears (being replaced, or deleted) leaves the configuration as it is; its
 * return is an edit like any other. A reload that sets {@code agent.reload: false} stops the
 * watching. Each look is a timed task on the agent's shared threads ({@link Scheduler#shared()}),
 * which schedules the next when it ends: no thread of its own, and one look at a time. Nothing
 * thrown while checking ends the watching.
 */
final class ConfigReloader implements Runnable {
  static final long POLL_MILLIS = Math.max(10, Long.getLong("retryagent.reload.pollMillis", 1000));

  /**
   * How long a file asking for the built-in defaults alone must stay the same before it replaces a
   * running configuration that is not them (counted from the first look that saw it): longer than a
   * writer stalls between its steps under load (a page-cache flush, a pause of the collector, a
   * template waiting on a secret store), short for an operator who meant it.
   */
  static final long DEFAULTS_QUIET_MILLIS = 10_000;

  private final AgentRuntime runtime;
  private final Path file;

  /** The content the running configuration came from (or the last edit acted on). */
  private FileFingerprint current;

  /** A new content seen once; applied if the next poll sees it again. */
  private FileFingerprint pending;

  /** When the first look saw {@link #pending}, in {@link #nanos()}. */
  private long pendingSinceNanos;

  /** True while {@link #pending} settled, asks for the defaults, and waits to be quiet. */
  private boolean held;

  private boolean missingReported;
  private volatile boolean stopped;

  /** Where the looks run, once {@link #watch} started them. */
  private Scheduler scheduler;

  /** How the file is looked at: {@link FileFingerprint#of} unless a test says otherwise. */
  private final Function<Path, FileFingerprint> looker;

  /** Nanosecond time: {@link System#nanoTime} unless a test says otherwise. */
  private final LongSupplier clock;

  /** Takes the first look at the file now: the configuration was just loaded from it. */
  ConfigReloader(AgentRuntime runtime, Path file) {
    this(runtime, file, null);
  }

  /** Test seam: {@code looker} replaces {@link FileFingerprint#of} (null: that one). */
  ConfigReloader(AgentRuntime runtime, Path file, Function<Path, FileFingerprint> looker) {
    this(runtime, file, looker, null, null);
  }

  /** Test seam: also {@code clock} replaces {@link System#nanoTime} (null: that one). */
  ConfigReloader(
      AgentRuntime runtime, Path file, Function<Path, FileFingerprint> looker, LongSupplier clock) {
    this(runtime, file, looker, clock, null);
  }

  private ConfigReloader(
      AgentRuntime runtime,
      Path file,
      Function<Path, FileFingerprint> looker,
      LongSupplier clock,
      FileFingerprint loaded) {
    this.runtime = runtime;
    this.file = file;
    this.looker = looker;
    this.clock = clock;
    this.current = loaded != null ? loaded : look();
  }

  /**
   * A watcher of {@code file} whose running configuration was parsed from {@code content}: a file
   * that differs from it now was edited since, and the edit is applied once it settles. Null {@code
   * content}: the file as it is now.
   */
  static ConfigReloader loadedFrom(AgentRuntime runtime, Path file, byte[] content) {
    return new ConfigReloader(
        runtime, file, null, null, content == null ? null : FileFingerprint.ofContent(content));
  }

  private FileFingerprint look() {
    return looker == null ? FileFingerprint.of(file) : looker.apply(file);
  }

  private long nanos() {
    return clock == null ? System.nanoTime() : clock.getAsLong();
  }

  /** True once {@link #pending} has stayed the same for {@link #DEFAULTS_QUIET_MILLIS}. */
  private boolean pendingQuiet() {
    return nanos() - pendingSinceNanos >= DEFAULTS_QUIET_MILLIS * 1_000_000L;
  }

  /** Forgets a held edit that the file no longer holds, and says so: the wait was said. */
  private void dropHeld() {
    if (held) {
      held = false;
      AgentLog.info(
          file
              + " changed before it had stayed the same for "
              + DEFAULTS_QUIET_MILLIS / 1000
              + "s; the built-in defaults it asked for were not applied");
    }
  }

  /** Starts the watching: a look every {@link #POLL_MILLIS} on {@code scheduler}'s threads. */
  void watch(Scheduler scheduler) {
    this.scheduler = scheduler;
    scheduler.schedule(this, POLL_MILLIS * 1_000_000L);
  }

  /** One look, then the next scheduled, until a reload stops the watching. */
  @Override
  public void run() {
    if (runtime.exiting()) {
      // The watching ends with the JVM: nothing is reloaded, or said, once its exit has begun.
      return;
    }
    try {
      poll();
    } catch (RuntimeException | LinkageError e) {
      AgentLog.error(
          "checking "
              + file
              + " for edits failed ("
              + Sanitizer.exception(e, true, null)
              + "); still watching it");
    } finally {
      if (!stopped) {
        scheduler.schedule(this, POLL_MILLIS * 1_000_000L);
      }
    }
  }

  /** True once a reload set {@code agent.reload: false}. */
  boolean stopped() {
    return stopped;
  }

  /** One look at the file: applies an edit that has settled. */
  void poll() {
    FileFingerprint now = look();
    if (now == null) {
      dropHeld();
      pending = null;
      if (!missingReported) {
        missingReported = true;
        AgentLog.error(
            file + " cannot be read now; the configuration stays as it is until it is back");
      }
      return;
    }
    missingReported = false;
    if (now.equals(current)) {
      dropHeld(); // back to what runs: a rewrite in place of the same content, caught half-way
      pending = null;
      return;
    }
    if (!now.equals(pending)) {
      dropHeld();
      pending = now; // changed since the last look: wait until it settles
      pendingSinceNanos = nanos();
      return;
    }
    if (held && !pendingQuiet()) {
      return;
    }
    reload(now);
  }

  private static boolean isBlank(byte[] content) {
    for (byte b : content) {
      if (b != ' ' && b != '\t' && b != '\n' && b != '\r') {
        return false;
      }
    }
    return true;
  }

  /**
   * Parses the content that settled and applies it, or reports why not, or holds it while it asks
   * for the built-in defaults in place of something else and has not been quiet long enough.
   */
  private void reload(FileFingerprint settled) {
    AgentConfig fromFile;
    AgentConfig next;
    // Acted on once (a rejection is said once, the next edit judged afresh), unless held below.
    FileFingerprint running = current;
    held = false;
    pending = null;
    current = settled;
    try {
      if (settled.problem() != null) {
        throw settled.problem();
      }
      if (isBlank(settled.content())) {
        // An editor or a script that truncates then writes was caught in between (seen under
        // load, when the two looks fell between its steps): an empty file is never a
        // configuration to apply; the next edit that settles is.
        AgentLog.error(file + " is empty (a write in progress?); the configuration stays as it is");
        return;
      }
      // Not read for its own agent.strict when invalid: a reload never stops the JVM.
      fromFile = ConfigLoader.parseForReload(settled.content(), file.toString(), System.getenv());
      next = runtime.sources().apply(fromFile);
    } catch (ConfigException e) {
      StringBuilder text =
          new StringBuilder("reload of ")
              .append(file)
              .append(" rejected, the previous configuration stays (")
              .append(e.problems().size())
              .append(e.problems().size() == 1 ? " problem):" : " problems):");
      for (ConfigProblem p : e.problems()) {
        text.append(System.lineSeparator()).append("  ").append(p);
      }
      AgentLog.error(text.toString());
      return;
    } catch (RuntimeException e) {
      AgentLog.error(
          "reload of "
              + file
              + " failed, the previous configuration stays: "
              + Sanitizer.exception(e, true, null));
      return;
    }
    AgentConfig previous = runtime.config();
    if (!next.equals(previous) && fromFile.equals(AgentConfig.defaults()) && !pendingQuiet()) {
      // Not acted on yet: the file is still compared with what runs, and this waits in pending
      // (poll() comes back here only once it is quiet, so this is said once).
      current = running;
      pending = settled;
      held = true;
      AgentLog.info(
          file
              + " now asks for nothing but the built-in defaults; applying them if it stays so for "
              + DEFAULTS_QUIET_MILLIS / 1000
              + "s (a file caught half-written reads the same)");
      return;
    }
    // An edit of agent.mode that an override hides is said, not taken for "nothing changed".
    String overridden = ConfigChanges.overridden(fromFile, runtime.sources());
    if (next.equals(previous)) {
      AgentLog.info(
          file
              + " changed; the configuration is the same, nothing to apply"
              + (overridden.isEmpty() ? "" : " (" + overridden + ")"));
      return;
    }
    String restart = runtime.apply(next);
    if (restart == null) {
      return; // the JVM's exit began during this look: not applied, and nothing said
    }
    AgentLog.info(
        "reloaded "
            + file
            + ": "
            + ConfigSummary.of(next)
            + "; changed: "
            + ConfigChanges.describe(previous, next)
            + (overridden.isEmpty() ? "" : "; " + overridden)
            + (restart.isEmpty() ? "" : "; needs a restart to take effect: " + restart)
            + ConfigSummary.warnings(next));
    if (!next.reload()) {
      stopped = true;
      AgentLog.info(
          "agent.reload is false now: " + file + " is no longer watched (a restart watches again)");
    }
  }
}
