package dev.retryagent.agent.runtime;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.PathMask;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.internal.observe.DeadLetterWriter;
import dev.retryagent.internal.observe.RetryMetrics;
import dev.retryagent.internal.observe.Sanitizer;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.Consumer;

/**
 * The dead-letter file, switchable by reload: a new path gets a new writer, and the old one writes
 * what it had queued and closes. A give-up that races the switch may still go to the old file, or
 * be counted as dropped by it.
 *
 * <p>Every writer counts the lines it drops in the one {@link RetryMetrics} of the JVM ({@code
 * retryagent_dead_letters_dropped_total}, JMX {@code DeadLettersDropped}): a switch neither resets
 * the count nor counts a line twice, and the old writer's later losses (its queue failing to reach
 * a broken disk after the switch) still count.
 *
 * <p>At exit every writer not done yet is waited for, the current one and those a switch replaced
 * that still write (a close that timed out on a slow disk), within one wait for them all: what none
 * could write by then is counted and reported, and the exit goes on.
 */
final class DeadLetters implements RetryListener {
  private final Consumer<String> errors;
  private final RetryMetrics metrics;
  private volatile DeadLetterWriter writer;
  // Writers a switch replaced, until they are done (their close may time out on a slow disk and
  // their thread write on). Guarded by this.
  private final List<DeadLetterWriter> replaced = new ArrayList<>();

  /**
   * @param metrics counts the lines every writer drops; null: only each writer's own count
   */
  DeadLetters(Consumer<String> errors, RetryMetrics metrics) {
    this.errors = errors;
    this.metrics = metrics;
  }

  /**
   * Switches to {@code path} (null: none), capped at {@code maxBytes} (0: no cap). A new cap for
   * the same path applies to its writer from the next line on.
   *
   * @return the writer replaced, which the caller must {@link DeadLetterWriter#close() close}
   *     (waiting up to 2 s for a slow disk) once it holds no lock: a reload holds the runtime's,
   *     which start-up paths take too; null when none was replaced
   */
  synchronized DeadLetterWriter use(String path, long maxBytes, PathMask mask) {
    DeadLetterWriter current = writer;
    Path next;
    try {
      next = path == null ? null : Path.of(path);
    } catch (InvalidPathException e) {
      // The key and the path, on one line: the exception's message quotes the path with the very
      // character this file system refused (a NUL, a control character), which would break the
      // line.
      errors.accept(
          "retry-agent: agent.deadLetter.path is not a valid path on this system: \""
              + AgentConfig.shownPath(path)
              + "\" ("
              + Sanitizer.oneLine(e.getReason())
              + (e.getIndex() >= 0 ? " at index " + e.getIndex() : "")
              + "); dead letters are not written");
      next = null;
    }
    if (current != null && next != null && current.path().equals(next)) {
      current.setPathMask(mask);
      current.setMaxBytes(maxBytes);
      return null;
    }
    DeadLetterWriter w = next == null ? null : new DeadLetterWriter(next, errors, metrics);
    if (w != null) {
      w.setPathMask(mask);
      w.setMaxBytes(maxBytes);
    }
    writer = w;
    forgetDone();
    if (current != null) {
      replaced.add(current);
    }
    return current;
  }

  /** Forgets the replaced writers that are done: none is kept for the JVM's life. */
  private void forgetDone() {
    for (Iterator<DeadLetterWriter> i = replaced.iterator(); i.hasNext(); ) {
      if (i.next().done()) {
        i.remove();
      }
    }
  }

  /** Give-ups only: no other event is built for this listener. */
  @Override
  public boolean wants(RetryEvent.Type type, int attempt, boolean succeeded) {
    return type == RetryEvent.Type.GIVE_UP;
  }

  @Override
  public void onGiveUp(RetryEvent e) {
    DeadLetterWriter w = writer;
    if (w != null) {
      w.onGiveUp(e);
    }
  }

  /**
   * At JVM exit: closes the current writer and waits for it and for every replaced writer not done
   * yet, {@code wait} in all (a hung disk must not hang the exit, however many writers it holds
   * up); the lines a writer still has queued past that are counted as dropped and reported. Holds
   * no lock while waiting.
   */
  void closeAtExit(Duration wait) {
    List<DeadLetterWriter> all = new ArrayList<>();
    synchronized (this) {
      if (writer != null) {
        all.add(writer);
      }
      all.addAll(replaced);
    }
    long deadline = System.nanoTime() + wait.toNanos();
    for (DeadLetterWriter w : all) {
      // Their threads write at the same time: one shared deadline is one wait, not one each.
      long left = Math.max(0, deadline - System.nanoTime());
      if (!w.closeAtExit(Duration.ofNanos(left))) {
        w.abandonAtExit(wait);
      }
    }
  }
}
