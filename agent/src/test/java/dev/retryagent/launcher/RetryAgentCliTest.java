package dev.retryagent.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

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
}
