package dev.retryagent.engine;

/**
 * SPI: how the retry loops read and discard a client's response type {@code T}. Implementations
 * must be thread-safe: one instance serves every call of an adapter.
 */
public interface ResponseAccess<T> {
  /** The response's HTTP status code. */
  int status(T response);

  /**
   * The value of response header {@code name}, or null; when it came in several lines, every line's
   * value, joined by a line feed ({@code internal.FieldLines}), whichever line the client's own
   * look-up would answer with: the engine's rule picks ({@code Retry-After}: the longest wait).
   */
  String header(T response, String name);

  /**
   * Releases a response that will not reach the caller: reads or closes its body so the connection
   * is freed. Must not throw.
   */
  void discard(T response);

  /**
   * Whether a response the call decided to retry is still whole, so that it can go to the caller
   * instead (a thread interrupted during the attempt: {@link SyncRetryLoop}). False where the
   * adapter decides on the response's head and drops the body of one it retries (java.net.http).
   */
  default boolean whole(T response) {
    return true;
  }

  /** The largest body {@link #copyToGiveBack} copies: a 503's or 429's page, not a download. */
  int GIVE_BACK_LIMIT = 8192;

  /**
   * A copy of {@code response}, which the loop is about to {@link #discard} before a retry's wait,
   * that the caller cannot tell from it: its status, headers and whole body, detached from its
   * connection, given to the caller if the call then ends as if not retried (the wait ended past
   * the deadline: {@link RetryCall#retryTooLate}), where the caller would else get the engine's
   * exception in place of the response it has without the agent. Null when it cannot be made
   * cheaply: a body over {@link #GIVE_BACK_LIMIT} bytes (the copy reads no more than {@code
   * discard} would), or a client whose response cannot be rebuilt. Asked only on a retry's path,
   * {@link #whole} or not: an adapter that drops a retried body as its head arrives may have kept
   * it (java.net.http: the copy is a marker its adapter gives to the caller's handler at the call's
   * end). May throw (the loop then keeps no copy). Null by default.
   */
  default T copyToGiveBack(T response) throws java.io.IOException {
    return null;
  }

  /**
   * Whether {@link #copyToGiveBack}, when it makes no copy of {@code response}, leaves it whole, so
   * that it can still go to the caller: it peeks at the body, or reads none of it (a body declared
   * over {@link #GIVE_BACK_LIMIT}, a client whose responses cannot be copied). A call the rate
   * limit governs whose response can be neither kept through the retry's wait nor copied reserves
   * the retry's permit while the response is still whole ({@link RetryCall#reserveRetryPermit}), so
   * that a refusal ends the call with it: after a copy that made none when this is true; before the
   * copy when false (HttpClient classic reads the body for its copy, and one that turns out over
   * the limit, or not all there, is read away or cut). Asked on a retry's path only. True by
   * default.
   */
  default boolean copyLeavesWhole(T response) {
    return true;
  }

  /**
   * Whether {@code response}, which a call the rate limit governs would keep through a retry's
   * short wait ({@link RetryCall#keepThroughWait}), is better copied ({@link #copyToGiveBack}) and
   * released before it: kept, it holds a lease of a pool with a limit per route, which the
   * application's other calls on the route may be waiting for (and time out on, where without the
   * agent the connection is free as soon as the application is done with the response), and its
   * body is not known to be over {@link #GIVE_BACK_LIMIT} (a copy may be made). Near the deadline
   * it is kept whatever this says. Asked on a retry's path only. False by default: kept.
   */
  default boolean copyRatherThanKeep(T response) {
    return false;
  }

  /**
   * The response an asynchronous call ({@link AsyncRetryLoop}) ends with when it ends with {@code
   * copy} ({@link #copyToGiveBack}'s, asked there on the thread that completed the attempt, so it
   * must not block): the copy itself by default. An adapter that must finish the copy first
   * (java.net.http: the caller's body handler applied to the kept body) completes the stage once
   * done, or fails it as its client fails such a call; the loop cancels it when the caller cancels.
   */
  default java.util.concurrent.CompletionStage<T> giveBack(T copy) {
    return java.util.concurrent.CompletableFuture.completedFuture(copy);
  }

  /**
   * Starts the work of the stage {@link #giveBack} made, called by the loop once a cancel of the
   * caller's future reaches that stage: an adapter whose give-back runs on another thread makes the
   * stage in {@link #giveBack} and starts it here, so that a cancel is told to it from the moment
   * it runs (made and started at once, a cancel in between found nothing to cancel yet). Default:
   * nothing, the stage runs already.
   */
  default void startGiveBack(java.util.concurrent.CompletionStage<T> given) {}
}
