package dev.retryagent.agent.runtime;

import dev.retryagent.config.ConfigException;
import dev.retryagent.config.ConfigLoader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * What a file holds now, to tell an edit from no edit, and what a reload then parses: its bytes (a
 * configuration is a few KiB), read once. A file the loader refuses without reading it whole (too
 * large, a directory, a named pipe, unreadable) is fingerprinted by that problem, its size and its
 * modification time. Comparing content rather than time catches an edit that keeps the size within
 * the time's granularity (a digit changed in the same second on a file system that keeps whole
 * seconds).
 */
final class FileFingerprint {
  private final byte[] content;
  private final ConfigException problem;
  private final long size;
  private final long modifiedMillis;

  private FileFingerprint(byte[] content, ConfigException problem, long size, long modified) {
    this.content = content;
    this.problem = problem;
    this.size = size;
    this.modifiedMillis = modified;
  }

  /**
   * The file's fingerprint now (read as {@link ConfigLoader#read} reads it, so never blocked on a
   * named pipe nor more than {@link ConfigLoader#MAX_FILE_BYTES}), or null when there is no file
   * (deleted, or between the steps of a replacement).
   */
  static FileFingerprint of(Path file) {
    try {
      return ofContent(ConfigLoader.read(file));
    } catch (ConfigException e) {
      try {
        if (!Files.exists(file)) {
          return null;
        }
        long size = Files.size(file);
        long modified = Files.getLastModifiedTime(file, LinkOption.NOFOLLOW_LINKS).toMillis();
        return new FileFingerprint(null, e, size, modified);
      } catch (IOException | SecurityException gone) {
        return null;
      }
    } catch (SecurityException e) {
      return null;
    }
  }

  /** The fingerprint of a file that read as {@code bytes}. */
  static FileFingerprint ofContent(byte[] bytes) {
    return new FileFingerprint(bytes, null, bytes.length, 0);
  }

  /** The bytes that were read, or null when the file was refused ({@link #problem()}). */
  byte[] content() {
    return content;
  }

  /** Why the file was refused without being read, or null. */
  ConfigException problem() {
    return problem;
  }

  private String problemText() {
    return problem == null ? null : problem.getMessage();
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof FileFingerprint)) {
      return false;
    }
    FileFingerprint f = (FileFingerprint) o;
    return size == f.size
        && modifiedMillis == f.modifiedMillis
        && Arrays.equals(content, f.content)
        && java.util.Objects.equals(problemText(), f.problemText());
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(content) * 31 + Long.hashCode(size);
  }
}
