package dev.retryagent.engine;

/**
 * The threads that run the work of many calls: the engine's scheduler threads ({@link
 * Scheduler#shared()}: two run every asynchronous call's due retries in the JVM) and a client's I/O
 * threads (Apache HttpClient 5.x's reactor). Whoever runs a call's step on such a thread marks it
 * for that step ({@link #enter}): the step must not wait on the network for its own call (a fleet
 * limit's connect to Redis, its wait for a connection another call holds), or every other call's
 * due work waits with it. The mark is set by the code that runs the step, never guessed from a
 * thread's name; a thread's mark is its own (thread-safe).
 */
public final class SharedThreads {
  // Set only while marked, removed after: nothing stays on a client's thread.
  private static final ThreadLocal<Boolean> MARKED = new ThreadLocal<>();

  private SharedThreads() {}

  /**
   * Marks this thread as running other calls' work until {@link #exit}.
   *
   * @return whether it was marked already, for {@link #exit}
   */
  public static boolean enter() {
    if (MARKED.get() != null) {
      return true;
    }
    MARKED.set(Boolean.TRUE);
    return false;
  }

  /** Ends the mark {@link #enter} set; {@code wasMarked}: what it returned. */
  public static void exit(boolean wasMarked) {
    if (!wasMarked) {
      MARKED.remove();
    }
  }

  /** Whether this thread runs other calls' work now: a call's step here must not block on I/O. */
  public static boolean here() {
    return MARKED.get() != null;
  }
}
