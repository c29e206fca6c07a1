package dev.retryagent.policy;

import java.util.Locale;

/** The kinds of transport failure the contract names in {@code retryOn.transport}. */
public enum TransportFailure implements ConfigNamed {
  /**
   * The connection was never made (refused, connect timeout, no route): the request was not sent,
   * so repeating it is always safe.
   */
  CONNECT,
  /**
   * The connection broke or closed after the request was (perhaps partly) sent and before a whole
   * response arrived: reset, EOF, empty response, HTTP/2 stream reset. The server may have acted.
   */
  RESET,
  /** No response in time. The server may have acted. */
  TIMEOUT;

  /** The name used in YAML. */
  @Override
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
