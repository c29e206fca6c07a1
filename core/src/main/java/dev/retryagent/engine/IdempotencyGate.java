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
   * True when the policy repeats {@code request} after a connect failure but not after a failure
   * once sent: whether it was sent is all that decides. An adapter whose client can follow the
   * request inside one attempt with another request (a redirect's hop, which may then fail to
   * connect) watches for such a request to tell the call ({@link RetryCall#requestReachedServer}).
   */
  public static boolean onlyIfNotSent(RetryPolicy policy, RequestInfo request) {
    return !policy.isIdempotent(request.method())
        && check(policy, request, Outcome.CONNECT_FAILURE) == null
        && check(policy, request, Outcome.RESET) != null;
  }

  /**
   * {@link #check(RetryPolicy, RequestInfo, Outcome)} for {@code result}: a connect failure that
   * came after another request of the same attempt reached a server (a redirect's hop, the client's
   * own resend) is judged as a failure after sending, since the server may have acted on the call's
   * request already.
   */
  static GiveUpReason check(RetryPolicy policy, RequestInfo request, AttemptResult result) {
    return check(
        policy, request, result.connectFailureAfterSending() ? Outcome.RESET : result.outcome());
  }

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
        return isKey(request.header(policy.idempotencyKeyHeader()))
            ? null
            : GiveUpReason.NOT_IDEMPOTENT;
      default:
        return GiveUpReason.NOT_IDEMPOTENT;
    }
  }

  /**
   * True when {@code value} names a key: a server reads a header's value without the spaces and
   * tabs around it (RFC 9110 section 5.5), so a blank one reaches it as no key at all, which it
   * cannot deduplicate by. java.net.http and OkHttp trim a value to nothing as it is set;
   * HttpURLConnection and Apache HttpClient send it as given, and a retry was made.
   */
  private static boolean isKey(String value) {
    if (value == null) {
      return false;
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c != ' ' && c != '\t') {
        return true;
      }
    }
    return false;
  }
}
