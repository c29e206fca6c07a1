package dev.retryagent.engine;

import dev.retryagent.internal.observe.Sanitizer;

/**
 * SPI: what the engine needs to know about a request, as a client adapter sees it. Implementations
 * are thin views over the client's own request object; nothing is copied. The engine asks from
 * whichever thread drives the call (an asynchronous call moves between threads), one call at a
 * time; no method may throw.
 */
public interface RequestInfo {
  /**
   * The method as the request sends it, case and all, e.g. {@code GET}: method names are
   * case-sensitive (RFC 9110 section 9.1), so a {@code get} is not a {@code GET}, and a server may
   * treat it as any method it does not know. Never upper-cased: the idempotency rule ({@link
   * dev.retryagent.policy.RetryPolicy#isIdempotent}) judges a {@code get} as the unknown, unsafe
   * method it is; a route's {@code match.methods} matches in any case.
   */
  String method();

  /** {@code http} or {@code https}. */
  String scheme();

  /** Host name or address literal, as in the URL. */
  String host();

  /** Effective port: the URL's, or 80/443 by scheme. */
  int port();

  /** Path without query or fragment; never logged with its query. */
  String path();

  /**
   * Whether the query or fragment, as the application wrote the URL, holds an {@code @}: then the
   * URL's last {@code @} is past the path, and a reader that takes it for the end of the user-info
   * reads the path as part of a password ({@code https://u:12/ca?nary@h/x}: the client sends {@code
   * /ca} to host {@code u}, port 12), so the agent writes the path {@code /<redacted>}. Asked only
   * when a path is written (events, spans, {@code explain}), never to route a call; {@link #path()}
   * is unchanged. The default: false (an adapter that cannot tell).
   */
  default boolean atPastPath() {
    return false;
  }

  /** First value of the request header {@code name} (case-insensitive), or null. */
  String header(String name);

  /**
   * Whether the body can be sent again now, asked when a retry is considered. True for requests
   * without a body and for bodies that can be produced again (bytes, strings, files). For a body
   * that can be sent only once, true until it has started to be written (a connect failure leaves
   * it unsent) and false after.
   */
  boolean bodyReplayable();

  /**
   * True when the caller gave up on the call this request is sent for (e.g. OkHttp's {@code
   * Call.isCanceled()}); checked before retries, as {@link RetryCall#cancelledWhen} is. An adapter
   * that can tell answers here, which costs nothing per call; the default never gave up.
   */
  default boolean callerGaveUp() {
    return false;
  }

  /**
   * How many times the client sent this request again on its own inside an attempt that failed with
   * {@code failure} (0 when it did not, or cannot tell); asked once per failed attempt, before the
   * decision, as {@link RetryCall#clientResendsOf} is. An adapter that can tell answers here; the
   * default never resends.
   */
  default int clientResendsIn(Throwable failure) {
    return 0;
  }

  /**
   * {@code scheme://host:port}, the host as the request writes it, but for what a client left in it
   * of a URL's user-info ({@code Sanitizer.host}): names the target in messages (per-host state is
   * keyed by {@code internal.engine.TargetKey}, whatever the host's case).
   */
  default String target() {
    return scheme() + "://" + Sanitizer.host(host()) + ":" + port();
  }
}
