package dev.retryagent.agent;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigException;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.ConfigProblem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;

/**
 * {@code agent.reload}: watches the configuration file and applies every valid edit to calls that
 * start after it. An invalid edit is reported with its locations and the previous configuration
 * stays. The file is polled (modification time and size) rather than watched with a {@code
 * WatchService}, which misses edits on some file systems and through symlinked config maps.
 */
final class ConfigReloader implements Runnable {
  static final long POLL_MILLIS = Long.getLong("retryagent.reload.pollMillis", 1000);

  private final AgentRuntime runtime;
  private final Path file;
  private FileTime lastModified;
  private long lastSize;

  ConfigReloader(AgentRuntime runtime, Path file) {
    this.runtime = runtime;
    this.file = file;
    snapshot();
  }

  void start() {
    Thread t = new Thread(this, "retry-agent-reload");
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void run() {
    while (!Thread.currentThread().isInterrupted()) {
      try {
        Thread.sleep(POLL_MILLIS);
      } catch (InterruptedException e) {
        return;
      }
      if (changed()) {
        reload();
      }
    }
  }

  private boolean changed() {
    FileTime before = lastModified;
    long sizeBefore = lastSize;
    snapshot();
    return lastModified != null && (!lastModified.equals(before) || lastSize != sizeBefore);
  }

  private void snapshot() {
    try {
      lastModified = Files.getLastModifiedTime(file);
      lastSize = Files.size(file);
    } catch (IOException e) {
      lastModified = null; // deleted or being replaced: wait for it to come back
    }
  }

  /** Loads the file and applies it, or reports why not. */
  void reload() {
    AgentConfig next;
    try {
      next = runtime.sources().apply(ConfigLoader.load(file, System.getenv()));
    } catch (ConfigException e) {
      StringBuilder text =
          new StringBuilder("reload of ")
              .append(file)
              .append(" rejected, the previous configuration stays (")
              .append(e.problems().size())
              .append(e.problems().size() == 1 ? " problem):" : " problems):");
      for (ConfigProblem p : e.problems()) {
        text.append("\n  ").append(p);
      }
      AgentLog.error(text.toString());
      return;
    } catch (RuntimeException e) {
      AgentLog.error("reload of " + file + " failed, the previous configuration stays: " + e);
      return;
    }
    if (next.equals(runtime.config())) {
      return;
    }
    String restart = runtime.apply(next);
    AgentLog.info(
        "reloaded "
            + file
            + ": mode="
            + next.mode().configName()
            + ", "
            + next.routes().size()
            + (next.routes().size() == 1 ? " route" : " routes")
            + (restart.isEmpty() ? "" : "; needs a restart to take effect: " + restart));
  }
}
