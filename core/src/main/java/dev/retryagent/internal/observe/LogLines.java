package dev.retryagent.internal.observe;

import dev.retryagent.config.PathMask;
import dev.retryagent.engine.CircuitBreaker;
import dev.retryagent.engine.CircuitBreakerOpenException;
import dev.retryagent.engine.CircuitTransition;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.Outcome;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.internal.Units;
import dev.retryagent.internal.engine.TargetKey;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;

/**
 * The text of each log line, as pure functions of an event and the path mask ({@code
 * agent.redact.pathSegments}). Every piece from outside (path, route, exception text) goes through
 * {@link Sanitizer}; the request is named by method, host, port and path only.
 */
final class LogLines {
  static final String PREFIX = "retry-agent: ";

  private LogLines() {}

  /** {@code GET api.example.com/v1/x attempt 2 of 3 starting [route=r]} */
  static String attempt(RetryEvent e, PathMask mask) {
    return PREFIX
        + request(e, mask)
        + " attempt "
        + e.attempt()
        + " of "
        + e.maxAttempts()
        + " starting"
        + suffix(e);
  }

  /** {@code GET api.example.com/v1/x attempt 1 failed (503), retrying in 117ms [route=r]} */
  static String retry(RetryEvent e, PathMask mask) {
    return PREFIX
        + request(e, mask)
        + " attempt "
        + e.attempt()
        + " failed ("
        + outcome(e, mask)
        + "), "
        + (e.observeOnly() ? "would retry in " : "retrying in ")
        + Units.formatRounded(e.delayNanos())
        + suffix(e);
  }

  /**
   * {@code POST pay.example.com/v1/charges gave up after 1 attempt (503): not idempotent (POST
   * without Idempotency-Key) [route=payments]}; before any attempt: {@code failed fast: ...} or
   * {@code rejected: ...}.
   */
  static String giveUp(RetryEvent e, PathMask mask) {
    StringBuilder b = new StringBuilder(PREFIX).append(request(e, mask)).append(' ');
    if (e.attempt() == 0) {
      // Ended before any attempt reached the client's sending: by the breaker, the rate limit,
      // the caller while waiting, or the client's refusal of the first attempt (attemptRefused),
      // whose debug 'attempt 1 ... starting' line was told already: 'was sent', so that both read
      // true together.
      if (e.reason() == GiveUpReason.CANCELLED) {
        return b.append("cancelled before the first attempt was sent").append(suffix(e)).toString();
      }
      if (e.reason() == GiveUpReason.CALL_TIMEOUT) {
        return b.append("the caller's own call timeout ended it before the first attempt was sent")
            .append(suffix(e))
            .toString();
      }
      b.append(
          e.reason() == GiveUpReason.CIRCUIT_OPEN
              ? (e.observeOnly() ? "would fail fast: " : "failed fast: ")
              : (e.observeOnly() ? "would be rejected: " : "rejected: "));
    } else {
      b.append(e.observeOnly() ? "would give up" : "gave up")
          .append(" after ")
          .append(e.attempt())
          .append(e.attempt() == 1 ? " attempt" : " attempts");
      if (e.outcome() != null) {
        b.append(" (").append(outcome(e, mask)).append(')');
      }
      b.append(": ");
    }
    return b.append(reason(e)).append(suffix(e)).toString();
  }

  /** Observe mode only: {@code GET h/x would fail fast: circuit breaker ... is open ...}. */
  static String breakerRejected(RetryEvent e, PathMask mask) {
    return PREFIX + request(e, mask) + " would fail fast: " + circuitOpen(e, e.error()) + suffix(e);
  }

  /** A rate-limit wait, or (observe mode) a rejection that was not carried out. */
  static String rateLimited(RetryEvent e, PathMask mask) {
    if (e.reason() != null) {
      return PREFIX + request(e, mask) + " would be rejected: " + rateLimitReason(e) + suffix(e);
    }
    return PREFIX
        + request(e, mask)
        + (e.observeOnly() ? " would wait " : " waiting ")
        + Units.formatRounded(e.delayNanos())
        + " for a rate-limit permit for "
        + target(e)
        + suffix(e);
  }

