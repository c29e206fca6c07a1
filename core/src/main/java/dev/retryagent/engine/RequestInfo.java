package dev.retryagent.engine;

/**
 * SPI: what the engine needs to know about a request, as a client adapter sees it. Implementations
 * are thin views over the client's own request object; nothing is copied. The engine asks from
 * whichever thread drives the call (an asynchronous call moves between threads), one call at a
 * time; no method may throw.
 */
public interface RequestInfo {
  /** Upper-case method, e.g. {@code GET}. */
  String method();

  /** {@code http} or {@code https}. */
  String scheme();

  /** Host name or address literal, as in the URL. */
  String host();

  /** Effective port: the URL's, or 80/443 by scheme. */
  int port();

  /** Path without query or fragment; never logged with its query. */
  String path();

  /** First value of the request header {@code name} (case-insensitive), or null. */
  String header(String name);

  /**
   * Whether the body can be sent again now, asked when a retry is considered. True for requests
   * without a body and for bodies that can be produced again (bytes, strings, files). For a body
   * that can be sent only once, true until it has started to be written (a connect failure leaves
   * it unsent) and false after.
   */
  boolean bodyReplayable();

  /** {@code scheme://host:port}: the key of per-host state. */
  default String target() {
    return scheme() + "://" + host() + ":" + port();
  }
}
