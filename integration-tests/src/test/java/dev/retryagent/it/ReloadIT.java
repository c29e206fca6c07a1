package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.it.apps.Apache4ScenarioApp;
import dev.retryagent.it.apps.Apache5ScenarioApp;
import dev.retryagent.it.apps.ApacheAsyncApp;
import dev.retryagent.it.harness.AgentScenarios;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.Ops;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code agent.reload} in a running JVM: the file is edited in place while {@code OpsApp} runs, the
 * test waits for the agent's reload line on stderr, then checks what the next calls did at the
 * server. The watcher polls every 50 ms here ({@code retryagent.reload.pollMillis}).
 */
class ReloadIT {
  @TempDir Path dir;

  /** Fast retries, and neither budget nor breaker in the way of counting requests. */
  private static String retries(int maxAttempts) {
    return "defaults:\n"
        + "  retry: { maxAttempts: "
        + maxAttempts
        + ", backoff: { initial: 1ms, max: 1ms, jitter: none } }\n"
        + "  budget: { enabled: false }\n"
        + "  circuitBreaker: { enabled: false }\n";
  }

  private Path config(String yaml) {
    return Ops.write(dir.resolve("config.yml"), yaml);
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void aValidEditAppliesToTheCallsThatStartAfterIt(Path jdk) throws IOException {
    Path file = config(retries(2));
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app = Ops.start(jdk, file)) {
      server.setDefaultReply(status(503));
      Ops.get(app, "before", server.uri("/items"));
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(2);

      Ops.write(file, retries(4));
      app.awaitStderrCount("retry-agent: reloaded " + file, 1);
      Ops.get(app, "after", server.uri("/items"));

      assertThat(app.value("after.status")).isEqualTo("503");
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(2 + 4);
      assertThat(app.stderr())
          .contains(
              "retry-agent: reloaded "
                  + file
                  + ": mode=enforce; no routes (every call gets the defaults); reload=on;"
                  + " changed: defaults");
      // The watcher has no thread of its own: its looks run on the agent's shared two, as the
      // exporters' start did (issue 13: at most two agent threads, whatever waits).
      assertThat(agentThreads(app, "t")).allMatch(name -> name.startsWith("retry-agent-async-"));
    }
  }

  static Stream<Arguments> jdksAndApache5() {
    return AgentScenarios.jdksWith(List.of(ApacheVersions.V5_1, ApacheVersions.V5_6));
  }

