package dev.retryagent.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link ClassPackWriter} writes what {@link ClassPack} reads, from a real jar. */
class ClassPackTest {
  @TempDir Path dir;

  private final Random random = new Random(13);

  /** Bytes that deflate well (a class file's do) or, with {@code noise}, not at all. */
  private byte[] classBytes(int length, boolean noise) {
    byte[] b = new byte[length];
    if (noise) {
      random.nextBytes(b);
    } else {
      for (int i = 0; i < length; i++) {
        b[i] = (byte) "dev/retryagent/engine/RetryCall".charAt(i % 31);
      }
    }
    return b;
  }

  @Test
  void readsEveryClassBackStoredOrDeflatedAndNothingElse() throws IOException {
    Map<String, byte[]> classes = new TreeMap<>();
    Set<String> stored = new TreeSet<>();
    for (int i = 0; i < 300; i++) {
      String path = "dev/retryagent/p" + (i % 7) + "/C" + i + (i % 5 == 0 ? "$Inner" : "");
      classes.put(path, classBytes(1 + random.nextInt(5000), i % 3 == 0));
      if (i % 2 == 0) {
        stored.add(path);
      }
    }
    // String.hashCode collisions ("Aa" and "BB"), and a class of no bytes
    classes.put("x/Aa", classBytes(100, false));
    classes.put("x/BB", classBytes(200, false));
    classes.put("x/Empty", new byte[0]);

    for (int method : new int[] {ZipEntry.STORED, ZipEntry.DEFLATED}) {
      try (JarFile jar = new JarFile(jarWith(classes, stored, method).toFile());
          ClassPack pack = ClassPack.open(jar)) {
        // a stored pack is read from the file directly; a deflated one through the jar's streams
        assertThat(pack.readsDirectly()).isEqualTo(method == ZipEntry.STORED);
        assertThat(pack.size()).isEqualTo(classes.size());
        assertThat(new TreeSet<>(pack.paths())).isEqualTo(classes.keySet());
        for (Map.Entry<String, byte[]> c : classes.entrySet()) {
          assertThat(pack.read(c.getKey())).as(c.getKey()).isEqualTo(c.getValue());
        }
        assertThat(pack.read("x/Ab")).isNull();
        assertThat(pack.read("x/Aa$")).isNull();
        assertThat(pack.read("dev/retryagent/p0/C0")).isNull(); // that one is C0$Inner
        assertThat(pack.read("")).isNull();
      }
    }
  }

  @Test
  void storedClassesAreNotDeflatedAndOthersOnlyWhenSmaller() throws IOException {
    Map<String, byte[]> classes = new TreeMap<>();
    classes.put("a/Stored", classBytes(4000, false));
    classes.put("a/Deflated", classBytes(4000, false));
    classes.put("a/Noise", classBytes(4000, true));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ClassPackWriter.write(classes, Set.of("a/Stored"), out);
    int dataStart = ClassPack.HEADER + 8 * ClassPack.SLOT + (2 + 8) + (2 + 10) + (2 + 7);
    // the stored and the incompressible class in full, the repetitive one deflated to little
    assertThat(out.size()).isBetween(dataStart + 8000, dataStart + 8000 + 200);
  }

  @Test
  void aJarWithoutAPackHasNoneAndADamagedPackIsRefusedNamingTheJar() throws IOException {
    Path none = dir.resolve("none.jar");
    try (JarOutputStream jar = new JarOutputStream(Files.newOutputStream(none))) {
      jar.putNextEntry(new ZipEntry("a.txt"));
      jar.write('a');
    }
    try (JarFile jar = new JarFile(none.toFile())) {
      assertThat(ClassPack.open(jar)).isNull();
    }

    Path bad = dir.resolve("bad.jar");
    try (JarOutputStream jar = new JarOutputStream(Files.newOutputStream(bad))) {
      jar.putNextEntry(new ZipEntry(ClassPack.ENTRY));
      jar.write(new byte[64]);
    }
    try (JarFile jar = new JarFile(bad.toFile())) {
      assertThatThrownBy(() -> ClassPack.open(jar))
          .isInstanceOf(IOException.class)
          .hasMessageContaining("bad.jar")
          .hasMessageContaining("not a class pack");
    }
  }

