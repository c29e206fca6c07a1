package dev.retryagent.launcher;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;

/**
 * Where a stored (not deflated) entry's bytes start in its zip file, read from the file's own
 * directory: so {@link ClassPack} reads a class with one positioned read of the file, where a jar
 * entry's stream costs a name lookup, a read of the entry's local header and a bookkeeping set each
 * time (~50-70 µs a class that early in start-up, when it all runs interpreted; ~135 classes before
 * {@code main} with a configuration file).
 *
 * <p>Only the plain case is answered: the end record found in the file's last 64 KiB, no ZIP64, the
 * entry stored with equal sizes. Anything else (or a file that looks damaged) answers "cannot
 * tell", and the pack reads through the jar's streams as before. Bytes before the archive (a
 * launcher script prepended to the jar) are allowed for, as the JDK's {@code ZipFile} allows them.
 */
final class StoredEntry {
  private static final int END_SIGNATURE = 0x06054b50;
  private static final int CENTRAL_SIGNATURE = 0x02014b50;
  private static final int LOCAL_SIGNATURE = 0x04034b50;
  private static final int END_SIZE = 22;
  private static final int CENTRAL_SIZE = 46;
  private static final int LOCAL_SIZE = 30;
  private static final int MAX_COMMENT = 0xffff;

  private StoredEntry() {}

  /**
   * The offset in {@code file} of the first byte of stored entry {@code name}, whose length must be
   * {@code length}; -1 when this cannot tell (see above).
   */
  static long dataOffset(RandomAccessFile file, String name, long length) throws IOException {
    long fileLength = file.length();
    int tailLength = (int) Math.min(fileLength, END_SIZE + MAX_COMMENT);
    byte[] tail = readAt(file, fileLength - tailLength, tailLength);
    int end = -1;
    for (int at = tailLength - END_SIZE; at >= 0; at--) {
      if (int32(tail, at) == END_SIGNATURE
          && at + END_SIZE + uint16(tail, at + 20) == tailLength) { // the comment ends the file
        end = at;
        break;
      }
    }
    if (end < 0) {
      return -1;
    }
    long endPosition = fileLength - tailLength + end;
    long centralLength = uint32(tail, end + 12);
    long centralOffset = uint32(tail, end + 16);
    int entries = uint16(tail, end + 10);
    if (entries == 0xffff || centralLength == 0xffffffffL || centralOffset == 0xffffffffL) {
      return -1; // ZIP64
    }
    long centralPosition = endPosition - centralLength;
    long prefix = centralPosition - centralOffset; // bytes before the archive
    if (centralPosition < 0 || prefix < 0 || centralLength > Integer.MAX_VALUE) {
      return -1;
    }
    byte[] central = readAt(file, centralPosition, (int) centralLength);
    byte[] wanted = name.getBytes(StandardCharsets.UTF_8);
    int at = 0;
    for (int i = 0; i < entries; i++) {
      if (at + CENTRAL_SIZE > central.length || int32(central, at) != CENTRAL_SIGNATURE) {
        return -1;
      }
      int nameLength = uint16(central, at + 28);
      int next =
          at + CENTRAL_SIZE + nameLength + uint16(central, at + 30) + uint16(central, at + 32);
      if (next > central.length) {
        return -1;
      }
      if (nameLength == wanted.length && regionEquals(central, at + CENTRAL_SIZE, wanted)) {
        boolean stored =
            uint16(central, at + 10) == 0
                && uint32(central, at + 20) == length
                && uint32(central, at + 24) == length;
        return stored ? localData(file, prefix + uint32(central, at + 42), wanted, length) : -1;
      }
      at = next;
    }
    return -1;
  }

  /** Past the entry's local header (its own name and extra field lengths, which may differ). */
  private static long localData(RandomAccessFile file, long local, byte[] name, long length)
      throws IOException {
    if (local + LOCAL_SIZE + name.length > file.length()) {
      return -1;
    }
    byte[] header = readAt(file, local, LOCAL_SIZE + name.length);
    if (int32(header, 0) != LOCAL_SIGNATURE
        || uint16(header, 26) != name.length
        || !regionEquals(header, LOCAL_SIZE, name)) {
      return -1;
    }
    long data = local + LOCAL_SIZE + name.length + uint16(header, 28);
    return data + length <= file.length() ? data : -1;
  }

  /** {@code length} bytes of {@code file} from {@code position}. */
  static byte[] readAt(RandomAccessFile file, long position, int length) throws IOException {
    byte[] bytes = new byte[length];
    synchronized (file) {
      file.seek(position);
      file.readFully(bytes);
    }
    return bytes;
  }

  private static boolean regionEquals(byte[] b, int at, byte[] wanted) {
    for (int i = 0; i < wanted.length; i++) {
      if (b[at + i] != wanted[i]) {
        return false;
      }
    }
    return true;
  }

  // Zip's numbers are little-endian (the pack's own are big-endian: ClassPack.intAt).
  private static int uint16(byte[] b, int at) {
    return (b[at] & 0xff) | (b[at + 1] & 0xff) << 8;
  }

  private static long uint32(byte[] b, int at) {
    return int32(b, at) & 0xffffffffL;
  }

  private static int int32(byte[] b, int at) {
    return uint16(b, at) | uint16(b, at + 2) << 16;
  }
}
