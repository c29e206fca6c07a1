package dev.retryagent.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.jar.JarOutputStream;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link StoredEntry} finds a stored entry's bytes in jars as the JDK writes them, and says "cannot
 * tell" (-1) for everything it does not read: a deflated entry, ZIP64, a damaged directory.
 */
class StoredEntryTest {
  private static final String NAME = "inst/classes.pack";

  @TempDir Path dir;

  private final byte[] payload = payload();

  private static byte[] payload() {
    byte[] b = new byte[5000];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) (i * 31 + 7);
    }
    return b;
  }

  @Test
  void findsTheStoredEntryAmongOthers() throws IOException {
    byte[] jar = jar(ZipEntry.STORED, null);
    assertThat(read(jar, NAME)).isEqualTo(payload);
  }

  @Test
  void allowsForBytesBeforeTheArchiveAndACommentAfterIt() throws IOException {
    // a launcher script prepended, as self-running jars have; the JDK's ZipFile opens them too
    byte[] script = "#!/bin/sh\nexec java -jar \"$0\" \"$@\"\n".getBytes();
    byte[] jar = jar(ZipEntry.STORED, "built by a test, with PK\u0005\u0006 inside the comment");
    byte[] prefixed = new byte[script.length + jar.length];
    System.arraycopy(script, 0, prefixed, 0, script.length);
    System.arraycopy(jar, 0, prefixed, script.length, jar.length);

    assertThat(read(prefixed, NAME)).isEqualTo(payload);
  }

  @Test
  void cannotTellForADeflatedEntryAMissingOneOrTheWrongLength() throws IOException {
    assertThat(offset(jar(ZipEntry.DEFLATED, null), NAME, payload.length)).isEqualTo(-1);
    assertThat(offset(jar(ZipEntry.STORED, null), "inst/other.pack", payload.length)).isEqualTo(-1);
    assertThat(offset(jar(ZipEntry.STORED, null), NAME, payload.length - 1)).isEqualTo(-1);
    assertThat(offset(new byte[10], NAME, payload.length)).as("not a zip").isEqualTo(-1);
  }

  @Test
  void cannotTellForZip64OrADamagedDirectory() throws IOException {
    byte[] jar = jar(ZipEntry.STORED, null);
    int end = jar.length - 22; // no comment: the end record is the last 22 bytes

    byte[] zip64 = jar.clone();
    zip64[end + 10] = (byte) 0xff; // entries: 0xffff, "see the ZIP64 record"
    zip64[end + 11] = (byte) 0xff;
    assertThat(offset(zip64, NAME, payload.length)).isEqualTo(-1);

    int central = (int) (jar.length - 22 - uint32(jar, end + 12));
    byte[] badCentral = jar.clone();
    badCentral[central] = 'X';
    assertThat(offset(badCentral, NAME, payload.length)).isEqualTo(-1);

    // the local header no longer names the entry: the directory pointed somewhere else
    long good = offset(jar, NAME, payload.length);
    byte[] badLocal = jar.clone();
    badLocal[(int) good - NAME.length()] = 'X';
    assertThat(offset(badLocal, NAME, payload.length)).isEqualTo(-1);
  }

  private long offset(byte[] file, String name, long length) throws IOException {
    Path path = Files.write(Files.createTempFile(dir, "entry", ".jar"), file);
    try (RandomAccessFile raf = new RandomAccessFile(path.toFile(), "r")) {
      return StoredEntry.dataOffset(raf, name, length);
    }
  }

  private byte[] read(byte[] file, String name) throws IOException {
    long at = offset(file, name, payload.length);
    assertThat(at).as("the entry's offset").isPositive();
    return Arrays.copyOfRange(file, (int) at, (int) at + payload.length);
  }

  /** A jar with an entry before and after {@link #NAME}, which holds the payload. */
  private byte[] jar(int method, String comment) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (JarOutputStream jar = new JarOutputStream(bytes)) {
      jar.putNextEntry(new ZipEntry("before.txt"));
      jar.write(new byte[] {'b'});
      // an extra field too: the data starts past it
      TestJars.put(jar, NAME, payload, method, new byte[] {(byte) 0xca, (byte) 0xfe, 2, 0, 1, 2});
      jar.putNextEntry(new ZipEntry("after.txt"));
      jar.write(new byte[] {'a'});
      if (comment != null) {
        jar.setComment(comment);
      }
    }
    return bytes.toByteArray();
  }

  private static long uint32(byte[] b, int at) {
    return (b[at] & 0xffL)
        | (b[at + 1] & 0xffL) << 8
        | (b[at + 2] & 0xffL) << 16
        | (b[at + 3] & 0xffL) << 24;
  }
}
