package dev.retryagent.engine;

import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;

/**
 * Whether repeating a request is safe: the rule that keeps a retry from charging a card twice. A
 * ladder of guard clauses, each with its reason.
 *
 * <p>SPI: public for adapters whose client may resend a request by itself (HttpURLConnection's
 * resend on a broken kept-alive connection), so that they ask the same rule as the engine.
 */
public final class IdempotencyGate {
  private IdempotencyGate() {}

  /**
   * @return null when a retry after {@code outcome} is safe, else why not
   */
  public static GiveUpReason check(RetryPolicy policy, RequestInfo request, Outcome outcome) {
    boolean idempotent = policy.isIdempotent(request.method());
    // "never" means never, even when nothing was sent.
    if (!idempotent && policy.unsafeMethods() == UnsafeMethods.NEVER) {
      return GiveUpReason.NOT_IDEMPOTENT;
    }
    // Whatever happened, another attempt needs the body again. Adapters answer for "now": a
    // one-shot body that was never written (the connection failed first) can still be sent.
    if (!request.bodyReplayable()) {
      return GiveUpReason.BODY_NOT_REPLAYABLE;
    }
    // The connection was never made, so the server cannot have seen the request.
    if (outcome == Outcome.CONNECT_FAILURE) {
      return null;
    }
    if (idempotent) {
      return null;
    }
    switch (policy.unsafeMethods()) {
      case ALWAYS:
        return null;
      case IF_IDEMPOTENCY_KEY:
        // The server deduplicates by the key, which is sent unchanged on every attempt.
        String key = request.header(policy.idempotencyKeyHeader());
        return key != null && !key.isEmpty() ? null : GiveUpReason.NOT_IDEMPOTENT;
      default:
        return GiveUpReason.NOT_IDEMPOTENT;
    }
  }
}