  /**
   * {@code GET h/x succeeded (200) on attempt 3 after 1.2s [route=r]}, or {@code failed}; a call
   * ended before any attempt was sent: {@code GET h/x failed before any attempt was sent
   * (circuit-open) [route=r]}.
   */
  static String complete(RetryEvent e, PathMask mask) {
    if (e.attempt() == 0) {
      return PREFIX
          + request(e, mask)
          + " failed before any attempt was sent"
          + (e.reason() == null ? "" : " (" + e.reason().label() + ")")
          + suffix(e);
    }
    return PREFIX
        + request(e, mask)
        + (e.succeeded() ? " succeeded" : " failed")
        + (e.outcome() == null && e.status() < 0 ? "" : " (" + outcome(e, mask) + ")")
        + " on attempt "
        + e.attempt()
        + " after "
        + Units.formatRounded(e.elapsedNanos())
        + suffix(e);
  }

  /**
   * {@code circuit breaker https://api.example.com:443 opened (failure rate 62% over 20 calls);
   * next trial in 30s}. A breaker may serve several routes, so no route is named.
   */
  static String transition(CircuitBreaker breaker, CircuitTransition t, boolean observe) {
    CircuitBreakerPolicy p = breaker.policy();
    String next = "; next trial in " + Units.formatRounded(p.openFor().toNanos());
    StringBuilder b =
        new StringBuilder(PREFIX)
            .append("circuit breaker ")
            .append(Sanitizer.breakerKey(breaker.key()))
            .append(' ');
    switch (t) {
      case CLOSED_TO_OPEN:
        b.append(observe ? "would open" : "opened").append(" (").append(openCause(breaker));
        b.append(')').append(next);
        break;
      case HALF_OPEN_TO_OPEN:
        b.append(observe ? "would reopen" : "reopened")
            .append(" (a trial call failed, was slow, or did not answer within openFor)")
            .append(next);
        break;
      case OPEN_TO_HALF_OPEN:
        b.append(observe ? "would go half-open" : "half-open")
            .append(": letting ")
            .append(p.halfOpenCalls())
            .append(p.halfOpenCalls() == 1 ? " trial call" : " trial calls")
            .append(" through");
        break;
      case HALF_OPEN_TO_CLOSED:
        b.append(observe ? "would close" : "closed")
            .append(" (")
            .append(p.halfOpenCalls())
            .append(p.halfOpenCalls() == 1 ? " trial call" : " trial calls")
            .append(" succeeded)");
        break;
      default:
        b.append(t.from().label()).append(" -> ").append(t.to().label());
    }
    if (observe) {
      b.append(" [observe]");
    }
    return b.toString();
  }

  private static String openCause(CircuitBreaker breaker) {
    CircuitBreakerPolicy p = breaker.policy();
    long calls = breaker.openedCalls();
    double failures = breaker.openedFailureRate();
    boolean slow = failures < p.failureRateThreshold() && p.slowCallDuration() != null;
    return (slow ? "slow-call rate " : "failure rate ")
        + Math.round((slow ? breaker.openedSlowCallRate() : failures) * 100)
        + "% over "
        + calls
        + (calls == 1 ? " call" : " calls");
  }

  /** Why the call gave up, with the policy value that decided it. */
  static String reason(RetryEvent e) {
    GiveUpReason r = e.reason();
    if (r == null) {
      return "-";
    }
    Policy policy = e.policy();
    RetryPolicy retry = policy.retry();
    switch (r) {
      case ATTEMPTS:
        // Fewer attempts than maxAttempts: the client resends on its own, without asking, and
        // would resend the retry.
        return e.attempt() < e.maxAttempts()
            ? "no attempts left (maxAttempts "
                + e.maxAttempts()
                + ", and the client would send the retry more than once)"
            : "no attempts left (maxAttempts " + e.maxAttempts() + ")";
      case DEADLINE:
        return "the deadline ("
            + Units.formatRounded(retry.deadline().toNanos())
            + ") would pass before the next attempt";
      case BUDGET:
        return "the retry budget for " + target(e) + " is spent";
      case NON_RETRYABLE:
        return "not retryable (not in retryOn)";
      case NOT_IDEMPOTENT:
        return notIdempotent(e, retry);
      case BODY_NOT_REPLAYABLE:
        return "the request body cannot be sent again";
      case RETRY_AFTER_TOO_LONG:
        return "Retry-After asks for longer than retryAfter.max ("
            + Units.formatRounded(retry.retryAfterMax().toNanos())
            + ")";
      case CIRCUIT_OPEN:
        return circuitOpen(e, e.error());
      case RATE_LIMITED:
        return rateLimitReason(e);
      case RETRY_DISABLED:
        return "retries are disabled for this route";
      case CANCELLED:
        return "cancelled by the caller";
      case APPLICATION_FAILED:
        return "the application's own code failed the request, not the host";
      case CALL_TIMEOUT:
        return "the caller's own call timeout ends the call";
      case POOL_TIMEOUT:
        return "no connection from the client's own pool within its connectionRequestTimeout"
            + " (nothing was sent)";
      default:
        return r.label();
    }
  }

