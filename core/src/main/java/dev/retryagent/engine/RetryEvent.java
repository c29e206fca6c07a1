package dev.retryagent.engine;

import dev.retryagent.config.PathMask;
import dev.retryagent.internal.engine.TargetKey;
import dev.retryagent.internal.observe.Sanitizer;
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
    /**
     * The rate limiter made the call wait or rejected it: one event per attempt that waits for its
     * permit (with the wait as known then: a 429 pause that begins during it makes it longer
     * without another event), one per refusal.
     */
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
  private final boolean atPastPath;
  private final int attempt;
  private final int maxAttempts;
  private final AttemptResult result;
  private final Throwable error;
  private final long delayNanos;
  private final GiveUpReason reason;
  private final boolean observeOnly;
  private final boolean succeeded;
  private final long elapsedNanos;
  private final long wallMillis;
  private final CallContext context;
  // agent.redact.pathSegments in force when the event was made: toString writes no segment the
  // agent's own log lines would mask.
  private final PathMask pathMask;

  /** An attempt of {@code call} is about to be made. */
  static RetryEvent attempt(RetryCall call) {
    return new RetryEvent(Type.ATTEMPT, call, AttemptResult.none(), null, 0, null, false);
  }

  /**
   * {@code call} will retry (or, in observe mode, would) after {@code result}, in {@code delay}.
   */
  static RetryEvent retry(RetryCall call, AttemptResult result, long delayNanos) {
    return new RetryEvent(Type.RETRY, call, result, result.error(), delayNanos, null, false);
  }

  /** {@code call} gives {@code result} back to the caller, a failure, for {@code reason}. */
  static RetryEvent giveUp(RetryCall call, AttemptResult result, GiveUpReason reason) {
    return new RetryEvent(Type.GIVE_UP, call, result, result.error(), 0, reason, false);
  }

  /** {@code call} ended with {@code result}; {@code reason} is why a failure was not retried. */
  static RetryEvent complete(
      RetryCall call, AttemptResult result, GiveUpReason reason, boolean succeeded) {
    return new RetryEvent(Type.CALL_COMPLETE, call, result, result.error(), 0, reason, succeeded);
  }

  /** The breaker refused the attempt {@code call} was about to make. */
  static RetryEvent breakerRejected(RetryCall call, CircuitBreakerOpenException e) {
    return new RetryEvent(
        Type.BREAKER_REJECTED, call, AttemptResult.none(), e, 0, GiveUpReason.CIRCUIT_OPEN, false);
  }

  /**
   * The retry after {@code result} would find the breaker open; no reason here, the give-up that
   * follows carries it.
   */
  static RetryEvent breakerRejectedRetry(
      RetryCall call, AttemptResult result, CircuitBreakerOpenException e) {
    return new RetryEvent(Type.BREAKER_REJECTED, call, result, e, 0, null, false);
  }

  /** {@code call} waits {@code waitNanos} for a rate-limit permit. */
  static RetryEvent rateLimitWait(RetryCall call, long waitNanos) {
    return new RetryEvent(
        Type.RATE_LIMITED, call, AttemptResult.none(), null, waitNanos, null, false);
  }

  /** No rate-limit permit came for {@code call} in time. */
  static RetryEvent rateLimitRejected(RetryCall call) {
    return new RetryEvent(
        Type.RATE_LIMITED, call, AttemptResult.none(), null, 0, GiveUpReason.RATE_LIMITED, false);
  }

  /**
   * This end ({@link Type#GIVE_UP} or {@link Type#CALL_COMPLETE}) as the caller heard it: {@code
   * heardAs}, where the adapter told the caller of the call's end after a cancel ({@link
   * RetryCall#endHeard}); all else as made.
   */
  RetryEvent heardAs(GiveUpReason heardAs) {
    return new RetryEvent(this, heardAs);
  }

  private RetryEvent(RetryEvent e, GiveUpReason reason) {
    this.type = e.type;
    this.policy = e.policy;
    this.route = e.route;
    this.method = e.method;
    this.scheme = e.scheme;
    this.host = e.host;
    this.port = e.port;
    this.path = e.path;
    this.atPastPath = e.atPastPath;
    this.attempt = e.attempt;
    this.maxAttempts = e.maxAttempts;
    this.result = e.result;
    this.error = e.error;
    this.delayNanos = e.delayNanos;
    this.reason = reason;
    this.observeOnly = e.observeOnly;
    this.succeeded = e.succeeded;
    this.elapsedNanos = e.elapsedNanos;
    this.wallMillis = e.wallMillis;
    this.context = e.context;
    this.pathMask = e.pathMask;
  }

  /** Only through the factories above, which name what happened. */
  private RetryEvent(
      Type type,
      RetryCall call,
      AttemptResult result,
      Throwable error,
      long delayNanos,
      GiveUpReason reason,
      boolean succeeded) {
    RequestInfo r = call.request();
    this.type = type;
    this.policy = call.policy();
    this.route = policy.routeName();
    this.method = r.method();
    this.scheme = r.scheme();
    this.host = r.host();
    this.port = r.port();
    this.path = r.path();
    this.atPastPath = r.atPastPath();
    this.attempt = call.attempt();
    this.maxAttempts = policy.retry().maxAttempts();
    this.result = result;
    this.error = error;
    this.delayNanos = delayNanos;
    this.reason = reason;
    this.observeOnly = call.observeOnly();
    this.succeeded = succeeded;
    this.elapsedNanos = call.elapsedNanos();
    this.wallMillis = call.wallMillis();
    this.context = call.context();
    HostState state = call.state;
    this.pathMask = state == null ? PathMask.NONE : state.engine.pathMask();
  }

  /** The call's {@link CallContext}, {@link CallContext#NONE} when it has none. */
  public CallContext context() {
    return context;
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

  /**
   * The request's {@link RequestInfo#atPastPath}: an {@code @} in its query or fragment, so the
   * agent writes the path {@code /<redacted>}.
   */
  public boolean atPastPath() {
    return atPastPath;
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
    return result.outcome();
  }

  /** The response status, or -1. */
  public int status() {
    return result.status();
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

  /**
   * {@code host} or {@code host:port} when the port is not the scheme's default, the host as the
   * per-host state and the metrics name it ({@link TargetKey#host}: lower case, no trailing dot, an
   * IPv6 literal in brackets and in one spelling, {@code [::1]:8080}), however the client gave it.
   */
  public String hostAndPort() {
    boolean defaultPort =
        ("http".equals(scheme) && port == 80) || ("https".equals(scheme) && port == 443);
    String h = TargetKey.host(host);
    return defaultPort ? h : h + ":" + port;
  }

  /** What the attempt came to, for humans: {@code 503}, {@code reset}, or the exception type. */
  public String outcomeText() {
    if (result.status() >= 0) {
      return Integer.toString(result.status());
    }
    if (result.outcome() == null) {
      return "-";
    }
    switch (result.outcome()) {
      case CONNECT_FAILURE:
        return "connect failure";
      case RESET:
        return "reset";
      case TIMEOUT:
        return "timeout";
      case CANCELLED:
        return "cancelled";
      case APPLICATION_FAILED:
        return "application failed";
      case POOL_TIMEOUT:
        return "pool timeout";
      default:
        return error == null ? "error" : error.getClass().getSimpleName();
    }
  }

  /**
   * One line for a listener's own log, with the request as the agent's own log lines write it: the
   * path without path parameters ({@code ;jsessionid=...}) or the user-info of a path that is a
   * whole URL (Apache HttpClient 5 keeps one it cannot parse), each segment {@code
   * agent.redact.pathSegments} matches written {@code <redacted>}, and no query, header or
   * exception message: what the agent never writes, an application that logs this never shows.
   */
  @Override
  public String toString() {
    return type
        + " "
        + Sanitizer.oneLine(method)
        + " "
        + Sanitizer.oneLine(Sanitizer.boundedHost(hostAndPort()))
        + Sanitizer.path(path, pathMask, atPastPath)
        + " attempt "
        + attempt
        + "/"
        + maxAttempts
        + " outcome="
        + outcomeText()
        + (reason == null ? "" : " reason=" + reason.label())
        + (delayNanos > 0 ? " delay=" + delayNanos / 1_000_000 + "ms" : "")
        + " [route="
        // Quoted when outside the old rule (Sanitizer.routeName), as the agent's log lines write
        // it: a route named `x, observe` must not read as observe mode.
        + Sanitizer.routeName(route)
        + (observeOnly ? ", observe" : "")
        + "]";
  }
}
