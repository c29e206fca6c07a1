package dev.retryagent.launcher;

import java.io.IOException;
import java.util.jar.JarOutputStream;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;

/** Writing jars for the launcher's tests. */
final class TestJars {
  private TestJars() {}

  /**
   * Adds entry {@code name} holding {@code bytes} to {@code jar}, stored or deflated ({@code
   * method}); a stored entry needs its sizes and CRC up front. {@code extra}: the entry's extra
   * field, or null.
   */
  static void put(JarOutputStream jar, String name, byte[] bytes, int method, byte[] extra)
      throws IOException {
    ZipEntry entry = new ZipEntry(name);
    entry.setMethod(method);
    if (extra != null) {
      entry.setExtra(extra);
    }
    if (method == ZipEntry.STORED) {
      CRC32 crc = new CRC32();
      crc.update(bytes);
      entry.setSize(bytes.length);
      entry.setCompressedSize(bytes.length);
      entry.setCrc(crc.getValue());
    }
    jar.putNextEntry(entry);
    jar.write(bytes);
  }
}