  private static String notIdempotent(RetryEvent e, RetryPolicy retry) {
    String method = Sanitizer.oneLine(e.method());
    switch (retry.unsafeMethods()) {
      case IF_IDEMPOTENCY_KEY:
        return "not idempotent ("
            + method
            + " without "
            + Sanitizer.oneLine(retry.idempotencyKeyHeader())
            + ")";
      case NEVER:
        return "not idempotent (" + method + "; unsafeMethods: never)";
      default:
        return "not idempotent ("
            + method
            + " may have reached the server; unsafeMethods: "
            + retry.unsafeMethods().configName()
            + ")";
    }
  }

  private static String circuitOpen(RetryEvent e, Throwable error) {
    if (error instanceof CircuitBreakerOpenException) {
      CircuitBreakerOpenException open = (CircuitBreakerOpenException) error;
      long inMillis =
          open.retryAt() == null ? 0 : Math.max(0, open.retryAt().toEpochMilli() - e.wallMillis());
      return "circuit breaker "
          + Sanitizer.breakerKey(open.breakerKey())
          + " is open; next trial in "
          + Units.formatRoundedMillis(inMillis);
    }
    return "circuit breaker " + breakerKey(e) + " is open";
  }

  private static String breakerKey(RetryEvent e) {
    return e.policy().circuitBreaker().scope() == CircuitBreakerPolicy.Scope.ROUTE
        ? Sanitizer.breakerKey(ROUTE_KEY + e.route())
        : target(e);
  }

  private static final String ROUTE_KEY = "route:";

  private static String rateLimitReason(RetryEvent e) {
    return "no rate-limit permit for "
        + target(e)
        + " within maxWait "
        + Units.formatRounded(e.policy().rateLimit().maxWait().toNanos());
  }

  /** What the attempt came to: {@code 503}, {@code reset: SocketException: Connection reset}. */
  static String outcome(RetryEvent e, PathMask mask) {
    if (e.status() >= 0) {
      return Integer.toString(e.status());
    }
    Outcome o = e.outcome();
    String error =
        Sanitizer.exception(
            e.error(), false, e.policy().retry().idempotencyKeyHeader(), mask, e.host());
    if (o == null) {
      return error.isEmpty() ? "-" : error;
    }
    switch (o) {
      case CONNECT_FAILURE:
      case RESET:
      case TIMEOUT:
      case POOL_TIMEOUT:
        return error.isEmpty() ? e.outcomeText() : e.outcomeText() + ": " + error;
      case CANCELLED:
        return "cancelled";
      case APPLICATION_FAILED:
        // What the application's own failure was, when there is one to name.
        return error.isEmpty() ? e.outcomeText() : error;
      default:
        return error.isEmpty() ? "error" : error;
    }
  }

  /** {@code GET api.example.com/v1/x}, or {@code GET localhost:8080/v1/x}. */
  static String request(RetryEvent e, PathMask mask) {
    return Sanitizer.oneLine(e.method())
        + " "
        + Sanitizer.oneLine(Sanitizer.boundedHost(e.hostAndPort()))
        + Sanitizer.path(e.path(), mask, e.atPastPath());
  }

  /**
   * The key of the event's host as the breaker, the budget, the rate limiter and the metrics name
   * it (TargetKey: lower case, an IPv6 literal in brackets), not as the application wrote it: an
   * operator looks up what a line names in the breaker's own lines, JMX and Prometheus.
   */
  static String target(RetryEvent e) {
    return Sanitizer.oneLine(Sanitizer.boundedHost(TargetKey.of(e.scheme(), e.host(), e.port())));
  }

  private static String suffix(RetryEvent e) {
    return " [route=" + Sanitizer.routeName(e.route()) + (e.observeOnly() ? ", observe" : "") + "]";
  }
}
