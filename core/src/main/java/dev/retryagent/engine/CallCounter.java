package dev.retryagent.engine;

/**
 * A listener's counters for one route and target, kept by the engine with that target's shared
 * state ({@link RetryListener#counterFor}), so that counting the routine part of every call (its
 * attempts and its end) costs no event object and no lookup. Thread-safe; must be fast and must not
 * throw (a throw is swallowed, as a listener's).
 *
 * <p>A call's first attempt is counted when it is over (when the call ends with it, or its second
 * attempt starts), not when it starts: a call that succeeds at once is then told as one {@link
 * #firstAttemptSucceeded()} (issue 13). Every other attempt is counted as it starts.
 */
public interface CallCounter {
  /** An attempt is about to be made: what {@link RetryListener#onAttempt} would be told. */
  void attempt();

  /**
   * A call ended: what {@link RetryListener#onCallComplete} would be told.
   *
   * @param succeeded the call ended with a response that is not a failure
   */
  void callEnded(boolean succeeded);

  /**
   * A call ended with a success on its first attempt: {@link #attempt()} and {@link
   * #callEnded(boolean) callEnded(true)} in one, for a counter that can count both with one
   * increment. Default: those two.
   */
  default void firstAttemptSucceeded() {
    attempt();
    callEnded(true);
  }
}
