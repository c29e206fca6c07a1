package dev.retryagent.internal.observe;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.internal.Units;

/**
 * {@code agent.deadLetter.maxBytes} for one {@link DeadLetterWriter}: whether the next line fits,
 * and the episodes of lines dropped for the cap, each said once when it starts and once when it
 * ends.
 *
 * <p>The file's size is kept as the writer thread appends ({@link #appended}) and set from the real
 * file only where the writer looks at it anyway ({@link #sizeIs}: at open and in the rotation check
 * before each batch), never per line. An episode starts at the first line that does not fit and
 * ends when the file is smaller than it was at the last line dropped for the cap (rotated: renamed
 * away, removed, truncated) or the cap is raised or removed. A line that still fits during an
 * episode is written; one larger than the cap itself never fits, and is said apart, once.
 *
 * <p>Writer thread only, but {@link #setMax} (a reload), which applies from the next line.
 */
final class DeadLetterCap {
  private final String path; // as lines show it
  private final ErrorReporter errors;
  private volatile long max; // 0: none

  private long size;
  private boolean capped;
  private long cappedAtSize;
  private long cappedAtMax;

  /**
   * @param path the file's path as lines show it ({@link AgentConfig#shownPath})
   */
  DeadLetterCap(String path, ErrorReporter errors) {
    this.path = path;
    this.errors = errors;
  }

  /** {@code bytes} of 0 or less: no cap. */
  void setMax(long bytes) {
    max = Math.max(0, bytes);
  }

  long max() {
    return max;
  }

  /** The real size of the file at the path, just read. */
  void sizeIs(long bytes) {
    size = bytes;
  }

  void appended(long bytes) {
    size += bytes;
  }

  /** True when the file, as last read, is empty: it was truncated, or is new. */
  boolean emptied() {
    return size == 0;
  }

  /**
   * True when {@code need} more bytes, after the {@code pending} ones of this batch, keep the file
   * within the cap; otherwise the line is not written, and the caller counts it dropped.
   */
  boolean fits(int need, long pending) {
    long cap = max;
    if (cap <= 0 || size + pending + need <= cap) {
      return true;
    }
    if (need > cap) {
      errors.once(
          "line-over-cap",
          "retry-agent: a dead letter of "
              + need
              + " bytes is larger than agent.deadLetter.maxBytes ("
              + Units.formatSize(cap)
              + ") for "
              + path
              + "; such dead letters are dropped, not written");
      return false;
    }
    cappedAtSize = size + pending;
    cappedAtMax = cap;
    if (!capped) {
      capped = true;
      errors.tell(
          "retry-agent: the dead-letter file "
              + path
              + " has reached agent.deadLetter.maxBytes ("
              + Units.formatSize(cap)
              + "); dead letters that would take it past that are dropped, not written, until it"
              + " is rotated");
    }
    return false;
  }

  /** Ends the episode, said once, when the file has shrunk or the cap was raised or removed. */
  void endIfShrunk() {
    long cap = max;
    if (capped && (size < cappedAtSize || cap <= 0 || cap > cappedAtMax)) {
      capped = false;
      errors.tell(
          "retry-agent: the dead-letter file "
              + path
              + (cap <= 0
                  ? " has no agent.deadLetter.maxBytes any more"
                  : " is below agent.deadLetter.maxBytes (" + Units.formatSize(cap) + ") again")
              + "; dead letters are written to it again");
    }
  }
}
