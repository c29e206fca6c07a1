package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.ConfigSources;
import dev.retryagent.engine.CircuitBreaker;
import dev.retryagent.engine.CircuitState;
import dev.retryagent.engine.RetryCall;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The reloader driven poll by poll, without its thread: what one look at the file does. */
class ConfigReloaderTest {
  private static final String TWO = "defaults: { retry: { maxAttempts: 2 } }\n";
  private static final String FOUR = "defaults: { retry: { maxAttempts: 4 } }\n";

  @TempDir Path dir;
  private Path file;
  private AgentRuntime runtime;
  private ConfigReloader reloader;

  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  @BeforeEach
  void start() throws Exception {
    file = Files.writeString(dir.resolve("config.yml"), TWO);
    runtime = runtime(ConfigSources.resolve("config=" + file, new Properties(), Map.of()));
    reloader = new ConfigReloader(runtime, file);
  }

  private AgentRuntime runtime(ConfigSources sources) throws Exception {
    return new AgentRuntime(sources, sources.load(Map.of()));
  }

  private int maxAttempts() {
    return runtime.config().defaultPolicy().retry().maxAttempts();
  }

  @Test
  void anEditThatRemovesARouteDropsItsBreakerOpenAsItWasFromTheEngine() throws Exception {
    Files.writeString(
        file,
        String.join(
            "\n",
            "routes:",
            "  - name: payments",
            "    match: { hosts: [pay.example] }",
            "    retry: { maxAttempts: 1 }",
            "    circuitBreaker:",
            "      { scope: route, window: { type: count, size: 2 }, minimumCalls: 2 }",
            ""));
    reloader.poll();
    reloader.poll();
    for (int i = 0; i < 2; i++) {
      RetryCall call = runtime.engine().newCall(new GetRequest("pay.example"));
      call.acquireBreaker();
      call.startAttempt();
      call.onResponse(503, null);
    }
    assertThat(runtime.engine().breakers())
        .extracting(CircuitBreaker::key, CircuitBreaker::state)
        .containsExactly(tuple("route:payments", CircuitState.OPEN));

    Files.writeString(file, TWO);
    reloader.poll();
    reloader.poll();

    // No call asks a removed route's breaker again: JMX and Prometheus would report it open for
    // the JVM's life.
    assertThat(runtime.engine().breakers())
        .extracting(CircuitBreaker::key)
        .doesNotContain("route:payments");
  }

  @Test
  void anEditIsAppliedWhenTwoLooksInARowSeeIt() throws IOException {
    Files.writeString(file, FOUR);

    reloader.poll();
    assertThat(maxAttempts()).as("after the first look").isEqualTo(2);
    reloader.poll();

    assertThat(maxAttempts()).isEqualTo(4);
    assertThat(stderr.text())
        .contains("retry-agent: reloaded " + file + ": mode=enforce; no routes")
        .contains("; changed: defaults");
  }

  @Test
  void aReloadSaysWhichExceptionNameLacksItsPackage() throws IOException {
    Files.writeString(
        file, "defaults: { retry: { retryOn: { exceptions: [SocketTimeoutException] } } }\n");

    reloader.poll();
    reloader.poll();

    assertThat(runtime.config().defaultPolicy().retry().retryOnExceptions())
        .containsExactly("SocketTimeoutException");
    assertThat(stderr.text())
        .contains("retry-agent: reloaded " + file)
        .contains("1 warning (loaded; each says what applies):")
        .contains(
            "defaults.retry.retryOn.exceptions[0]: found SocketTimeoutException, a class name"
                + " without its package")
        .contains("did you mean java.net.SocketTimeoutException?");
  }

  @Test
  void aFileCaughtHalfWrittenIsNeverAppliedEvenWhenItIsValid() throws IOException {
    Files.writeString(file, ""); // an empty file is valid: the built-in defaults (3 attempts)
    reloader.poll();
    Files.writeString(file, FOUR);
    reloader.poll();
    assertThat(maxAttempts()).isEqualTo(2);

    reloader.poll();

    assertThat(maxAttempts()).isEqualTo(4);
    assertThat(stderr.text()).doesNotContain("maxAttempts 3").contains("reloaded");
  }

  @Test
  void anEditThatKeepsSizeAndTimeIsStillSeen() throws IOException {
    FileTime before = Files.getLastModifiedTime(file);
    Files.writeString(file, FOUR);
    Files.setLastModifiedTime(file, before);

    reloader.poll();
    reloader.poll();

    assertThat(maxAttempts()).isEqualTo(4);
  }

  @Test
  void anInvalidEditIsReportedOnceWithItsLocationAndThePreviousConfigurationStays()
      throws IOException {
    Files.writeString(file, "defaults: { retry: { maxAttempts: 0 } }\n");

    reloader.poll();
    reloader.poll();
    reloader.poll();

    assertThat(maxAttempts()).isEqualTo(2);
    assertThat(stderr.text())
        .contains("retry-agent: reload of " + file + " rejected, the previous configuration stays")
        .contains(file + ":1:35: defaults.retry.maxAttempts: found 0; allowed 1..10");
    assertThat(stderr.text().split("rejected", -1)).hasSize(2);
  }

