package dev.retryagent.launcher;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.jar.JarFile;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;
import java.util.zip.ZipEntry;

/**
 * The agent's hidden classes, all in one stored jar entry, {@link #ENTRY}, written at build time by
 * {@link ClassPackWriter}.
 *
 * <p>Why one entry: the JVM opens the agent jar for {@code -javaagent} and indexes every entry it
 * holds (the name hashed, checked, put in a table), in Java code that runs interpreted that early.
 * With ~1,700 hidden classes as entries of their own that cost ~5 ms of CPU before {@code main} on
 * JDK 17 and 25 (docs/BENCHMARKS.md, "Issue 13, sixth pass"); the pack's own index is a hash table
 * built at build time, so opening it reads it and does nothing per class.
 *
 * <p>Layout (big-endian {@code int}s): a header of six ({@code "RACP"}, version, slot count, class
 * count, length of the names, where the data starts); the slots, five each (the name's {@link
 * String#hashCode()}, where its name starts in the names plus one, zero for an empty slot; where
 * its bytes start after the data's start, how many are stored, how many the class file has: fewer
 * stored means deflated, zlib format); the names, each a two-byte length and ASCII; the data. A
 * class's name is its path without suffix ({@code dev/retryagent/engine/RetryCall}), found by
 * linear probing from its hash's slot. A class is read with one positioned read of the jar file, at
 * the pack's own offset in it ({@link StoredEntry}); where that offset cannot be told, through the
 * jar's stream of the entry, skipping to the class's bytes (which a stored entry does without
 * reading what it skips).
 *
 * <p>Immutable once open; thread-safe (the jar's streams are, and the file's reads hold it).
 */
public final class ClassPack implements Closeable {
  /** The entry of the agent jar that holds the pack. */
  public static final String ENTRY = "inst/classes.pack";

  static final int MAGIC = 0x52414350; // "RACP"
  private static final byte[] MAGIC_BYTES = {'R', 'A', 'C', 'P'};
  static final int VERSION = 1;
  static final int HEADER = 24;
  static final int SLOT = 20;

  private final JarFile jar;
  private final ZipEntry entry;
  private final byte[] index; // the slots, then the names
  private final int slots;
  private final int count;
  private final int dataStart;

  /** The jar file, read directly, and where the pack starts in it; null and -1 without. */
  private final RandomAccessFile file;

  private final long packOffset;

  private ClassPack(
      JarFile jar,
      ZipEntry entry,
      byte[] index,
      int slots,
      int count,
      int dataStart,
      RandomAccessFile file,
      long packOffset) {
    this.jar = jar;
    this.entry = entry;
    this.index = index;
    this.slots = slots;
    this.count = count;
    this.dataStart = dataStart;
    this.file = file;
    this.packOffset = packOffset;
  }

  /**
   * The pack of {@code jar}; null when it has none.
   *
   * @throws IOException when the pack cannot be read or is not one this version writes
   */
  public static ClassPack open(JarFile jar) throws IOException {
    ZipEntry entry = jar.getEntry(ENTRY);
    if (entry == null) {
      return null;
    }
    try (InputStream in = jar.getInputStream(entry)) {
      byte[] header = readFully(in, HEADER);
      int slots = intAt(header, 8);
      int count = intAt(header, 12);
      int namesLength = intAt(header, 16);
      int dataStart = intAt(header, 20);
      if (intAt(header, 0) != MAGIC
          || intAt(header, 4) != VERSION
          || Integer.bitCount(slots) != 1
          || count >= slots
          || namesLength < 0
          || (long) HEADER + (long) slots * SLOT + namesLength != dataStart) {
        throw new IOException(jar.getName() + ": " + ENTRY + " is not a class pack of version 1");
      }
      byte[] index = readFully(in, dataStart - HEADER);
      RandomAccessFile file = new RandomAccessFile(jar.getName(), "r");
      long packOffset = -1;
      try {
        packOffset = StoredEntry.dataOffset(file, ENTRY, entry.getSize());
        if (packOffset >= 0
            && !Arrays.equals(StoredEntry.readAt(file, packOffset, 4), MAGIC_BYTES)) {
          packOffset = -1; // not where the directory said: the streams know better
        }
      } catch (IOException e) {
        packOffset = -1;
      }
      if (packOffset < 0) {
        file.close();
        file = null;
      }
      return new ClassPack(jar, entry, index, slots, count, dataStart, file, packOffset);
    }
  }

