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
 * The start-up line says what the configuration sets that most likely does not do what was meant.
 */
class InstallerWarningsTest {
  @TempDir Path dir;

  @Test
  void theStartUpLineNamesAnExceptionNameWithoutItsPackageAndItsLikelyFullName()
      throws IOException {
    Path file =
        Files.writeString(
            dir.resolve("config.yml"),
            "agent: { mode: off, reload: false }\n"
                + "defaults:\n"
                + "  retry: { retryOn: { exceptions: [UnknownHostException] } }\n");

    // mode=off without reload hooks nothing: no Instrumentation is needed to read the line.
    String line = Installer.installAgent("config=" + file, null, new Properties(), Map.of(), true);

    assertThat(line)
        .startsWith("nothing hooked (mode=off); config=" + file)
        .contains("1 warning (loaded; each says what applies):")
        .contains(
            file
                + ":3:36: defaults.retry.retryOn.exceptions[0]: found UnknownHostException, a"
                + " class name without its package")
        .endsWith("did you mean java.net.UnknownHostException?");
  }
}