  /**
   * A reload that sets {@code agent.clients.apache-httpclient: false} passes the calls of an async
   * client built while the agent was on straight through: HttpClient's own resend of the 503 (after
   * its 1 s) and nothing of the policy's, on HttpClient's dispatcher thread, as without the agent
   * (ApacheAsyncAgentIT); switched on again, the policy's attempts are back.
   */
  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndApache5")
  void switchingApacheOffPassesTheAsyncClientsCallsThrough(Path jdk, ApacheVersions version)
      throws IOException {
    Path file = config(retries(3));
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app = startApache(jdk, version, file, ApacheAsyncApp.class)) {
      app.awaitValue("ready");
      server.setDefaultReply(status(503));
      app.send(server.uri("/on").toString());
      app.awaitValue("1.thread");
      assertThat(app.value("1.status")).as(app.describe()).isEqualTo("503");
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(3);

      Ops.write(file, retries(3) + "agent:\n  clients: { apache-httpclient: false }\n");
      app.awaitStderrCount("retry-agent: reloaded " + file, 1);
      app.send(server.uri("/off").toString());
      assertThat(app.awaitValue("2.thread")).as(app.describe()).startsWith("httpclient-dispatch");
      assertThat(app.value("2.status")).as(app.describe()).isEqualTo("503");
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(3 + 2);

      Ops.write(file, retries(3));
      app.awaitStderrCount("retry-agent: reloaded " + file, 2);
      app.send(server.uri("/again").toString());
      app.awaitValue("3.thread");
      assertThat(app.value("3.status")).as(app.describe()).isEqualTo("503");
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(3 + 2 + 3);
      assertThat(app.stderr()).as(app.describe()).doesNotContain("internal error");
    }
  }

  static Stream<Arguments> jdksAndApache() {
    return AgentScenarios.jdksWith(ApacheVersions.all());
  }

  /**
   * The classic clients' twin of {@link #switchingApacheOffPassesTheAsyncClientsCallsThrough}: a
   * reload that sets {@code agent.clients.apache-httpclient: false} passes the calls of a client
   * built while the agent was on through, with HttpClient's own resends as without the agent (4.5
   * sends a 503 once; 5.x resends it once after its 1 s), and switched on again the policy's
   * attempts are back.
   */
  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndApache")
  void switchingApacheOffPassesTheClassicClientsCallsThrough(Path jdk, ApacheVersions version)
      throws IOException {
    Path file = config(retries(3));
    int own = version == ApacheVersions.V4_5 ? 1 : 2;
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app =
            startApache(
                jdk,
                version,
                file,
                version == ApacheVersions.V4_5
                    ? Apache4ScenarioApp.class
                    : Apache5ScenarioApp.class,
                "--stdin")) {
      app.awaitValue("ready");
      server.setDefaultReply(status(503));
      app.send("reload.on|execute|GET|" + server.uri("/on") + "||");
      assertThat(app.awaitValue("reload.on.status")).as(app.describe()).isEqualTo("503");
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(3);

      Ops.write(file, retries(3) + "agent:\n  clients: { apache-httpclient: false }\n");
      app.awaitStderrCount("retry-agent: reloaded " + file, 1);
      app.send("reload.off|execute|GET|" + server.uri("/off") + "||");
      assertThat(app.awaitValue("reload.off.status")).as(app.describe()).isEqualTo("503");
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(3 + own);

      Ops.write(file, retries(3));
      app.awaitStderrCount("retry-agent: reloaded " + file, 2);
      app.send("reload.again|execute|GET|" + server.uri("/again") + "||");
      assertThat(app.awaitValue("reload.again.status")).as(app.describe()).isEqualTo("503");
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(3 + own + 3);
      assertThat(app.stderr()).as(app.describe()).doesNotContain("internal error");
    }
  }

  /** {@code main} with {@code version}'s jars and the agent reading {@code file}. */
  private static ForkedJvm.Running startApache(
      Path jdk, ApacheVersions version, Path file, Class<?> main, String... args) {
    return ForkedJvm.builder(jdk)
        .classpath(version.jars())
        .agentArgs("config=" + file)
        .jvmArgs(Ops.FAST_AGENT)
        .mainClass(main)
        .args(args)
        .timeout(Duration.ofSeconds(120))
        .start();
  }

  /** The names of the agent's threads now ({@code retry-agent-*}). */
  private static List<String> agentThreads(ForkedJvm.Running app, String label) {
    return Arrays.stream(Ops.threads(app, label).split(","))
        .filter(name -> name.startsWith("retry-agent-"))
        .collect(Collectors.toList());
  }

  @Test
  void theWatcherStartsAfterTheFirstCallWithoutWaitingForTheDelay() throws IOException {
    // The delay after start-up pushed out of reach: only the first call can start the watcher
    // (and the exporters, with the same task), a second after it (AgentRuntime).
    Path file = config(retries(1));
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app =
            Ops.start(Jdks.jdk17(), file, "-Dretryagent.exporters.delayMillis=600000")) {
      Ops.write(file, retries(3));
      // Ten polls of a watcher that would run before the first call: the edit waits.
      await()
          .during(Duration.ofMillis(500))
          .atMost(Duration.ofSeconds(5))
          .until(() -> !app.stderr().contains("reloaded"));

      Ops.get(app, "first", server.uri("/items"));

      // The watcher took its first look at start-up, so the edit made before it ran is applied.
      app.awaitStderrCount("retry-agent: reloaded " + file, 1);
      assertThat(agentThreads(app, "t")).allMatch(name -> name.startsWith("retry-agent-async-"));
    }
  }

  /**
   * A file rewritten in place, caught after its leading comment for longer than a poll: it asks for
   * nothing but the built-in defaults, so the real agent holds it for its 10 s (no property
   * shortens them; the watcher polls every 50 ms here) while the route goes on retrying, then
   * applies it, with a line at each end. The whole test takes about 12 s.
   */
  @Test
  void aFileOfCommentsWrittenOverARunningConfigurationIsAppliedOnlyAfterTenQuietSeconds()
      throws IOException {
    Path file =
        config(
            "routes:\n"
                + "  - name: items\n"
                + "    match: { paths: [\"/items/**\"] }\n"
                + "    retry: { maxAttempts: 4, backoff: { initial: 1ms, max: 1ms, jitter: none } }\n"
                + "    budget: { enabled: false }\n"
                + "    circuitBreaker: { enabled: false }\n");
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app = Ops.start(Jdks.jdk17(), file)) {
      server.setDefaultReply(status(503));

      long written = System.nanoTime();
      Ops.write(file, "# managed by deploy; do not edit\n");
      app.awaitStderrCount(
          "retry-agent: "
              + file
              + " now asks for nothing but the built-in defaults; applying them if it stays so for"
              + " 10s (a file caught half-written reads the same)",
          1);
      Ops.get(app, "held", server.uri("/items/1"));
      // The hold counts from the agent's first look at the comment, which came after the write.
      assertThat(Duration.ofNanos(System.nanoTime() - written))
          .as("the call ended within the hold (else the machine stalled for 10 s)")
          .isLessThan(Duration.ofSeconds(10));
      assertThat(server.requestCount()).as("the route still retries").isEqualTo(4);
      assertThat(app.stderr()).doesNotContain("reloaded");

      app.awaitStderrCount("retry-agent: reloaded " + file, 1);
      assertThat(Duration.ofNanos(System.nanoTime() - written))
          .as("applied 10 s or more after the write")
          .isGreaterThanOrEqualTo(Duration.ofSeconds(10));
      Ops.get(app, "applied", server.uri("/items/2"));

      assertThat(server.requestCount()).as("the built-in defaults: 3 attempts").isEqualTo(4 + 3);
      assertThat(app.stderr())
          .contains(
              "retry-agent: reloaded "
                  + file
                  + ": mode=enforce; no routes (every call gets the defaults); reload=on;"
                  + " changed: routes: items removed")
          .doesNotContain("were not applied");
    }
  }

  @Test
  void anInvalidEditIsReportedWithItsLocationsAndThePreviousConfigurationStays() {
    Path file = config(retries(2));
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app = Ops.start(Jdks.jdk17(), file)) {
      server.setDefaultReply(status(503));

      Ops.write(file, retries(0).replace("budget:", "budgett:"));
      app.awaitStderrCount("rejected, the previous configuration stays", 1);
      Ops.get(app, "a", server.uri("/items"));

      assertThat(server.requestCount()).as(app.describe()).isEqualTo(2);
      assertThat(app.stderr())
          .contains("retry-agent: reload of " + file + " rejected, the previous configuration")
          .contains(file + ":2:25: defaults.retry.maxAttempts: found 0; allowed 1..10")
          .contains(file + ":3:3: defaults.budgett: unknown key budgett; did you mean `budget`?");

      // The watcher goes on: the fixed file applies.
      Ops.write(file, retries(3));
      app.awaitStderrCount("retry-agent: reloaded " + file, 1);
      Ops.get(app, "b", server.uri("/items"));
      assertThat(server.requestCount()).isEqualTo(2 + 3);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  /** Route {@code a} has a breaker that opens after two failures and stays open for an hour. */
  private static String breakerRoutes(int bAttempts, int aAttempts, String aOpenFor) {
    return "routes:\n"
        + "  - name: a\n"
        + "    match: { paths: [\"/a/**\"] }\n"
        + "    retry: { maxAttempts: "
        + aAttempts
        + ", backoff: { initial: 1ms, max: 1ms } }\n"
        + "    circuitBreaker:\n"
        + "      window: { type: count, size: 2 }\n"
        + "      minimumCalls: 2\n"
        + "      openFor: "
        + aOpenFor
        + "\n"
        + "  - name: b\n"
        + "    match: { paths: [\"/b/**\"] }\n"
        + "    retry: { maxAttempts: "
        + bAttempts
        + ", backoff: { initial: 1ms, max: 1ms } }\n";
  }

  @Test
  void anOpenBreakerStaysOpenWhenOtherSettingsChangeAndStartsAfreshWhenItsOwnSectionChanges()
      throws IOException {
    Path file = config(breakerRoutes(2, 1, "1h"));
    try (CountingServer a = CountingServer.start();
        CountingServer b = CountingServer.start();
        ForkedJvm.Running app = Ops.start(Jdks.jdk17(), file)) {
      a.setDefaultReply(status(503));
      Ops.get(app, "a1", a.uri("/a/x"));
      Ops.get(app, "a2", a.uri("/a/x"));
      app.awaitStderrCount("circuit breaker http://127.0.0.1:" + a.port() + " opened", 1);

      // Another route changes: a's breaker is the same object, still open.
      Ops.write(file, breakerRoutes(3, 1, "1h"));
      app.awaitStderrCount("retry-agent: reloaded", 1);
      Ops.get(app, "a3", a.uri("/a/x"));
      assertThat(app.value("a3.error")).as(app.describe()).endsWith("CircuitBreakerOpenException");
      assertThat(a.requestCount()).isEqualTo(2);
      assertThat(app.stderr()).contains("changed: routes: b changed");

      // a's retry section changes, its breaker section does not: still open.
      Ops.write(file, breakerRoutes(3, 2, "1h"));
      app.awaitStderrCount("retry-agent: reloaded", 2);
      Ops.get(app, "a4", a.uri("/a/x"));
      assertThat(app.value("a4.error")).endsWith("CircuitBreakerOpenException");
      assertThat(a.requestCount()).isEqualTo(2);

      // a's breaker section changes: a new breaker, closed.
      Ops.write(file, breakerRoutes(3, 2, "2h"));
      app.awaitStderrCount("retry-agent: reloaded", 3);
      Ops.get(app, "a5", a.uri("/a/x"));
      assertThat(app.value("a5.status")).as(app.describe()).isEqualTo("503");
      assertThat(a.requestCount()).isEqualTo(2 + 2);
      assertThat(b.requestCount()).isZero();
    }
  }

  @Test
  void theModeSwitchesByReload() throws IOException {
    Path file = config(retries(3));
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app = Ops.start(Jdks.jdk17(), file)) {
      server.setDefaultReply(status(503));
      Ops.get(app, "e1", server.uri("/enforce1"));
      assertThat(server.requestCount()).isEqualTo(3);

      Ops.write(file, "agent: { mode: observe }\n" + retries(3));
      app.awaitStderrCount("retry-agent: reloaded", 1);
      Ops.get(app, "o", server.uri("/observe"));
      assertThat(server.requestCount()).isEqualTo(3 + 1);
      assertThat(app.stderr()).contains("/observe attempt 1 failed (503), would retry in");

      Ops.write(file, "agent: { mode: off }\n" + retries(3));
      app.awaitStderrCount("retry-agent: reloaded", 2);
      Ops.get(app, "off", server.uri("/off"));
      assertThat(server.requestCount()).isEqualTo(3 + 1 + 1);
      assertThat(app.stderr()).doesNotContain("/off");

      Ops.write(file, "agent: { mode: enforce }\n" + retries(3));
      app.awaitStderrCount("retry-agent: reloaded", 3);
      Ops.get(app, "e2", server.uri("/enforce2"));
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(3 + 1 + 1 + 3);
      assertThat(app.stderr())
          .contains("changed: agent.mode enforce -> observe")
          .contains("changed: agent.mode observe -> off")
          .contains("changed: agent.mode off -> enforce");
    }
  }

  @Test
  void theLogLevelSwitchesByReload() throws IOException {
    Path file = config("agent: { log: { level: warn } }\n" + retries(2));
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app = Ops.start(Jdks.jdk17(), file)) {
      server.enqueue(status(503));
      Ops.get(app, "quiet", server.uri("/quiet"));
      assertThat(app.value("quiet.status")).isEqualTo("200");

      Ops.write(file, "agent: { log: { level: debug } }\n" + retries(2));
      app.awaitStderrCount("retry-agent: reloaded", 1);
      server.enqueue(status(503));
      Ops.get(app, "loud", server.uri("/loud"));

      assertThat(server.requestCount()).isEqualTo(4);
      assertThat(app.stderr())
          .doesNotContain("/quiet")
          .contains("/loud attempt 1 of 2 starting")
          .contains("/loud attempt 1 failed (503), retrying in")
          .contains("/loud succeeded (200) on attempt 2");
    }
  }

  @Test
  void reloadFalseWatchesNothing() throws IOException {
    Path file = config("agent: { reload: false }\n" + retries(2));
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app = Ops.start(Jdks.jdk17(), file)) {
      server.setDefaultReply(status(503));
      assertThat(app.stderr()).contains("reload=off");
      // The exporters' start is due at once here (retryagent.exporters.delayMillis=0): a watcher
      // would take its looks from then on, 50 ms apart, and see the edit below.
      Ops.write(file, "agent: { reload: false }\n" + retries(4));
      // Ten poll intervals of a watcher that would exist: nothing is reloaded.
      await()
          .during(Duration.ofMillis(500))
          .atMost(Duration.ofSeconds(5))
          .until(() -> !app.stderr().contains("reloaded"));
      Ops.get(app, "a", server.uri("/items"));

      assertThat(server.requestCount()).as(app.describe()).isEqualTo(2);
    }
  }

  @Test
  void metricsAndTheDeadLetterFileFollowReloads() throws IOException {
    int first = Ops.freePort();
    int second = Ops.freePort();
    Path letters1 = dir.resolve("dead-1.jsonl");
    Path letters2 = dir.resolve("dead-2.jsonl");
    Path file = config(retries(1));
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app = Ops.start(Jdks.jdk17(), file)) {
      server.setDefaultReply(status(503));
      assertThat(Ops.scrape(first)).isNull();

      Ops.write(file, metrics(first, letters1) + retries(1));
      app.awaitStderrCount("retry-agent: reloaded", 1);
      Ops.get(app, "a", server.uri("/one"));
      await().atMost(ForkedJvm.Running.WAIT).until(() -> Ops.scrape(first) != null);
      assertThat(Ops.scrape(first)).contains("retryagent_calls_total{route=\"default\"");
      await().atMost(ForkedJvm.Running.WAIT).until(() -> lines(letters1).size() == 1);

      Ops.write(file, metrics(second, letters2) + retries(1));
      app.awaitStderrCount("retry-agent: reloaded", 2);
      Ops.get(app, "b", server.uri("/two"));
      await().atMost(ForkedJvm.Running.WAIT).until(() -> lines(letters2).size() == 1);
      assertThat(Ops.scrape(first)).as("the old port").isNull();
      assertThat(Ops.scrape(second)).contains("retryagent_calls_total{route=\"default\"");
      assertThat(lines(letters1)).singleElement().asString().contains("\"path\":\"/one\"");
      assertThat(lines(letters2)).singleElement().asString().contains("\"path\":\"/two\"");

      Ops.write(file, retries(1));
      app.awaitStderrCount("retry-agent: reloaded", 3);
      assertThat(Ops.scrape(second)).as("prometheus turned off").isNull();
      assertThat(app.stderr()).doesNotContain("needs a restart");
    }
  }

  private static String metrics(int port, Path deadLetters) {
    return "agent:\n"
        + "  metrics: { prometheus: { enabled: true, port: "
        + port
        + " } }\n"
        + "  deadLetter: { path: \""
        + deadLetters
        + "\" }\n";
  }

  private static List<String> lines(Path file) throws IOException {
    return Files.exists(file) ? Files.readAllLines(file) : List.of();
  }

  /**
   * A Kubernetes ConfigMap mounted as a volume: {@code config.yml -> ..data/config.yml}, {@code
   * ..data -> ..<timestamp>}. The kubelet updates it by writing a new timestamped directory,
   * pointing a new symlink at it and renaming that over {@code ..data} (atomic), then deleting the
   * old directory. The file the agent was given never changes as a path; what it resolves to does.
   */
  @Test
  void aKubernetesConfigMapUpdateSwappingTheDataSymlinkIsFollowed() throws IOException {
    Path first = Files.createDirectory(dir.resolve("..2026_12_01_10_00_00.000000001"));
    Ops.write(first.resolve("config.yml"), retries(2));
    Files.createSymbolicLink(dir.resolve("..data"), first.getFileName());
    Path file =
        Files.createSymbolicLink(dir.resolve("config.yml"), Path.of("..data", "config.yml"));
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app = Ops.start(Jdks.jdk17(), file)) {
      server.setDefaultReply(status(503));
      Ops.get(app, "before", server.uri("/items"));
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(2);

      // The kubelet's swap, step by step.
      Path second = Files.createDirectory(dir.resolve("..2026_12_01_10_05_00.000000002"));
      Ops.write(second.resolve("config.yml"), retries(4));
      Path newData = Files.createSymbolicLink(dir.resolve("..data_tmp"), second.getFileName());
      Files.move(newData, dir.resolve("..data"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      Files.delete(first.resolve("config.yml"));
      Files.delete(first);

      app.awaitStderrCount("retry-agent: reloaded " + file, 1);
      Ops.get(app, "after", server.uri("/items"));
      assertThat(server.requestCount()).as(app.describe()).isEqualTo(2 + 4);
      assertThat(app.stderr()).doesNotContain("cannot be read now");
    }
  }
}