  @Test
  void aFileThatDisappearsLeavesTheConfigurationAndIsAppliedWhenItComesBack() throws IOException {
    Files.delete(file);
    reloader.poll();
    reloader.poll();
    assertThat(maxAttempts()).isEqualTo(2);
    assertThat(stderr.text()).contains(file + " cannot be read now");

    Files.writeString(file, FOUR);
    reloader.poll();
    reloader.poll();

    assertThat(maxAttempts()).isEqualTo(4);
  }

  @Test
  void anEditThatChangesOnlyCommentsAppliesNothing() throws IOException {
    Files.writeString(file, "# tuned\n" + TWO);

    reloader.poll();
    reloader.poll();

    assertThat(stderr.text()).contains("the configuration is the same").doesNotContain("reloaded");
  }

  @Test
  void anEditOfTheRedactionSaysSoRatherThanNothing() throws IOException {
    Files.writeString(file, "agent: { redact: { pathSegments: ['tok_.*'] } }\n" + TWO);

    reloader.poll();
    reloader.poll();

    assertThat(runtime.config().pathMask().isNone()).isFalse();
    assertThat(stderr.text())
        .contains("; changed: agent.redact")
        .doesNotContain("changed: nothing");
  }

  @Test
  void anEditOfStrictIsNamedAndSaysItTakesEffectOnlyAtStart() throws IOException {
    Files.writeString(file, "agent: { strict: true }\n" + TWO);

    reloader.poll();
    reloader.poll();

    assertThat(stderr.text())
        .contains("; changed: agent.strict false -> true (takes effect only at start)")
        .doesNotContain("changed: nothing");
  }

  @Test
  void anEditOfTheDeadLetterCapIsNamedWithBothSizes() throws IOException {
    Files.writeString(file, "agent: { deadLetter: { maxBytes: 512MiB } }\n" + TWO);

    reloader.poll();
    reloader.poll();

    assertThat(runtime.config().deadLetterMaxBytes()).isEqualTo(512L << 20);
    assertThat(stderr.text())
        .contains("; changed: agent.deadLetter.maxBytes none -> 512MiB")
        .doesNotContain("changed: nothing");
  }

  @Test
  void anEditOfTheDeadLetterPathIsNamedOnOneLine() throws IOException {
    // A quoted YAML string may hold a line break: the reload's line named the path as it was, its
    // second half on a line of its own, as no other line of the agent writes a path.
    Files.writeString(
        file, "agent: { deadLetter: { path: \"" + dir + "/dead\\nletters.jsonl\" } }\n" + TWO);

    reloader.poll();
    reloader.poll();

    assertThat(runtime.config().deadLetterPath()).isEqualTo(dir + "/dead\nletters.jsonl");
    assertThat(stderr.text())
        .contains("; changed: agent.deadLetter.path none -> " + dir + "/dead letters.jsonl")
        .doesNotContain("\nletters.jsonl");
  }

  @Test
  void reloadFalseStopsTheWatching() throws IOException {
    Files.writeString(file, "agent: { reload: false }\n" + FOUR);

    reloader.poll();
    reloader.poll();

    assertThat(maxAttempts()).isEqualTo(4);
    assertThat(reloader.stopped()).isTrue();
    assertThat(stderr.text()).contains("is no longer watched");
  }

  @Test
  void theModeOverrideOfTheAgentArgumentWinsOverEveryReload() throws Exception {
    runtime =
        runtime(
            ConfigSources.resolve("config=" + file + ",mode=observe", new Properties(), Map.of()));
    reloader = new ConfigReloader(runtime, file);
    Files.writeString(file, "agent: { mode: enforce }\n" + FOUR);

    reloader.poll();
    reloader.poll();

    assertThat(maxAttempts()).isEqualTo(4);
    assertThat(runtime.config().mode().configName()).isEqualTo("observe");
  }

  @Test
  void aModeEditThatTheOverrideHidesIsSaidRatherThanNothingToApply() throws Exception {
    runtime =
        runtime(
            ConfigSources.resolve("config=" + file + ",mode=observe", new Properties(), Map.of()));
    reloader = new ConfigReloader(runtime, file);
    Files.writeString(file, "agent: { mode: off }\n" + TWO);

    reloader.poll();
    reloader.poll();

    assertThat(runtime.config().mode().configName()).isEqualTo("observe");
    assertThat(stderr.text())
        .contains("agent.mode off in the file is overridden: mode=observe from the agent argument");

    // With another edit too: the reload line says it.
    Files.writeString(file, "agent: { mode: off }\n" + FOUR);
    reloader.poll();
    reloader.poll();

    assertThat(maxAttempts()).isEqualTo(4);
    assertThat(stderr.text())
        .contains(
            "changed: defaults; agent.mode off in the file is overridden: mode=observe from the"
                + " agent argument");
  }

  @Test
  void aClientSwitchedOnThatWasNotHookedAtStartNeedsARestartUntilRestarted() throws Exception {
    Files.writeString(file, "agent: { clients: { jdk-http: false } }\n" + TWO);
    runtime = runtime(ConfigSources.resolve("config=" + file, new Properties(), Map.of()));

    String first = runtime.apply(ConfigLoader.parse(TWO, "a.yml", Map.of()));
    String second = runtime.apply(ConfigLoader.parse(FOUR, "b.yml", Map.of()));

    assertThat(first).isEqualTo("agent.clients.jdk-http");
    assertThat(second).as("still not hooked").isEqualTo("agent.clients.jdk-http");
  }
}
