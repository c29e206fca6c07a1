package dev.retryagent.agent.runtime;

import dev.retryagent.config.PathMask;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.internal.observe.DeadLetterWriter;
import dev.retryagent.internal.observe.RetryMetrics;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
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
 */
final class DeadLetters implements RetryListener {
  private final Consumer<String> errors;
  private final RetryMetrics metrics;
  private volatile DeadLetterWriter writer;

  /**
   * @param metrics counts the lines every writer drops; null: only each writer's own count
   */
  DeadLetters(Consumer<String> errors, RetryMetrics metrics) {
    this.errors = errors;
    this.metrics = metrics;
  }

  /**
   * Switches to {@code path} (null: none).
   *
   * @return the writer replaced, which the caller must {@link DeadLetterWriter#close() close}
   *     (waiting up to 2 s for a slow disk) once it holds no lock: a reload holds the runtime's,
   *     which start-up paths take too; null when none was replaced
   */
  synchronized DeadLetterWriter use(String path, PathMask mask) {
    DeadLetterWriter current = writer;
    Path next;
    try {
      next = path == null ? null : Path.of(path);
    } catch (InvalidPathException e) {
      errors.accept(
          "retry-agent: agent.deadLetter.path is not a valid path here ("
              + e.getMessage()
              + "); dead letters are not written");
      next = null;
    }
    if (current != null && next != null && current.path().equals(next)) {
      current.setPathMask(mask);
      return null;
    }
    DeadLetterWriter w = next == null ? null : new DeadLetterWriter(next, errors, metrics);
    if (w != null) {
      w.setPathMask(mask);
    }
    writer = w;
    return current;
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

  void close() {
    DeadLetterWriter w = writer;
    if (w != null) {
      w.close();
    }
  }
}
