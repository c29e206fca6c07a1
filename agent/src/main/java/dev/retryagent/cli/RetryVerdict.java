package dev.retryagent.cli;

import dev.retryagent.engine.Classifier;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.IdempotencyGate;
import dev.retryagent.engine.Outcome;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.TransportClassifier;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.RetryPolicy;
import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketException;

/**
 * Whether the first attempt's outcome would be followed by a retry, decided by the engine's own
 * rules in the engine's order ({@code RetryCall}'s ladder): retries enabled, the outcome retryable
 * ({@link Classifier}, after {@link TransportClassifier} has named the exception), safe to repeat
 * ({@link IdempotencyGate}), an attempt left. What depends on the moment (deadline, budget,
 * breaker, Retry-After) is not judged here.
 */
final class RetryVerdict {
  /** The three outcomes {@code explain} reports, each as the exception a client would throw. */
  enum Case {
    STATUS_503("503"),
    RESET("reset"),
    CONNECT_FAILURE("connect failure");

    final String label;

    Case(String label) {
      this.label = label;
    }
  }

  private RetryVerdict() {}

  /** Null when retried, else why not (a {@link GiveUpReason}). */
  static GiveUpReason check(RetryPolicy retry, RequestInfo request, Case c) {
    if (!retry.enabled()) {
      return GiveUpReason.RETRY_DISABLED;
    }
    Outcome outcome;
    boolean retryable;
    switch (c) {
      case STATUS_503:
        outcome = Outcome.RESPONSE;
        retryable = Classifier.isRetryableStatus(retry, 503);
        break;
      default:
        IOException error =
            c == Case.RESET
                ? new SocketException("Connection reset")
                : new ConnectException("Connection refused");
        outcome = TransportClassifier.classify(error);
        retryable = Classifier.isRetryableException(retry, outcome, error);
    }
    if (!retryable) {
      return GiveUpReason.NON_RETRYABLE;
    }
    GiveUpReason unsafe = IdempotencyGate.check(retry, request, outcome);
    if (unsafe != null) {
      return unsafe;
    }
    return retry.maxAttempts() <= 1 ? GiveUpReason.ATTEMPTS : null;
  }

  /** {@code retried (up to 5 attempts)}, {@code not retried (POST without Idempotency-Key)}. */
  static String text(
      Mode mode, RetryPolicy retry, RequestInfo request, Case c, boolean withAttempts) {
    if (mode == Mode.OFF) {
      return "not retried (mode off: calls pass through)";
    }
    GiveUpReason reason = check(retry, request, c);
    if (reason == null) {
      String attempts = withAttempts ? " (up to " + retry.maxAttempts() + " attempts)" : "";
      return mode == Mode.OBSERVE
          ? "would be retried" + attempts + " (mode observe: logged, not retried)"
          : "retried" + attempts;
    }
    return "not retried (" + why(reason, retry, request, c) + ")";
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
}
