package dev.retryagent.engine;

import dev.retryagent.policy.TransportFailure;

/** What kind of result one attempt came to. Whether it is retried is decided separately. */
public enum Outcome {
  /** A whole response head arrived; its status decides the rest. */
  RESPONSE(null),
  /** The connection was never made (refused, connect timeout): nothing was sent. */
  CONNECT_FAILURE(TransportFailure.CONNECT),
  /** The connection broke after sending, before a whole response came. */
  RESET(TransportFailure.RESET),
  /** No response in time. */
  TIMEOUT(TransportFailure.TIMEOUT),
  /** Any other exception: unknown host, TLS failure, protocol error, a bug. */
  OTHER_EXCEPTION(null),
  /** The caller cancelled or interrupted: never retried, never a breaker failure. */
  CANCELLED(null),
  /**
   * The application's own code failed the request (its request body threw, or wrote other than its
   * declared length), not the host: never retried, never a breaker failure; the call gives up with
   * {@link GiveUpReason#APPLICATION_FAILED}. A status, when there is one, is the host's answer to
   * the request the application broke.
   */
  APPLICATION_FAILED(null),
  /**
   * The client found no connection in its own pool within its own wait for one (Apache HttpClient's
   * {@code connectionRequestTimeout}): nothing reached the host, so it says nothing of the host;
   * never retried, never a breaker failure; the call gives up with {@link
   * GiveUpReason#POOL_TIMEOUT}.
   */
  POOL_TIMEOUT(null);

  private final TransportFailure transport;

  Outcome(TransportFailure transport) {
    this.transport = transport;
  }

  /** The {@code retryOn.transport} kind this outcome is, or null. */
  public TransportFailure transport() {
    return transport;
  }
}
