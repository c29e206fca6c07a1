package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigSources;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reload watcher against hostile files (issue 14, "Hostile and broken input"): whatever is put
 * where the configuration was, each look at it ends within a second, nothing of it is applied, and
 * one error names the file and where the problem is. And what is applied is the content that
 * settled, even when the file is replaced right after it was looked at.
 */
class HostileReloadTest {
  private static final String TWO = "defaults: { retry: { maxAttempts: 2 } }\n";
  private static final String FOUR = "defaults: { retry: { maxAttempts: 4 } }\n";

  /** One look at a file, the loader included; measured after a warm-up (class loading). */
  private static final Duration LOOK = Duration.ofSeconds(1);

  @TempDir Path dir;
  private Path file;
  private AgentRuntime runtime;
  private ConfigReloader reloader;
  private AgentConfig started;

  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  @BeforeAll
  static void warmUp(@TempDir Path warm) throws Exception {
    Path f = Files.writeString(warm.resolve("warm.yml"), "x: [\n" + FOUR);
    ConfigSources sources = ConfigSources.resolve("config=" + f, new Properties(), Map.of());
    ConfigReloader r =
        new ConfigReloader(new AgentRuntime(sources, AgentConfig.defaults()), f, null);
    Files.writeString(f, FOUR);
    r.poll();
    r.poll();
  }

  @BeforeEach
  void start() throws Exception {
    file = Files.writeString(dir.resolve("config.yml"), TWO);
    ConfigSources sources = ConfigSources.resolve("config=" + file, new Properties(), Map.of());
    started = sources.load(Map.of());
    runtime = new AgentRuntime(sources, started);
    reloader = new ConfigReloader(runtime, file);
  }

  /** Two looks (an edit settles), each within {@link #LOOK}. */
  private void twoLooks() {
    for (int i = 0; i < 2; i++) {
      // Preemptive: a look that blocks (a named pipe opened for reading) fails instead of hanging.
      assertTimeoutPreemptively(LOOK, reloader::poll);
    }
  }

  private void assertRejectedOnceAt(String location) {
    assertThat(runtime.config()).as("nothing applied").isSameAs(started);
    String text = stderr.text();
    assertThat(text)
        .contains("retry-agent: reload of " + file + " rejected, the previous configuration stays")
        .contains("  " + file + location);
    assertThat(text.split("rejected", -1)).as(text).hasSize(2);
    reloader.poll();
    assertThat(stderr.text()).as("reported once").isEqualTo(text);
  }

  @Test
  void arbitraryBytesAreRejectedWithTheirLocation() throws IOException {
    Files.write(file, "defaults: {retry: \u0007[}]\n\u001b[2J".getBytes(StandardCharsets.UTF_8));
    twoLooks();
    assertRejectedOnceAt(":1:");
  }

  @Test
  void anAliasBombIsRejectedAtTheAliasLimit() throws IOException {
    StringBuilder y = new StringBuilder("a: &a [x, x, x, x, x, x, x, x, x]\n");
    for (char c = 'b'; c <= 'j'; c++) {
      y.append(c).append(": &").append(c).append(" [");
      for (int k = 0; k < 9; k++) {
        y.append(k == 0 ? "" : ", ").append('*').append((char) (c - 1));
      }
      y.append("]\n");
    }
    Files.writeString(file, y.toString());
    twoLooks();
    assertRejectedOnceAt(":4:");
    assertThat(stderr.text()).contains("aliases to lists or maps");
  }

  @Test
  void aHundredMegabyteFileIsRejectedWithoutBeingRead() throws IOException {
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      raf.setLength(100L << 20);
    }
    twoLooks();
    assertRejectedOnceAt(": found a file of 104857600 bytes; allowed at most 1048576");
  }

  @Test
  void aFileThatIsNotUtf8IsRejectedAtTheFirstBadByte() throws IOException {
    Files.write(file, "# tuned\nversion: 1 # caf\u00e9\n".getBytes(StandardCharsets.ISO_8859_1));
    twoLooks();
    assertRejectedOnceAt(":2:17: found bytes that are not UTF-8 (0xE9)");
  }

  @Test
  void aDirectoryInPlaceOfTheFileIsRejected() throws IOException {
    Files.delete(file);
    Files.createDirectory(file);
    twoLooks();
    assertRejectedOnceAt(": found a directory; allowed a configuration file");
  }

  @Test
  void aNamedPipeInPlaceOfTheFileIsRejectedWithoutOpeningIt() throws Exception {
    Files.delete(file);
    assumeTrue(mkfifo(file), "mkfifo is available");
    twoLooks();
    assertRejectedOnceAt(": found a special file (a named pipe, socket or device)");
  }

  @Test
  void anEmptyFileIsTakenForAWriteInProgressAndNeverApplied() throws IOException {
    // A rewrite in place (truncate, then write) seen between its two steps: the soak found a
    // reload that applied the empty file, every call running on the defaults until the next edit.
    Files.writeString(file, "  \n");
    twoLooks();
    reloader.poll();
    assertThat(runtime.config()).as("nothing applied").isSameAs(started);
    assertThat(stderr.text().split("is empty", -1)).hasSize(2);
    Files.writeString(file, FOUR);
    twoLooks();
    assertThat(runtime.config().defaultPolicy().retry().maxAttempts()).isEqualTo(4);
  }

  @Test
  void aMissingFileIsSaidOnceAndChangesNothing() throws IOException {
    Files.delete(file);
    twoLooks();
    reloader.poll();
    assertThat(runtime.config()).isSameAs(started);
    assertThat(stderr.text().split("cannot be read now", -1)).hasSize(2);
    assertThat(stderr.text()).contains("retry-agent: " + file + " cannot be read now");
  }

  @Test
  void whatIsAppliedIsTheContentThatSettledNotTheFileAsReadAgainLater() throws IOException {
    // The file is replaced right after each look, before the edit is parsed: a second read of the
    // file would apply the half-written replacement (valid YAML: 3 attempts, the defaults).
    Path replaced = file;
    ConfigReloader r =
        new ConfigReloader(
            runtime,
            file,
            f -> {
              FileFingerprint seen = FileFingerprint.of(f);
              try {
                Files.writeString(replaced, "defaults: {}\n");
              } catch (IOException e) {
                throw new IllegalStateException(e);
              }
              return seen;
            });
    Files.writeString(file, FOUR);
    r.poll(); // sees FOUR for the first time
    Files.writeString(file, FOUR);
    r.poll(); // sees FOUR again: applies it, while the file already holds the replacement

    assertThat(runtime.config().defaultPolicy().retry().maxAttempts()).isEqualTo(4);
    assertThat(stderr.text()).contains("retry-agent: reloaded " + file);
  }

  static boolean mkfifo(Path path) throws InterruptedException {
    try {
      Process p = new ProcessBuilder("mkfifo", path.toString()).redirectErrorStream(true).start();
      return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0 && Files.exists(path);
    } catch (IOException e) {
      return false;
    }
  }
}
