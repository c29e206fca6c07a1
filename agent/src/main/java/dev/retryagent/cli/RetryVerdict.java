package dev.retryagent.cli;

import dev.retryagent.engine.AttemptResult;
import dev.retryagent.engine.Decision;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.RetryRules;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.RetryPolicy;
import java.net.ConnectException;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The words for the engine's decision after a first attempt. The decision itself is {@link
 * RetryRules#decide}'s, the function the engine runs, given a {@link RetryRules.Hypothetical}
 * moment: what depends on the moment (deadline, budget, breaker, Retry-After) is not judged here
 * but named as what each retry also needs.
 */
final class RetryVerdict {
  /** The three outcomes {@code explain} reports, each as a client reports it. */
  enum Case {
    STATUS_503("503", AttemptResult.response(503)),
    RESET("reset", AttemptResult.thrown(new SocketException("Connection reset"))),
    CONNECT_FAILURE(
        "connect failure", AttemptResult.thrown(new ConnectException("Connection refused")));

    final String label;
    final AttemptResult result;

    Case(String label, AttemptResult result) {
      this.label = label;
      this.result = result;
    }
  }

  /** The rules the hypothetical moment takes as passed, in the order they are worded. */
  private static final GiveUpReason[] ALSO_NEEDED = {
    GiveUpReason.DEADLINE,
    GiveUpReason.BUDGET,
    GiveUpReason.CIRCUIT_OPEN,
    GiveUpReason.RETRY_AFTER_TOO_LONG
  };

  private RetryVerdict() {}

  /** The engine's decision after a first attempt that came to {@code c}. */
  static Decision decide(
      RetryPolicy retry, RequestInfo request, Case c, RetryRules.Hypothetical moment) {
    return RetryRules.decide(retry, request, c.result, 1, moment);
  }

  /** {@code retried (up to 5 attempts)}, {@code not retried (POST without Idempotency-Key)}. */
  static String text(
      Mode mode,
      RetryPolicy retry,
      RequestInfo request,
      Case c,
      Decision decision,
      boolean withAttempts) {
    if (mode == Mode.OFF) {
      return "not retried (mode off: calls pass through)";
    }
    if (decision.retry()) {
      String attempts = withAttempts ? " (up to " + retry.maxAttempts() + " attempts)" : "";
      return mode == Mode.OBSERVE
          ? "would be retried" + attempts + " (mode observe: logged, not retried)"
          : "retried" + attempts;
    }
    return "not retried (" + why(decision.reason(), retry, request, c) + ")";
  }

  static String why(GiveUpReason reason, RetryPolicy retry, RequestInfo request, Case c) {
    switch (reason) {
      case RETRY_DISABLED:
        return "retry.enabled: false";
      case NON_RETRYABLE:
        return c == Case.STATUS_503
            ? "503 is not in retryOn.statuses"
            : c.label.replace(" failure", "") + " is not in retryOn.transport";
      case NOT_IDEMPOTENT:
        switch (retry.unsafeMethods()) {
          case NEVER:
            return request.method() + " is not idempotent; unsafeMethods: never";
          case IF_IDEMPOTENCY_KEY:
            return request.method() + " without " + retry.idempotencyKeyHeader();
          default:
            return request.method()
                + " may have reached the server; unsafeMethods: "
                + retry.unsafeMethods().configName()
                + " retries it only when it was never sent";
        }
      case BODY_NOT_REPLAYABLE:
        return "the body cannot be sent again";
      case ATTEMPTS:
        return "maxAttempts: " + retry.maxAttempts();
      default:
        return reason.label();
    }
  }

  /**
   * {@code time left before the deadline, budget left for the host, ...}: the rules {@code assumed}
   * passed, each as what a retry needs to pass it.
   */
  static String alsoNeeds(Set<GiveUpReason> assumed) {
    List<String> needs = new ArrayList<>();
    for (GiveUpReason r : ALSO_NEEDED) {
      if (assumed.contains(r)) {
        needs.add(need(r));
      }
    }
    // A rule added to the ladder later is named rather than left out.
    for (GiveUpReason r : assumed) {
      if (!List.of(ALSO_NEEDED).contains(r)) {
        needs.add(need(r));
      }
    }
    int last = needs.size() - 1;
    if (last > 0) {
      needs.set(last, "and " + needs.get(last));
    }
    return String.join(last > 1 ? ", " : " ", needs);
  }

  private static String need(GiveUpReason r) {
    switch (r) {
      case DEADLINE:
        return "time left before the deadline";
      case BUDGET:
        return "budget left for the host";
      case CIRCUIT_OPEN:
        return "a breaker that is not open";
      case RETRY_AFTER_TOO_LONG:
        return "a Retry-After no longer than retryAfter.max";
      default:
        return "no " + r.label();
    }
  }
}
