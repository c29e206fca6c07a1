package dev.retryagent.internal.observe;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * Reports each kind of failure of the agent's own machinery once: a broken disk or a taken port
 * must say so clearly, not flood the log on every call. Thread-safe.
 */
final class ErrorReporter {
  private final Consumer<String> sink;
  private final Set<String> reported = ConcurrentHashMap.newKeySet();

  ErrorReporter(Consumer<String> sink) {
    this.sink = sink == null ? Sinks.stderr() : sink;
  }

  /**
   * Sends {@code message} unless a message of {@code kind} was already sent. Kinds are constants,
   * so the set stays small.
   */
  void once(String kind, String message) {
    if (reported.add(kind)) {
      try {
        sink.accept(message);
      } catch (RuntimeException ignored) {
        // nowhere left to report to
      }
    }
  }

  /** Sends {@code message} now: for a change of state the caller tracks itself, said once each. */
  void tell(String message) {
    try {
      sink.accept(message);
    } catch (RuntimeException ignored) {
      // nowhere left to report to
    }
  }

  /** Forgets {@code kind}, so its next failure is reported again (e.g. after a recovery). */
  void reset(String kind) {
    reported.remove(kind);
  }
}
