package dev.retryagent.engine;

import dev.retryagent.policy.Policy;

/**
 * One thing the engine did or decided, for listeners (logs, metrics, dead letters). Immutable. The
 * request is described by method, scheme, host, port and path only: never its query, headers or
 * body.
 */
public final class RetryEvent {
  /** What happened. */
  public enum Type {
    /** An attempt is about to be made. */
    ATTEMPT,
    /** A retry was scheduled (or, in observe mode, would have been). */
    RETRY,
    /** A failure went back to the caller without another attempt. */
    GIVE_UP,
    /** The call ended; {@link #succeeded()} says how. */
    CALL_COMPLETE,
    /** The breaker was open (or, in observe mode, would have rejected the call). */
    BREAKER_REJECTED,
    /** The rate limiter made the call wait or rejected it. */
    RATE_LIMITED
  }

  private final Type type;
  private final Policy policy;
  private final String route;
  private final String method;
  private final String scheme;
  private final String host;
  private final int port;
  private final String path;
  private final int attempt;
  private final int maxAttempts;
  private final Outcome outcome;
  private final int status;
  private final Throwable error;
  private final long delayNanos;
  private final GiveUpReason reason;
  private final boolean observeOnly;
  private final boolean succeeded;
  private final long elapsedNanos;
  private final long wallMillis;

  RetryEvent(
      Type type,
      RetryCall call,
      Outcome outcome,
      int status,
      Throwable error,
      long delayNanos,
      GiveUpReason reason,
      boolean succeeded,
      long elapsedNanos,
      long wallMillis) {
    RequestInfo r = call.request();
    this.type = type;
    this.policy = call.policy();
    this.route = policy.routeName();
    this.method = r.method();
    this.scheme = r.scheme();
    this.host = r.host();
    this.port = r.port();
    this.path = r.path();
    this.attempt = call.attempt();
    this.maxAttempts = call.policy().retry().maxAttempts();
    this.outcome = outcome;
    this.status = status;
    this.error = error;
    this.delayNanos = delayNanos;
    this.reason = reason;
    this.observeOnly = call.observeOnly();
    this.succeeded = succeeded;
    this.elapsedNanos = elapsedNanos;
    this.wallMillis = wallMillis;
  }

  public Type type() {
    return type;
  }

  /**
   * The policy that applied to the call (immutable): lets listeners explain a decision, e.g. name
   * the idempotency-key header or the deadline.
   */
  public Policy policy() {
    return policy;
  }

  /** Name of the route whose policy applied. */
  public String route() {
    return route;
  }

  public String method() {
    return method;
  }

  public String scheme() {
    return scheme;
  }

  public String host() {
    return host;
  }

  public int port() {
    return port;
  }

  /** Path without query. */
  public String path() {
    return path;
  }

  /** The attempt this event is about, 1-based (0 before the first attempt started). */
  public int attempt() {
    return attempt;
  }

  public int maxAttempts() {
    return maxAttempts;
  }

  /** The attempt's outcome, or null for events before an outcome. */
  public Outcome outcome() {
    return outcome;
  }

  /** The response status, or -1. */
  public int status() {
    return status;
  }

  /** The attempt's exception, or null. */
  public Throwable error() {
    return error;
  }

  /** The wait before the next attempt (RETRY) or the rate-limit wait (RATE_LIMITED), or 0. */
  public long delayNanos() {
    return delayNanos;
  }

  /** Why the call gave up (GIVE_UP, and CALL_COMPLETE of a failed call), or null. */
  public GiveUpReason reason() {
    return reason;
  }

  /** True in observe mode: the decision was reported, not carried out. */
  public boolean observeOnly() {
    return observeOnly;
  }

  /** CALL_COMPLETE: the call ended with a response that is not a failure. */
  public boolean succeeded() {
    return succeeded;
  }

  /** Time since the call started. */
  public long elapsedNanos() {
    return elapsedNanos;
  }

  /** Wall-clock time of the event. */
  public long wallMillis() {
    return wallMillis;
  }

  /** {@code host} or {@code host:port} when the port is not the scheme's default. */
  public String hostAndPort() {
    boolean defaultPort =
        ("http".equals(scheme) && port == 80) || ("https".equals(scheme) && port == 443);
    return defaultPort ? host : host + ":" + port;
  }

  /** What the attempt came to, for humans: {@code 503}, {@code reset}, or the exception type. */
  public String outcomeText() {
    if (status >= 0) {
      return Integer.toString(status);
    }
    if (outcome == null) {
      return "-";
    }
    switch (outcome) {
      case CONNECT_FAILURE:
        return "connect failure";
      case RESET:
        return "reset";
      case TIMEOUT:
        return "timeout";
      case CANCELLED:
        return "cancelled";
      default:
        return error == null ? "error" : error.getClass().getSimpleName();
    }
  }

  @Override
  public String toString() {
    return type
        + " "
        + method
        + " "
        + hostAndPort()
        + path
        + " attempt "
        + attempt
        + "/"
        + maxAttempts
        + " outcome="
        + outcomeText()
        + (reason == null ? "" : " reason=" + reason.label())
        + (delayNanos > 0 ? " delay=" + delayNanos / 1_000_000 + "ms" : "")
        + " [route="
        + route
        + (observeOnly ? ", observe" : "")
        + "]";
  }
}
