package dev.retryagent.agent.runtime;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * What a file holds now, to tell an edit from no edit: its bytes (a configuration is a few KiB), or
 * for a file too large to be a valid configuration, its size and modification time. Comparing
 * content rather than time catches an edit that keeps the size within the time's granularity (a
 * digit changed in the same second on a file system that keeps whole seconds).
 */
final class FileFingerprint {
  /** Larger files are compared by size and time: they are rejected by the loader anyway. */
  static final long MAX_CONTENT_BYTES = 1024 * 1024;

  private final byte[] content;
  private final long size;
  private final long modifiedMillis;

  private FileFingerprint(byte[] content, long size, long modifiedMillis) {
    this.content = content;
    this.size = size;
    this.modifiedMillis = modifiedMillis;
  }

  /** The file's fingerprint now, or null when it cannot be read (missing, being replaced). */
  static FileFingerprint of(Path file) {
    try {
      long size = Files.size(file);
      if (size > MAX_CONTENT_BYTES) {
        return new FileFingerprint(null, size, Files.getLastModifiedTime(file).toMillis());
      }
      byte[] bytes = Files.readAllBytes(file);
      return new FileFingerprint(bytes, bytes.length, 0);
    } catch (IOException | SecurityException e) {
      return null;
    }
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof FileFingerprint)) {
      return false;
    }
    FileFingerprint f = (FileFingerprint) o;
    return size == f.size
        && modifiedMillis == f.modifiedMillis
        && Arrays.equals(content, f.content);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(content) * 31 + Long.hashCode(size);
  }
}
