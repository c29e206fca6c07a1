package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.ConfigSources;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The exporters' start and the watcher's looks as timed tasks on the agent's shared threads (issue
 * 13: at most two agent threads, whatever waits), driven by hand: what is scheduled when, and what
 * each task does. The delays are the defaults: the exporters 10 s after start-up or 1 s after the
 * first call, a look every second.
 */
class BackgroundStartTest {
  private static final long SECOND = 1_000_000_000L;
  private static final String NO_JMX = "agent: { metrics: { jmx: false } }\n";

  @TempDir Path dir;

  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  private final ManualScheduler tasks = new ManualScheduler();

  @Test
  void withAFileTheStartIsScheduledAtStartUpAndTheFirstCallBringsItForward() throws Exception {
    Path file = Files.writeString(dir.resolve("config.yml"), NO_JMX + retries(2));
    AgentRuntime runtime = runtime(file);

    runtime.startBackground(file, null);
    assertThat(tasks.pending()).as("the start, 10 s after start-up").containsExactly(10 * SECOND);

    runtime.engine(); // the first call
    assertThat(tasks.pending())
        .as("a second after the first call, in place of the other")
        .containsExactly(SECOND);
    assertThat(tasks.cancelled).isEqualTo(1);

    tasks.runNext(); // the start: exporters, then the watcher's first look in a second
    assertThat(tasks.pending()).containsExactly(SECOND);

    Files.writeString(file, NO_JMX + retries(4));
    tasks.runNext(); // a look sees the edit once...
    tasks.runNext(); // ...and again: applied
    assertThat(runtime.config().defaultPolicy().retry().maxAttempts()).isEqualTo(4);
    assertThat(tasks.pending()).as("each look schedules the next").containsExactly(SECOND);

    Files.writeString(file, "agent: { metrics: { jmx: false }, reload: false }\n" + retries(4));
    tasks.runNext();
    tasks.runNext();
    assertThat(runtime.config().reload()).isFalse();
    assertThat(tasks.pending()).as("reload: false ends the looks").isEmpty();
  }

  @Test
  void aLookThatFailsIsReportedAndTheNextIsStillScheduled() throws Exception {
    Path file = Files.writeString(dir.resolve("config.yml"), NO_JMX + retries(2));
    AgentRuntime runtime = runtime(file);
    List<Integer> looks = new ArrayList<>();
    ConfigReloader reloader =
        new ConfigReloader(
            runtime,
            file,
            f -> {
              looks.add(looks.size());
              if (looks.size() == 2) {
                throw new IllegalStateException("file system gone away");
              }
              return FileFingerprint.of(f);
            });

    reloader.watch(tasks);
    tasks.runNext();

    assertThat(looks).hasSize(2);
    assertThat(stderr.text())
        .contains("checking " + file + " for edits failed")
        .contains("file system gone away")
        .contains("still watching it");
    assertThat(tasks.pending()).containsExactly(SECOND);
    tasks.runNext();
    assertThat(looks).hasSize(3);
  }

  @Test
  void withoutAFileOrAnEndpointNothingIsScheduledBeforeTheFirstCall() throws Exception {
    AgentRuntime runtime = runtime(null);

    runtime.startBackground(null, null);
    assertThat(tasks.pending()).isEmpty();

    runtime.engine();
    assertThat(tasks.pending()).containsExactly(SECOND);
    tasks.runNext(); // the exporters; no watcher
    assertThat(tasks.pending()).isEmpty();

    runtime.engine(); // later calls schedule nothing
    assertThat(tasks.pending()).isEmpty();
  }

  @Test
  void aStartTheSchedulerRefusesAtTheFirstCallDoesNotFailThatCall() throws Exception {
    // The JVM out of threads: the shared scheduler refuses (RejectedExecutionException) the start
    // the application's first call schedules. It went up through that call, the agent's own
    // failure in the application's request.
    ConfigSources none = ConfigSources.resolve("", new Properties(), Map.of());
    AgentRuntime runtime =
        new AgentRuntime(
            none,
            none.apply(ConfigLoader.parse(NO_JMX, "test", Map.of())),
            (task, delayNanos) -> {
              throw new java.util.concurrent.RejectedExecutionException("no thread (the test's)");
            });
    runtime.startBackground(null, null);

    assertThat(runtime.engine()).as("the first call's engine").isNotNull();
    assertThat(stderr.text())
        .contains("could not schedule the exporters' and the config watcher's start")
        .contains("no thread (the test's)");
  }

  @Test
  void aStartRefusedAtStartUpIsScheduledAgainAtTheFirstCall() throws Exception {
    // premain's schedule refused (no thread for the start-up timer): the start-up line says the
    // first call tries again, which must then be true.
    Path file = Files.writeString(dir.resolve("config.yml"), NO_JMX + retries(2));
    ConfigSources sources = ConfigSources.resolve("config=" + file, new Properties(), Map.of());
    boolean[] refuse = {true};
    AgentRuntime runtime =
        new AgentRuntime(
            sources,
            sources.load(Map.of()),
            (task, delayNanos) -> {
              if (refuse[0]) {
                refuse[0] = false;
                throw new java.util.concurrent.RejectedExecutionException("no thread (the test's)");
              }
              return tasks.schedule(task, delayNanos);
            });

    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> runtime.startBackground(file, Files.readAllBytes(file)))
        .isInstanceOf(java.util.concurrent.RejectedExecutionException.class);
    assertThat(runtime.startsAtFirstCall()).isTrue();

    runtime.engine(); // the first call
    assertThat(tasks.pending())
        .as("the start, a second after the first call")
        .containsExactly(SECOND);
    assertThat(runtime.startsAtFirstCall()).isFalse();
  }

  @Test
  void aCallBeforeTheBackgroundIsArmedSchedulesItWhenItIs() throws Exception {
    Path file = Files.writeString(dir.resolve("config.yml"), NO_JMX + retries(2));
    AgentRuntime runtime = runtime(file);

    runtime.engine(); // a call on another thread while premain was still running
    assertThat(tasks.pending()).isEmpty();
    runtime.startBackground(file, null);

    assertThat(tasks.pending()).containsExactly(SECOND);
  }

  @Test
  void anEditSavedBetweenTheLoadAndTheWatchersStartIsApplied() throws Exception {
    // premain parses the file, then starts the background: the watcher compares the file with the
    // bytes the configuration came from, not with the file as it is by then.
    Path file = Files.writeString(dir.resolve("config.yml"), NO_JMX + retries(2));
    AgentRuntime runtime = runtime(file);
    byte[] loaded = Files.readAllBytes(file);
    Files.writeString(file, NO_JMX + retries(4)); // saved in between

    runtime.startBackground(file, loaded);
    tasks.runNext(); // the start, then the watcher's looks
    tasks.runNext();
    tasks.runNext();

    assertThat(runtime.config().defaultPolicy().retry().maxAttempts()).isEqualTo(4);
  }

  /** With {@code file}'s configuration, or without a file (JMX off in both: no MBeans here). */
  private AgentRuntime runtime(Path file) throws Exception {
    if (file == null) {
      ConfigSources none = ConfigSources.resolve("", new Properties(), Map.of());
      return new AgentRuntime(
          none, none.apply(ConfigLoader.parse(NO_JMX, "test", Map.of())), tasks);
    }
    ConfigSources sources = ConfigSources.resolve("config=" + file, new Properties(), Map.of());
    return new AgentRuntime(sources, sources.load(Map.of()), tasks);
  }

  private static String retries(int n) {
    return "defaults: { retry: { maxAttempts: " + n + " } }\n";
  }
}