  @Test
  void theWriterRefusesANameThatIsNotAscii() {
    Map<String, byte[]> classes = new TreeMap<>();
    classes.put("a/Caf\u00e9", new byte[] {1});
    assertThatThrownBy(
            () -> ClassPackWriter.write(classes, Set.of(), OutputStream.nullOutputStream()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("a/Caf\u00e9");
  }

  @Test
  void theWriterPacksClassFilesByTheLongestMatchingRuleAndRefusesOnePackedTwice()
      throws IOException {
    Path classes = dir.resolve("classes");
    write(classes.resolve("dev/retryagent/A.class"), classBytes(3000, false));
    write(classes.resolve("dev/retryagent/launcher/L.class"), classBytes(10, false));
    write(classes.resolve("dev/retryagent/shaded/lib/B.class"), classBytes(3000, false));
    write(classes.resolve("java/lang/Bridge.classdata"), classBytes(30, false));
    write(classes.resolve("META-INF/versions/9/module-info.class"), classBytes(10, false));
    write(classes.resolve("dev/retryagent/shaded/lib/res.properties"), new byte[] {'x'});
    Path out = dir.resolve("classes.pack");
    ClassPackWriter.main(
        new String[] {
          classes.toString(),
          out.toString(),
          "dev/retryagent/=stored",
          "dev/retryagent/launcher/=skip",
          "META-INF/=skip",
          "dev/retryagent/shaded/=deflated"
        });
    try (JarFile jar = new JarFile(jarWithPack(Files.readAllBytes(out)).toFile());
        ClassPack pack = ClassPack.open(jar)) {
      assertThat(pack.paths())
          .containsExactlyInAnyOrder(
              "dev/retryagent/A", "dev/retryagent/shaded/lib/B", "java/lang/Bridge");
      assertThat(pack.read("java/lang/Bridge")).isEqualTo(classBytes(30, false));
    }
    // stored: A in full; deflated: B to far less
    assertThat(Files.size(out)).isBetween(3000L + 30, 3000L + 30 + 400 + 256);

    write(classes.resolve("dev/retryagent/A.classdata"), classBytes(3, false));
    assertThatThrownBy(
            () -> ClassPackWriter.main(new String[] {classes.toString(), out.toString()}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("packed twice: dev/retryagent/A");
    assertThatThrownBy(
            () ->
                ClassPackWriter.main(
                    new String[] {classes.toString(), out.toString(), "dev/=fast"}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("dev/=fast");
  }

  private static void write(Path file, byte[] bytes) throws IOException {
    Files.createDirectories(file.getParent());
    Files.write(file, bytes);
  }

  private Path jarWith(Map<String, byte[]> classes, Set<String> stored, int method)
      throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ClassPackWriter.write(classes, stored, out);
    return method == ZipEntry.STORED
        ? jarWithPack(out.toByteArray())
        : jarWithPack(out.toByteArray(), ZipEntry.DEFLATED);
  }

  private Path jarWithPack(byte[] pack) throws IOException {
    return jarWithPack(pack, ZipEntry.STORED);
  }

  private Path jarWithPack(byte[] pack, int method) throws IOException {
    Path file = Files.createTempFile(dir, "pack", ".jar");
    try (JarOutputStream jar = new JarOutputStream(Files.newOutputStream(file))) {
      jar.putNextEntry(new ZipEntry("before.txt"));
      jar.write(new byte[] {'b'});
      TestJars.put(jar, ClassPack.ENTRY, pack, method, null);
    }
    return file;
  }
}