  /** Whether classes are read from the jar file directly (else through the jar's streams). */
  boolean readsDirectly() {
    return file != null;
  }

  /** Closes the jar file this pack reads directly; the jar itself is the caller's. */
  @Override
  public void close() throws IOException {
    if (file != null) {
      file.close();
    }
  }

  /** How many classes the pack holds. */
  public int size() {
    return count;
  }

  /** The bytes of the class at {@code path} (no suffix); null when the pack has none there. */
  public byte[] read(String path) throws IOException {
    int slot = find(path);
    if (slot < 0) {
      return null;
    }
    int offset = intAt(index, slot + 8);
    int stored = intAt(index, slot + 12);
    int size = intAt(index, slot + 16);
    byte[] bytes;
    if (file != null) {
      bytes = StoredEntry.readAt(file, packOffset + dataStart + offset, stored);
    } else {
      try (InputStream in = jar.getInputStream(entry)) {
        skipFully(in, (long) dataStart + offset);
        bytes = readFully(in, stored);
      }
    }
    return stored == size ? bytes : inflate(bytes, size, path);
  }

  /** Every class path the pack holds, in slot order. */
  public List<String> paths() {
    List<String> paths = new ArrayList<>(count);
    for (int s = 0; s < slots * SLOT; s += SLOT) {
      int name = intAt(index, s + 4);
      if (name != 0) {
        paths.add(nameAt(slots * SLOT + name - 1));
      }
    }
    return paths;
  }

  /** The offset of {@code path}'s slot in the index, or -1. */
  private int find(String path) {
    int hash = path.hashCode();
    int mask = slots - 1;
    for (int i = hash & mask; ; i = (i + 1) & mask) {
      int s = i * SLOT;
      int name = intAt(index, s + 4);
      if (name == 0) {
        return -1; // the writer leaves at least half the slots empty: probing ends
      }
      if (intAt(index, s) == hash && nameEquals(slots * SLOT + name - 1, path)) {
        return s;
      }
    }
  }

  private boolean nameEquals(int at, String path) {
    int length = ((index[at] & 0xff) << 8) | (index[at + 1] & 0xff);
    if (length != path.length()) {
      return false;
    }
    for (int i = 0; i < length; i++) {
      if ((index[at + 2 + i] & 0xff) != path.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  private String nameAt(int at) {
    int length = ((index[at] & 0xff) << 8) | (index[at + 1] & 0xff);
    char[] chars = new char[length];
    for (int i = 0; i < length; i++) {
      chars[i] = (char) (index[at + 2 + i] & 0xff);
    }
    return new String(chars);
  }

  private static byte[] inflate(byte[] deflated, int size, String path) throws IOException {
    Inflater inflater = new Inflater();
    try {
      inflater.setInput(deflated);
      byte[] out = new byte[size];
      int n = 0;
      while (n < size && !inflater.finished()) {
        int got = inflater.inflate(out, n, size - n);
        if (got == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
          break;
        }
        n += got;
      }
      if (n != size || !inflater.finished()) {
        throw new IOException(
            ENTRY + ": " + path + " is damaged (inflated " + n + " of " + size + ")");
      }
      return out;
    } catch (DataFormatException e) {
      throw new IOException(ENTRY + ": " + path + " is damaged", e);
    } finally {
      inflater.end();
    }
  }

  static int intAt(byte[] b, int at) {
    return ((b[at] & 0xff) << 24)
        | ((b[at + 1] & 0xff) << 16)
        | ((b[at + 2] & 0xff) << 8)
        | (b[at + 3] & 0xff);
  }

  private static byte[] readFully(InputStream in, int length) throws IOException {
    // Into one array: a stored entry's stream reads it from the file at once, where
    // readNBytes(int) would gather 8 KiB buffers and copy them (the index is ~180 KiB).
    byte[] bytes = new byte[length];
    if (in.readNBytes(bytes, 0, length) != length) {
      throw new IOException(ENTRY + " ends early");
    }
    return bytes;
  }

  private static void skipFully(InputStream in, long n) throws IOException {
    while (n > 0) {
      long skipped = in.skip(n);
      if (skipped <= 0) {
        if (in.read() < 0) {
          throw new IOException(ENTRY + " ends early");
        }
        skipped = 1;
      }
      n -= skipped;
    }
  }
}
