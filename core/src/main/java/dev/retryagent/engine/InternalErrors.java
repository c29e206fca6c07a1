package dev.retryagent.engine;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * The engine's own failures, which must never reach a call: each is caught where it happens, the
 * call goes on as it would without the agent, and one line says so, once per cause (where it
 * happened and the exception's class), however many calls it hits. Thread-safe.
 *
 * <p>The line names the exception's class and the frame that threw it, never its message: a message
 * may carry what a request holds (a URL with a query, a header).
 */
final class InternalErrors {
  /** Causes remembered; past this, further new causes are not reported (a bound, not a goal). */
  static final int MAX_CAUSES = 64;

  private final Consumer<String> sink;
  private final Set<String> reported = ConcurrentHashMap.newKeySet();

  InternalErrors(Consumer<String> sink) {
    this.sink = sink;
  }

  /**
   * Reports {@code error} unless its cause was reported already. Never throws.
   *
   * @param where what the engine was doing, e.g. {@code "starting a call"}
   * @param consequence what happens to the call instead
   */
  void report(String where, Throwable error, String consequence) {
    try {
      String cause = where + " " + error.getClass().getName();
      if (reported.size() >= MAX_CAUSES || !reported.add(cause)) {
        return;
      }
      StackTraceElement[] trace = error.getStackTrace();
      sink.accept(
          "retry-agent: internal error while "
              + where
              + " ("
              + error.getClass().getName()
              + (trace.length > 0 ? " at " + trace[0] : "")
              + "); "
              + consequence
              + " (said once for this cause)");
    } catch (RuntimeException | LinkageError ignored) {
      // nowhere left to report to
    }
  }

  /** Prints to {@link System#err} of the moment. */
  static Consumer<String> stderr() {
    return line -> System.err.println(line);
  }
}
