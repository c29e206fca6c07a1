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
}
