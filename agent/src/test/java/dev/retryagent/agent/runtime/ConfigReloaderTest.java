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
import java.util.ArrayList;
import java.util.List;
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

  /** The watcher's clock for the tests below: a look a second apart, as it polls by default. */
  private long nanos;

  private ConfigReloader clocked() {
    return new ConfigReloader(runtime, file, null, () -> nanos);
  }

  /** One look, {@code millis} after the last. */
  private void lookAfter(ConfigReloader r, long millis) {
    nanos += millis * 1_000_000L;
    r.poll();
  }

  private static final String HOLD_LINE =
      " now asks for nothing but the built-in defaults; applying them if it stays so for 10s (a"
          + " file caught half-written reads the same)";

  @Test
  void aFileCaughtAfterItsLeadingCommentForAWholePollIsNotAppliedAsTheDefaults()
      throws IOException {
    // A rewrite in place that wrote its header line, then stalled for a poll interval: two looks
    // in a row saw a file of comments, which the watcher applied as the built-in defaults (every
    // route, limit, breaker and the dead-letter path dropped) until the rest was written.
    ConfigReloader r = clocked();
    Files.writeString(file, "# managed by deploy; do not edit\n");
    lookAfter(r, 1000);
    lookAfter(r, 1000);
    lookAfter(r, 1000);
    assertThat(maxAttempts()).as("held, not applied").isEqualTo(2);

    Files.writeString(file, "# managed by deploy; do not edit\n" + FOUR);
    lookAfter(r, 1000);
    lookAfter(r, 1000);

    assertThat(maxAttempts()).isEqualTo(4);
    assertThat(stderr.text())
        .contains("retry-agent: " + file + HOLD_LINE)
        .contains(
            "retry-agent: "
                + file
                + " changed before it had stayed the same for 10s; the built-in defaults it asked for were not applied")
        .contains("changed: defaults")
        .doesNotContain("maxAttempts 3");
    assertThat(stderr.text().split("asks for nothing", -1)).as("said once").hasSize(2);
  }

  @Test
  void aRewriteOfTheSameContentCaughtHalfWayAppliesNothing() throws IOException {
    ConfigReloader r = clocked();
    Files.writeString(file, "version: 1\n"); // the first line of a file written line by line
    lookAfter(r, 1000);
    lookAfter(r, 1000);
    assertThat(maxAttempts()).as("held, not applied").isEqualTo(2);
    Files.writeString(file, TWO);
    lookAfter(r, 1000);
    lookAfter(r, 1000);

    assertThat(maxAttempts()).isEqualTo(2);
    assertThat(stderr.text())
        .contains(file + HOLD_LINE)
        .contains(
            file
                + " changed before it had stayed the same for 10s; the built-in defaults it asked for were not applied")
        .doesNotContain("reloaded");
  }

  @Test
  void aFileOfCommentsThatStaysForTenSecondsIsAppliedAsTheDefaults() throws IOException {
    // Commenting out a whole configuration asks for the built-in defaults: it still gets them.
    ConfigReloader r = clocked();
    Files.writeString(file, "# defaults: { retry: { maxAttempts: 2 } }\n");
    lookAfter(r, 1000); // first seen
    for (int i = 0; i < 9; i++) {
      lookAfter(r, 1000);
    }
    lookAfter(r, 999);
    assertThat(maxAttempts()).as("9.999s after it was first seen").isEqualTo(2);

    lookAfter(r, 1);

    assertThat(maxAttempts()).isEqualTo(3);
    assertThat(stderr.text())
        .contains(file + HOLD_LINE)
        .contains("retry-agent: reloaded " + file + ": mode=enforce; no routes")
        .contains("; changed: defaults")
        .doesNotContain("not applied");
    assertThat(stderr.text().split("asks for nothing", -1)).as("said once").hasSize(2);
  }

  @Test
  void aFileOfCommentsSeenTwiceTenSecondsApartIsAppliedAtOnce() throws IOException {
    // With -Dretryagent.reload.pollMillis=10000 or more, the two looks already span the wait.
    ConfigReloader r = clocked();
    Files.writeString(file, "# nothing\n");
    lookAfter(r, 10_000);
    lookAfter(r, 10_000);

    assertThat(maxAttempts()).isEqualTo(3);
    assertThat(stderr.text()).contains("reloaded").doesNotContain("asks for nothing");
  }

  @Test
  void aFileOfCommentsInPlaceOfTheDefaultsIsTheSameConfigurationAsBefore() throws Exception {
    Files.writeString(file, "# tuned later\n");
    runtime = runtime(ConfigSources.resolve("config=" + file, new Properties(), Map.of()));
    ConfigReloader r = clocked();
    Files.writeString(file, "# tuned later, maybe\n");

    lookAfter(r, 1000);
    lookAfter(r, 1000);

    assertThat(stderr.text())
        .contains("the configuration is the same, nothing to apply")
        .doesNotContain("asks for nothing");
  }

  private static final String NOT_APPLIED_LINE =
      " changed before it had stayed the same for 10s; the built-in defaults it asked for were not applied";

  /** The watcher's lines so far, without the {@code retry-agent: } prefix, the file as FILE. */
  private List<String> reloaderLines() {
    List<String> lines = new ArrayList<>();
    for (String line : stderr.text().split("\\R")) {
      if (line.startsWith("retry-agent: ")) {
        lines.add(line.substring("retry-agent: ".length()).replace(file.toString(), "FILE"));
      }
    }
    return lines;
  }

  /** A header a deploy script writes first; the token must never reach the log. */
  private static final String HEADER = "# written by deploy (token hunter2); do not edit\n";

  @Test
  void heldDefaultsThenTheRunningFileBackBeforeTenSecondsAppliesNothingAndSaysSoOnce()
      throws IOException {
    // A rewrite in place of the running content, caught after its header for a poll and more.
    ConfigReloader r = clocked();
    Files.writeString(file, HEADER);
    lookAfter(r, 1000); // t=1: first seen
    lookAfter(r, 1000); // t=2: settled, held
    Files.writeString(file, TWO);
    lookAfter(r, 1000); // t=3: the running content again
    for (int i = 0; i < 15; i++) {
      lookAfter(r, 1000);
    }

    assertThat(maxAttempts()).isEqualTo(2);
    assertThat(reloaderLines()).containsExactly("FILE" + HOLD_LINE, "FILE" + NOT_APPLIED_LINE);
    assertThat(stderr.text()).doesNotContain("hunter2");
  }

  @Test
  void heldDefaultsThenTheFinishedFileIsAppliedAfterTheUsualTwoLooks() throws IOException {
    ConfigReloader r = clocked();
    Files.writeString(file, HEADER);
    lookAfter(r, 1000);
    lookAfter(r, 1000);
    Files.writeString(file, HEADER + FOUR);
    lookAfter(r, 1000); // t=3: seen once
    assertThat(maxAttempts()).as("seen once").isEqualTo(2);

    lookAfter(r, 1000); // t=4: seen twice, applied: no 10 s wait for a file that asks for more

    assertThat(maxAttempts()).isEqualTo(4);
    assertThat(reloaderLines())
        .containsExactly(
            "FILE" + HOLD_LINE,
            "FILE" + NOT_APPLIED_LINE,
            "reloaded FILE: mode=enforce; no routes (every call gets the defaults); reload=on;"
                + " changed: defaults");
    assertThat(stderr.text()).doesNotContain("hunter2");
  }

  @Test
  void heldDefaultsReplacedByOtherDefaultsWaitsTenSecondsFromTheChange() throws IOException {
    // A writer that writes its header line by line, stalling after each: each change starts the
    // wait again, as for any file that asks for the defaults.
    ConfigReloader r = clocked();
    Files.writeString(file, HEADER);
    lookAfter(r, 1000); // t=1: first seen
    lookAfter(r, 1000); // t=2: held
    Files.writeString(file, HEADER + "# generated from template prod.yml.tmpl\n");
    lookAfter(r, 1000); // t=3: changed: the first hold ends, not applied
    lookAfter(r, 1000); // t=4: held again, counted from t=3
    for (int i = 0; i < 7; i++) {
      lookAfter(r, 1000); // up to t=11: 10 s after the first header was first seen
    }
    lookAfter(r, 1999); // t=12.999
    assertThat(maxAttempts()).as("9.999 s after the second header was first seen").isEqualTo(2);

    lookAfter(r, 1); // t=13

    assertThat(maxAttempts()).isEqualTo(3);
    assertThat(reloaderLines())
        .containsExactly(
            "FILE" + HOLD_LINE,
            "FILE" + NOT_APPLIED_LINE,
            "FILE" + HOLD_LINE,
            "reloaded FILE: mode=enforce; no routes (every call gets the defaults); reload=on;"
                + " changed: defaults");
    assertThat(stderr.text()).doesNotContain("hunter2");
  }

  @Test
  void heldDefaultsThenAnInvalidFileThenAValidOneAppliesTheValidOneOnly() throws IOException {
    ConfigReloader r = clocked();
    Files.writeString(file, HEADER);
    lookAfter(r, 1000);
    lookAfter(r, 1000); // t=2: held
    Files.writeString(file, HEADER + "defaults: { retry: { maxAttempts: 0 } }\n");
    lookAfter(r, 1000);
    lookAfter(r, 1000); // t=4: rejected
    Files.writeString(file, HEADER + FOUR);
    lookAfter(r, 1000);
    assertThat(maxAttempts()).isEqualTo(2);
    lookAfter(r, 1000); // t=6: applied
    assertThat(maxAttempts()).isEqualTo(4);
    for (int i = 0; i < 10; i++) {
      lookAfter(r, 1000); // past 10 s after the header was first seen: nothing more happens
    }

    assertThat(maxAttempts()).isEqualTo(4);
    assertThat(reloaderLines())
        .containsExactly(
            "FILE" + HOLD_LINE,
            "FILE" + NOT_APPLIED_LINE,
            "reload of FILE rejected, the previous configuration stays (1 problem):",
            "reloaded FILE: mode=enforce; no routes (every call gets the defaults); reload=on;"
                + " changed: defaults");
    assertThat(stderr.text()).contains(file + ":2:35: defaults.retry.maxAttempts: found 0");
    assertThat(stderr.text()).doesNotContain("hunter2");
  }

  @Test
  void heldDefaultsThenAnInvalidFileThenTheDefaultsAgainWaitsTenSecondsFromTheirReturn()
      throws IOException {
    ConfigReloader r = clocked();
    Files.writeString(file, HEADER);
    lookAfter(r, 1000); // t=1: first seen
    lookAfter(r, 1000); // t=2: held
    Files.writeString(file, HEADER + "defaults: { retry: { maxAttempts: 0 } }\n");
    lookAfter(r, 1000);
    lookAfter(r, 1000); // t=4: rejected
    Files.writeString(file, HEADER);
    lookAfter(r, 1000); // t=5: first seen again
    lookAfter(r, 1000); // t=6: held again
    for (int i = 0; i < 8; i++) {
      lookAfter(r, 1000); // up to t=14
    }
    assertThat(maxAttempts()).as("13 s after first seen, 9 s after its return").isEqualTo(2);

    lookAfter(r, 1000); // t=15

    assertThat(maxAttempts()).isEqualTo(3);
    assertThat(reloaderLines())
        .containsExactly(
            "FILE" + HOLD_LINE,
            "FILE" + NOT_APPLIED_LINE,
            "reload of FILE rejected, the previous configuration stays (1 problem):",
            "FILE" + HOLD_LINE,
            "reloaded FILE: mode=enforce; no routes (every call gets the defaults); reload=on;"
                + " changed: defaults");
  }

  @Test
  void heldDefaultsThenTheFileDeletedKeepsTheConfigurationAndAReturnWaitsAfresh()
      throws IOException {
    ConfigReloader r = clocked();
    Files.writeString(file, HEADER);
    lookAfter(r, 1000); // t=1: first seen
    lookAfter(r, 1000); // t=2: held
    Files.delete(file);
    for (int i = 0; i < 3; i++) {
      lookAfter(r, 1000); // t=3..5: gone
    }
    Files.writeString(file, HEADER);
    lookAfter(r, 1000); // t=6: back, first seen again
    lookAfter(r, 1000); // t=7: held again
    for (int i = 0; i < 8; i++) {
      lookAfter(r, 1000); // up to t=15
    }
    assertThat(maxAttempts()).as("14 s after first seen, 9 s after its return").isEqualTo(2);

    lookAfter(r, 1000); // t=16

    assertThat(maxAttempts()).isEqualTo(3);
    assertThat(reloaderLines())
        .containsExactly(
            "FILE" + HOLD_LINE,
            "FILE" + NOT_APPLIED_LINE,
            "FILE cannot be read now; the configuration stays as it is until it is back",
            "FILE" + HOLD_LINE,
            "reloaded FILE: mode=enforce; no routes (every call gets the defaults); reload=on;"
                + " changed: defaults");
  }

  @Test
  void heldDefaultsThenTheFileEmptiedKeepsTheConfigurationUntilTheRealFileIsBack()
      throws IOException {
    // A writer that truncates, writes its header, stalls, truncates again and starts over.
    ConfigReloader r = clocked();
    Files.writeString(file, HEADER);
    lookAfter(r, 1000);
    lookAfter(r, 1000); // t=2: held
    Files.writeString(file, "");
    for (int i = 0; i < 15; i++) {
      lookAfter(r, 1000); // t=3..17: empty, long past 10 s after the header was first seen
    }
    assertThat(maxAttempts()).isEqualTo(2);
    Files.writeString(file, TWO);
    lookAfter(r, 1000);
    lookAfter(r, 1000);

    assertThat(maxAttempts()).isEqualTo(2);
    assertThat(reloaderLines())
        .containsExactly(
            "FILE" + HOLD_LINE,
            "FILE" + NOT_APPLIED_LINE,
            "FILE is empty (a write in progress?); the configuration stays as it is",
            "FILE changed; the configuration is the same, nothing to apply");
  }

  @Test
  void aFileCutInTheMiddleOfARouteListThatStillParsesIsAppliedAfterTwoLooks() throws Exception {
    // What docs/operations.md says of a writer in place that stalls mid-file for a poll: the cut
    // file is valid and asks for more than the defaults, so nothing tells it from an edit. Only a
    // write-then-rename is never seen half-way.
    String routes =
        "routes:\n"
            + "  - name: a\n"
            + "    match: { paths: [\"/a/**\"] }\n"
            + "    retry: { maxAttempts: 4 }\n"
            + "  - name: b\n"
            + "    match: { paths: [\"/b/**\"] }\n"
            + "    retry: { maxAttempts: 5 }\n";
    Files.writeString(file, routes);
    runtime = runtime(ConfigSources.resolve("config=" + file, new Properties(), Map.of()));
    ConfigReloader r = clocked();
    Files.writeString(file, routes.substring(0, routes.indexOf("  - name: b")));

    lookAfter(r, 1000);
    lookAfter(r, 1000);

    assertThat(runtime.config().routes()).extracting(route -> route.name()).containsExactly("a");
    assertThat(stderr.text()).contains("changed: routes: b removed").doesNotContain("asks for");
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

  @Test
  void anEditSavedOnceTheJvmsExitHasBegunIsNeitherAppliedNorSaidAndTheWatchingEnds()
      throws Exception {
    // The exit hook closed the fleet, the dead letters and the exporters, but the watcher went on:
    // an edit saved while the application drained (a ConfigMap changed during a rolling deploy)
    // started a new dead-letter writer and the Prometheus endpoint again, with no exit to close
    // them, and printed a reload line after the exit had begun.
    ManualScheduler tasks = new ManualScheduler();
    reloader.watch(tasks);
    Files.writeString(file, FOUR);
    reloader.poll(); // the edit seen; applied once it has settled, at the next look
    runtime.onExit();

    reloader.poll();
    assertThat(maxAttempts()).isEqualTo(2);
    assertThat(stderr.text()).doesNotContain("reloaded");

    tasks.runNext(); // the scheduled look: made no more, and the next one not scheduled
    assertThat(tasks.pending()).isEmpty();
    assertThat(runtime.apply(ConfigLoader.parse(FOUR, "b.yml", Map.of()))).isNull();
    assertThat(maxAttempts()).isEqualTo(2);
  }
}
