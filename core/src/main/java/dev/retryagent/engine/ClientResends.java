package dev.retryagent.engine;

import dev.retryagent.policy.RetryPolicy;
import java.util.function.ToIntFunction;

/**
 * What a client sent again on its own inside the current attempt of a call: resends it asked the
 * call for first ({@link RetryCall#clientMayResend}), and resends it made without asking, which it
 * will likely make again in a retry, so the retry must leave room for them. Not thread-safe: {@link
 * RetryCall} guards it.
 */
final class ClientResends {
  private ToIntFunction<Throwable> fromFailure;
  private boolean inRetry;
  private int permitted;
  private int unasked;

  /** How the adapter tells the resends from the attempt's failure; see {@link RetryCall}. */
  void judgedBy(ToIntFunction<Throwable> resends) {
    this.fromFailure = resends;
  }

  /** The resends the adapter sees in {@code error}; 0 when it cannot tell (or has a bug). */
  int in(Throwable error) {
    try {
      return fromFailure == null ? 0 : Math.max(0, fromFailure.applyAsInt(error));
    } catch (RuntimeException e) {
      return 0; // an adapter's bug must not cost the call its decision
    }
  }

  /**
   * The resends {@code request} itself tells of in {@code error}; 0 when it cannot (or has a bug).
   */
  static int told(RequestInfo request, Throwable error) {
    try {
      return Math.max(0, request.clientResendsIn(error));
    } catch (RuntimeException e) {
      return 0; // an adapter's bug must not cost the call its decision
    }
  }

  /** An attempt starts: a retry of ours, or the call's first. */
  void attemptStarted(boolean retry) {
    inRetry = retry;
    permitted = 0;
    unasked = 0;
  }

  /**
   * The client asks to resend after {@code result} inside the current attempt, {@code attempt}
   * attempts counted so far: {@link RetryRules#clientMayResend}, the resends already allowed in
   * this attempt counted too. A yes is counted as an attempt when the resend is made.
   *
   * @param followUp the request the client made itself to follow {@code request}, when that is what
   *     it resends; else null
   */
  boolean ask(
      RetryPolicy retry,
      RequestInfo request,
      RequestInfo followUp,
      AttemptResult result,
      int attempt) {
    boolean may =
        RetryRules.clientMayResend(retry, request, followUp, result, attempt + permitted, inRetry);
    if (may) {
      permitted++;
    }
    return may;
  }

  /** A resend is being counted. */
  void made() {
    if (permitted > 0) {
      permitted--;
    } else {
      unasked++;
    }
  }

  /** Resends of this attempt made without asking: what a retry should expect again. */
  int expected() {
    return unasked;
  }
}
