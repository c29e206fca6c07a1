package dev.retryagent.engine;

/** How the retry loops read and discard a client's response type. */
public interface ResponseAccess<T> {
  int status(T response);

  /** First value of response header {@code name}, or null. */
  String header(T response, String name);

  /**
   * Releases a response that will not reach the caller: reads or closes its body so the connection
   * is freed. Must not throw.
   */
  void discard(T response);
}
