package dev.retryagent.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An invalid configuration that does not stop the JVM says why, and never asks for {@code
 * agent.strict: true} where that would change nothing: a {@code strict=false} override wins over
 * the file, and a file whose own {@code agent.strict} could not be read needs the override.
 */
class InstallerStrictTest {
  private static final String NOT_INSTALLED =
      "not installed, the application runs without retries: invalid configuration (";

  @TempDir Path dir;

  private String startWith(String args) {
    // none of these is strict: System.exit is never reached
    return Installer.installAgent(args, null, new Properties(), Map.of(), true);
  }

  @Test
  void aStrictFileKeptRunningByTheOverrideNamesTheOverride() throws IOException {
    Path file =
        Files.writeString(
            dir.resolve("strict.yml"), "agent: {strict: true}\ndefaults:\n\tretry: {}\n");

    assertThat(startWith("config=" + file + ",strict=false"))
        .startsWith(NOT_INSTALLED + "strict=false from the agent argument): " + file + ":3:1:")
        .doesNotContain("set agent.strict");
    assertThat(startWith("config=" + file + ",mode=observ,strict=false"))
        .startsWith(NOT_INSTALLED + "strict=false from the agent argument): agent argument: mode")
        .doesNotContain("set agent.strict");
  }

  @Test
  void aFileWhoseStrictCouldNotBeReadAsksForTheOverride() throws IOException {
    Path file =
        Files.writeString(
            dir.resolve("tab.yml"), "defaults:\n\tretry: {}\nagent: {strict: true}\n");

    assertThat(startWith("config=" + file))
        .startsWith(
            NOT_INSTALLED
                + "agent.strict could not be read from the file; give strict=true in the agent"
                + " argument to stop instead): "
                + file
                + ":2:1:");
  }

  /**
   * A file that cannot be read behind an invalid override is reported, and its strict said not
   * known; without any file there is no agent.strict to ask for.
   */
  @Test
  void anInvalidOverrideSaysWhetherAFileCouldHaveStoppedTheJvm() {
    Path missing = dir.resolve("missing.yml");
    assertThat(startWith("config=" + missing + ",mode=observ"))
        .startsWith(
            NOT_INSTALLED
                + "agent.strict could not be read from the file; give strict=true in the agent"
                + " argument to stop instead) (2 problems):")
        .contains(missing + ": cannot read the file: NoSuchFileException");
    assertThat(startWith("mode=observ"))
        .startsWith(
            NOT_INSTALLED
                + "no configuration file named, so no agent.strict; give strict=true in the agent"
                + " argument to stop instead): agent argument: mode: found observ")
        .doesNotContain("set agent.strict");
  }

  @Test
  void aFileThatReadsAsNotStrictAsksForAgentStrict() throws IOException {
    Path file = Files.writeString(dir.resolve("lax.yml"), "defaults: {retry: {maxAttempts: 99}}\n");

    assertThat(startWith("config=" + file))
        .startsWith(NOT_INSTALLED + "set agent.strict: true to stop instead): " + file + ":1:");
    assertThat(startWith("config=" + file + ",mode=observ"))
        .startsWith(NOT_INSTALLED + "set agent.strict: true to stop instead) (2 problems):");
  }
}
