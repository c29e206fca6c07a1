package dev.retryagent.engine;

/**
 * SPI: how the retry loops read and discard a client's response type {@code T}. Implementations
 * must be thread-safe: one instance serves every call of an adapter.
 */
public interface ResponseAccess<T> {
  /** The response's HTTP status code. */
  int status(T response);

  /** First value of response header {@code name}, or null. */
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
}
