package dev.retryagent.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RetryAgentCliTest {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  private int run(String... args) {
    return RetryAgent.runCli(
        args,
        new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  @Test
  void versionPrintsTheNameAndVersion() {
    assertThat(run("--version")).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8)).startsWith("retry-agent ");
  }

  @Test
  void helpShowsHowToStartTheAgent() {
    assertThat(run("--help")).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8))
        .contains("-javaagent:retry-agent.jar=config.yml");
  }

  @Test
  void noArgumentsShowHelp() {
    assertThat(run()).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8)).contains("Usage");
  }

  @Test
  void anUnknownOptionFailsWithExitCode2() {
    assertThat(run("--frobnicate")).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("unknown option --frobnicate");
  }

  @Test
  void helpNamesEveryCommandAndTheAttachLimits() {
    assertThat(run("--help")).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8))
        .contains("validate FILE")
        .contains("explain FILE METHOD URL [NAME:VALUE ...]")
        .contains("attach PID [FILE]")
        .contains("OkHttp: only clients built after the attach")
        .contains("-XX:+EnableDynamicAgentLoading");
  }

  @Test
  void helpNamesEveryHookedClientAndWhatAnAttachCoversOfEach() {
    // The help once said the agent handles java.net.http and OkHttp alone.
    assertThat(run("--help")).isZero();
    String help = out.toString(StandardCharsets.UTF_8);
    String firstTwoLines = String.join(" ", help.split("\\R", 3)[0], help.split("\\R", 3)[1]);
    assertThat(firstTwoLines)
        .contains("java.net.http")
        .contains("OkHttp")
        .contains("Apache HttpClient 4.5 and 5.x (classic and async)")
        .contains("HttpURLConnection")
        // It once said "5.x async is not hooked", long after the async clients were.
        .doesNotContain("not hooked");
    assertThat(help)
        .contains("Apache HttpClient 4.5: every client, also those built before the attach")
        .contains("5.x (classic and async): only clients built after it")
        .contains("HttpURLConnection: connections opened after the attach");
  }

  @Test
  void anUnknownCommandFailsWithExitCode2() {
    assertThat(run("frobnicate")).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("unknown command frobnicate");
  }

  @Test
  void validateRunsTheHiddenCommand(@TempDir Path dir) throws IOException {
    Path file = Files.writeString(dir.resolve("c.yml"), "agent: { mode: observe }\n");

    assertThat(run("validate", file.toString())).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8)).startsWith(file + ": valid; mode=observe");
  }

  @Test
  void aJvmThatAlreadyHasTheAgentIsToldToBeEditedOnlyWhenItsFileIsWatched() {
    AttachCommand attach =
        new AttachCommand(
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    String watched = "jdk-http armed (send, sendAsync); config=/etc/a.yml, mode=enforce, reload=on";
    String failed =
        "not installed, the application runs without retries: invalid configuration (set"
            + " agent.strict: true to stop instead): /etc/a.yml:2:3: agent.mod: unknown key mod";
    String off = "nothing hooked (mode=off); config=/etc/a.yml, mode=off, reload=off";

    assertThat(attach.alreadyThere("12", watched)).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8)).contains("edit its configuration file");
    for (String line : new String[] {failed, off}) {
      out.reset();
      attach.alreadyThere("12", line);
      // Nothing watches the file there: an edit would change nothing.
      assertThat(out.toString(StandardCharsets.UTF_8))
          .as(line)
          .doesNotContain("edit its configuration file")
          .contains("only a restart of 12 changes this");
    }
    assertThat(attach.alreadyThere("12", failed)).isEqualTo(1);
  }

  @Test
  void aWatchedFileIsSeenWhateverTheStartUpLineSaysAfterItsConfiguration() {
    AttachCommand attach =
        new AttachCommand(
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    String watched = "jdk-http armed (send, sendAsync); config=/etc/a.yml, mode=enforce, reload=on";
    String[] stillWatched = {
      watched
          + "; 1 warning (loaded; each says what applies): /etc/a.yml:3:36: found X; did you mean"
          + " java.net.X?",
      watched
          + "; no exit hook (java.lang.IllegalStateException): no summary, dead-letter flush"
          + " or fleet leave at exit",
      watched
          + "; exporters' and config watcher's start not scheduled"
          + " (java.lang.OutOfMemoryError): tried again at the first call",
    };
    for (String line : stillWatched) {
      out.reset();
      attach.alreadyThere("12", line);
      assertThat(out.toString(StandardCharsets.UTF_8))
          .as(line)
          .contains("edit its configuration file");
    }
    String[] notWatched = {
      watched
          + "; exporters' and config watcher's start not scheduled (java.lang.SecurityException)",
      // an override pins mode=off: nothing was hooked, the file not even read
      "nothing hooked (mode=off from the agent argument, which every reload keeps);"
          + " config=/etc/a.yml (not read)",
      "jdk-http armed (send, sendAsync); config=/etc/a.yml, mode=enforce, reload=off; 1 warning"
          + " (loaded; each says what applies): /etc/a.yml:3:36: found a, reload=on",
    };
    for (String line : notWatched) {
      out.reset();
      attach.alreadyThere("12", line);
      assertThat(out.toString(StandardCharsets.UTF_8))
          .as(line)
          .doesNotContain("edit its configuration file")
          .contains("only a restart of 12 changes this");
    }
  }

  @Test
  void attachWithoutAPidIsAUsageError() {
    assertThat(run("attach")).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("PID is missing");
  }

  @Test
  void attachRefusesAPidThatIsNotANumber() {
    assertThat(run("attach", "my-service")).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("PID must be a process id, found my-service");
  }

  @Test
  void attachRefusesAnUnknownMode() {
    assertThat(run("attach", "1", "--mode", "loud")).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("--mode must be enforce");
  }

  @Test
  void attachWithModeButNoValueSaysTheValueIsMissing() {
    for (String[] args : new String[][] {{"attach", "1", "--mode"}, {"attach", "1", "--mode="}}) {
      err.reset();
      assertThat(run(args)).isEqualTo(2);
      assertThat(err.toString(StandardCharsets.UTF_8))
          .contains("--mode needs a value: enforce, observe or off")
          .doesNotContain("unknown option");
    }
  }

  @Test
  void attachValidatesTheFileBeforeTouchingTheTarget(@TempDir Path dir) throws IOException {
    Path file = Files.writeString(dir.resolve("bad.yml"), "agent: { mode: loud }\n");

    assertThat(run("attach", "1", file.toString())).isEqualTo(1);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains(file + ":1:16: agent.mode: found loud")
        .contains("not attached: the configuration is not valid");
  }

  @Test
  void agentOptionsQuoteAPathThatHoldsAComma() {
    assertThat(AttachCommand.agentOptions(Path.of("/etc/a,b.yml"), "observe"))
        .isEqualTo("config='/etc/a,b.yml',mode=observe");
    assertThat(AttachCommand.agentOptions(Path.of("/etc/it's,x.yml"), null))
        .isEqualTo("config=\"/etc/it's,x.yml\"");
    assertThat(AttachCommand.agentOptions(null, null)).isNull();
  }

  @Test
  void featureVersionsReadBothSchemes() {
    assertThat(AttachCommand.featureVersion("1.8")).isEqualTo(8);
    assertThat(AttachCommand.featureVersion("17")).isEqualTo(17);
    assertThat(AttachCommand.featureVersion("25")).isEqualTo(25);
    assertThat(AttachCommand.featureVersion(null)).isZero();
  }
}
