package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the loader does with a path that does not hold a configuration (issue 14): a file too large,
 * a directory, a named pipe, bytes that are not UTF-8. Each is one problem naming the file (and,
 * for bytes, where they are), found without reading more than a configuration's worth, and without
 * blocking: a named pipe opened for reading waits for a writer forever.
 */
class HostileFilesTest {
  private static final Duration GUARD = Duration.ofSeconds(1);

  @TempDir Path dir;

  private static ConfigProblem onlyProblem(Path file) {
    AtomicReference<ConfigException> caught = new AtomicReference<>();
    assertTimeoutPreemptively(
        GUARD,
        () ->
            assertThatThrownBy(() -> ConfigLoader.load(file, Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, caught::set));
    List<ConfigProblem> problems = caught.get().problems();
    assertThat(problems).hasSize(1);
    assertThat(problems.get(0).source()).isEqualTo(file.toString());
    return problems.get(0);
  }

  @Test
  void aHundredMegabyteFileIsOneProblemWithoutBeingRead() throws IOException {
    Path file = dir.resolve("huge.yml");
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      raf.setLength(100L << 20);
    }
    assertThat(onlyProblem(file).message())
        .isEqualTo(
            "found a file of 104857600 bytes; allowed at most 1048576 (a configuration is a few"
                + " KiB)");
  }

  @Test
  void aDirectoryIsOneProblem() throws IOException {
    Path d = Files.createDirectory(dir.resolve("conf.d"));
    assertThat(onlyProblem(d).message())
        .isEqualTo("found a directory; allowed a configuration file");
  }

  @Test
  void aNamedPipeIsRefusedWithoutOpeningIt() throws Exception {
    Path fifo = dir.resolve("pipe.yml");
    assumeTrue(mkfifo(fifo), "mkfifo is available");
    assertThat(onlyProblem(fifo).message())
        .isEqualTo("found a special file (a named pipe, socket or device); allowed a regular file");
  }

  @Test
  void aDeviceThatNeverEndsIsRefused() {
    Path zero = Path.of("/dev/zero");
    assumeTrue(Files.exists(zero), "/dev/zero exists");
    assertThat(onlyProblem(zero).message()).startsWith("found a special file");
  }

  @Test
  void bytesThatAreNotUtf8AreLocatedAtTheFirstOne() throws IOException {
    Path file = dir.resolve("latin1.yml");
    Files.write(
        file,
        "version: 1\nagent: {mode: observe} # caf\u00e9\n".getBytes(StandardCharsets.ISO_8859_1));
    ConfigProblem p = onlyProblem(file);
    assertThat(p.line()).isEqualTo(2);
    assertThat(p.column()).isEqualTo(29);
    assertThat(p.message())
        .isEqualTo("found bytes that are not UTF-8 (0xE9); allowed a UTF-8 text file");
  }

  @Test
  void aTruncatedMultiByteCharacterAtTheEndIsLocated() throws IOException {
    Path file = dir.resolve("cut.yml");
    byte[] e = "# \u00e9".getBytes(StandardCharsets.UTF_8);
    Files.write(file, java.util.Arrays.copyOf(e, e.length - 1)); // half of é
    ConfigProblem p = onlyProblem(file);
    assertThat(p.line()).isEqualTo(1);
    assertThat(p.column()).isEqualTo(3);
    assertThat(p.message()).startsWith("found bytes that are not UTF-8 (0xC3)");
  }

  @Test
  void aRealReplacementCharacterIsReadNotTakenForBadBytes() throws Exception {
    // U+FFFD written as UTF-8 (EF BF BD) is what a lenient decoding makes of bad bytes; the loader
    // must tell the two apart.
    Path file = dir.resolve("fffd.yml");
    Files.write(
        file, "version: 1\nagent: {mode: observe} # \ufffd\n".getBytes(StandardCharsets.UTF_8));
    assertThat(ConfigLoader.load(file, Map.of()).mode())
        .isEqualTo(dev.retryagent.policy.Mode.OBSERVE);
  }

  @Test
  void everyKindOfBadSequenceIsFoundWhereTheStrictDecoderFindsIt() {
    // Overlong forms, encoded surrogates, bytes past U+10FFFF, stray continuation bytes, cut
    // sequences: each one located at its first byte, as a strict CharsetDecoder reports it.
    byte[][] bad = {
      {(byte) 0xC0, (byte) 0xAF},
      {(byte) 0xE0, (byte) 0x80, (byte) 0xAF},
      {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
      {(byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80},
      {(byte) 0x80},
      {(byte) 0xF0, (byte) 0x9F, (byte) 0x98},
      {(byte) 0xFF}
    };
    for (byte[] b : bad) {
      byte[] text = new byte[b.length + 4];
      System.arraycopy("# a".getBytes(StandardCharsets.US_ASCII), 0, text, 0, 3);
      System.arraycopy(b, 0, text, 3, b.length);
      text[text.length - 1] = '\n';
      ConfigException e =
          catchThrowableOfType(
              () -> ConfigLoader.parse(text, "bad.yml", Map.of()), ConfigException.class);
      assertThat(e).as(java.util.Arrays.toString(b)).isNotNull();
      ConfigProblem p = e.problems().get(0);
      assertThat(List.of(p.line(), p.column()))
          .as(java.util.Arrays.toString(b))
          .containsExactly(1, 4);
      assertThat(p.message())
          .startsWith(
              "found bytes that are not UTF-8 (0x"
                  + Integer.toHexString(b[0] & 0xff).toUpperCase(java.util.Locale.ROOT)
                  + ")");
    }
  }

  @Test
  void aMissingFileIsOneProblemNamingIt() {
    assertThat(onlyProblem(dir.resolve("missing.yml")).message())
        .startsWith("cannot read the file: NoSuchFileException");
  }

  @Test
  void bytesHandedInAreBoundedLikeAFile() {
    byte[] big = new byte[(int) ConfigLoader.MAX_FILE_BYTES + 1];
    assertThatThrownBy(() -> ConfigLoader.parse(big, "big.yml", Map.of()))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e ->
                assertThat(e.problems())
                    .singleElement()
                    .satisfies(
                        p ->
                            assertThat(p.message())
                                .isEqualTo(
                                    "found a file of 1048577 bytes; allowed at most 1048576 (a"
                                        + " configuration is a few KiB)")));
  }

  @Test
  void bytesAndFileLoadAlike() throws Exception {
    String yaml = "\uFEFFagent: {mode: observe}\ndefaults: {retry: {maxAttempts: 4}}\n";
    Path file = Files.writeString(dir.resolve("ok.yml"), yaml);
    AgentConfig fromFile = ConfigLoader.load(file, Map.of());
    AgentConfig fromBytes =
        ConfigLoader.parse(yaml.getBytes(StandardCharsets.UTF_8), file.toString(), Map.of());
    assertThat(fromBytes).isEqualTo(fromFile);
    assertThat(fromBytes.defaultPolicy().retry().maxAttempts()).isEqualTo(4);
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
