package dev.retryagent.internal.apache;

import dev.retryagent.engine.RetryCall;
import java.util.Arrays;

/**
 * The exchanges Apache HttpClient made inside one attempt of ours, as its own machinery saw them:
 * its retry handler ({@code DefaultHttpRequestRetryHandler} in 4.5, {@code
 * DefaultHttpRequestRetryStrategy} in 5.x) sends a request again after an I/O failure or (5.x, and
 * 4.5 with a {@code ServiceUnavailableRetryStrategy}) after a 429 or 503; redirects and
 * authentication challenges are followed by further exchanges too, but those are follow-ups, not
 * resends.
 *
 * <p>The rule: an exchange followed by another one in the same attempt was resent, unless it was
 * answered with a redirect (3xx) or led to an authentication challenge ({@link #followUp()}). The
 * resends count as attempts ({@link #reportTo}), so that {@code maxAttempts} bounds what the server
 * sees instead of multiplying with the client's own retries. Not thread-safe: one attempt runs on
 * one thread.
 *
 * <p>Not final: an attempt's own object of an adapter may be its log too, one object per attempt
 * instead of two (issue 13). Nothing here is overridable in effect: a subclass adds, never changes.
 */
public class ExchangeLog {
  private int exchanges;
  private int resends;
  private boolean lastLedToFollowUp;
  private int lastStatus = -1;
  // Shared while the attempt has no resend (most never have one): an empty array per attempt was
  // 16 B on every call (issue 13). Grown, a copy, at the first resend (exchangeStarted).
  private int[] resentAfter = NO_RESENDS;
  private Throwable applications; // the last failure of the application's own entity
  private boolean shortBody; // the current exchange's entity wrote less than its length
  // The host got no whole request from the current exchange: the application's entity cut it (it
  // failed, or wrote short, and nothing ended the body), or it never went out (notSent).
  private boolean cut;
  // An earlier exchange of the attempt may have given the host a whole request.
  private boolean earlierWhole;

  private static final int[] NO_RESENDS = new int[0];

  /** What a resend followed when the exchange before failed by the application's own entity. */
  private static final int APPLICATION_FAILURE = -2;

  /** An exchange starts (the request is about to be written on a connection). */
  public void exchangeStarted() {
    if (exchanges > 0 && !lastLedToFollowUp) {
      if (resends == resentAfter.length) {
        resentAfter = Arrays.copyOf(resentAfter, Math.max(4, 2 * resends));
      }
      resentAfter[resends++] = lastStatus;
    }
    if (exchanges > 0 && !cut) {
      earlierWhole = true;
    }
    exchanges++;
    lastLedToFollowUp = false;
    lastStatus = -1;
    shortBody = false;
    cut = false;
  }

  /** The current exchange was answered with {@code status}. */
  public void answered(int status) {
    // An answer to a request whose body was short is the host's reaction to the application's
    // mistake (answeredShortBody): a resend after it follows the application's failure.
    lastStatus = shortBody ? APPLICATION_FAILURE : status;
    if (status >= 300 && status < 400) {
      // The client may follow it: the next exchange is then a redirect, not a resend.
      lastLedToFollowUp = true;
    }
  }

  /**
   * The application's own request entity failed the current exchange with {@code e} while it was
   * written ({@link BodyWrites}): the application's failure, not the host's. {@code bodyEnded}: the
   * client ended the body it began all the same (HttpCore 5 closes a chunked body's stream, so the
   * server gets a whole request, the body truncated); otherwise the request was cut.
   */
  public void applicationFailed(Throwable e, boolean bodyEnded) {
    applications = e;
    lastStatus = APPLICATION_FAILURE;
    cut = !bodyEnded;
  }

  /**
   * The application's entity wrote less than the length it declared ({@link BodyWrites#writeTo}):
   * the server waits for the rest, and an I/O failure of the current exchange after it (the
   * client's read timeout, the server closing) is the application's, not the host's ({@link
   * #isApplications}), and so is an answer to it ({@link #answeredShortBody}).
   */
  public void shortBody() {
    shortBody = true;
    cut = true;
    // A resend that follows, answered or not, follows the application's failure (reportTo).
    lastStatus = APPLICATION_FAILURE;
  }

  /**
   * Whether the current exchange's entity wrote less than its declared length ({@link #shortBody}):
   * an answer to it (the server waited for the rest and gave up, 408, or refused it, 400) is the
   * host's reaction to the application's mistake, not the host's outcome.
   */
  public boolean answeredShortBody() {
    return shortBody;
  }

  /**
   * Whether {@code thrown}, the attempt's failure, is the application's entity's (the one it threw
   * in the last exchange that it failed, or a failure HttpClient made of it: 4.5's {@code
   * ClientProtocolException} caused by {@code NonRepeatableRequestException} caused by it).
   */
  public boolean isApplications(Throwable thrown) {
    if (shortBody && thrown instanceof java.io.IOException) {
      return true;
    }
    if (applications == null) {
      return false;
    }
    Throwable t = thrown;
    for (int depth = 0; t != null && depth < 8; depth++) {
      if (t == applications) {
        return true;
      }
      t = t.getCause();
    }
    return false;
  }

  /**
   * Whether the host may have received a whole request in this attempt, one it may act on: an
   * exchange the application's entity did not cut (answered, failed on the connection's side, or a
   * chunked body HttpCore 5 ended after the entity failed). False when nothing went out, or only
   * requests the entity cut (it failed, or wrote less than its length): the rule for the attempt's
   * rate-limit permit when the application's failure ends the call ({@link
   * RetryCall#endedByApplication}).
   */
  public boolean hostGotWholeRequest() {
    return earlierWhole || (exchanges > 0 && !cut);
  }

  /**
   * Ends {@code call} in the application's own failure, from this attempt: with {@code failure}
   * (the entity's, or an I/O failure after a short body), or, when it is null, with the host's
   * answer {@code status} to a request the entity cut short. Counts the client's resends first
   * ({@link #reportTo}, so call this instead of it). The attempt's rate-limit permit stays spent
   * when the host may have received a whole request it may act on, and goes back (with the retry
   * the attempt was) when nothing or only requests the entity cut went out ({@link
   * #hostGotWholeRequest}), as for the other clients' bodies (RetryCall's javadoc).
   */
  public void endCallAsApplications(RetryCall call, Throwable failure, int status) {
    reportTo(call);
    if (!hostGotWholeRequest()) {
      call.attemptNotSent();
    }
    if (failure != null) {
      call.endedByApplication(failure);
    } else {
      call.endedByApplication(status);
    }
  }

  /**
   * The current exchange ended before its request went out: the client leased no connection for it
   * within its {@code connectionRequestTimeout} (the pool held by the application's other calls),
   * or the lease was cancelled (the request's {@code cancel()} while it waited).
   */
  public void notSent() {
    cut = true;
  }

  /**
   * The attempt ended because the client leased no connection for its request in time (HttpClient
   * 4.5's {@code ConnectionPoolTimeoutException}, 5.x's {@code ConnectionRequestTimeoutException}
   * or the pool's own deadline failure, RetryExecHandler.noPooledConnection), or because the
   * application aborted it (4.5's {@code abort()}: no exchange started yet, if before its request
   * was written; 5.x's {@code cancel()} while the lease waited, HttpCore's {@code
   * CancellationException}). Unless an earlier exchange of the attempt may have given the host a
   * whole request ({@link #hostGotWholeRequest}: a redirect's hop before it), the attempt sent
   * nothing, and counts as not sent: its rate-limit permit and the retry it was go back ({@link
   * RetryCall#attemptNotSent}), or a pool the application's own calls hold spends the host's bucket
   * on requests it never got.
   */
  public void noConnection(RetryCall call) {
    noConnection(call, false);
  }

  /**
   * As {@link #noConnection(RetryCall)}; {@code byCaller}: the application ended the lease (a
   * cancel or an interrupt while it waited), so an attempt with no exchange before this one sent no
   * request at all and is not counted as one ({@link RetryCall#attemptRefused}).
   */
  public void noConnection(RetryCall call, boolean byCaller) {
    if (!hostGotWholeRequest()) {
      if (byCaller && exchanges <= 1) {
        call.attemptRefused();
      } else {
        call.attemptNotSent();
      }
    }
  }

  /** The current exchange led to an authentication challenge that the client answers. */
  public void followUp() {
    if (exchanges > 0) {
      lastLedToFollowUp = true;
    }
  }

  /** Exchanges started so far. */
  public int exchanges() {
    return exchanges;
  }

  /** Exchanges the client sent again on its own. */
  public int resends() {
    return resends;
  }

  /**
   * What each resend followed, in order: the status the client resent after, -1 after a failure (no
   * answer), or -2 after a failure of the application's own entity.
   */
  public int[] resentAfter() {
    return Arrays.copyOf(resentAfter, resends);
  }

  /**
   * Counts the client's resends in this attempt as attempts of {@code call}, as OkHttp's own
   * repeats are counted: for {@code maxAttempts}, as retries for the budget, and in the breaker as
   * the status (or failure) each followed, a failure of the application's own entity never. Call
   * once, when the attempt has ended and before the call decides about it.
   */
  public void reportTo(RetryCall call) {
    if (earlierWhole || (exchanges > 0 && lastLedToFollowUp)) {
      // A redirect's hop (or a resend) followed a request the host may have acted on, or was to
      // follow an answered one and failed before its exchange started (4.5 connects first): a
      // connect failure that ends the attempt does not prove the call's request unsent.
      call.requestReachedServer();
    }
    for (int i = 0; i < resends; i++) {
      if (resentAfter[i] >= 0) {
        call.clientRepeated(resentAfter[i]);
      } else if (resentAfter[i] == APPLICATION_FAILURE) {
        call.clientResentAfterApplicationFailure();
      } else {
        call.clientResentAfterFailure(false);
      }
    }
  }
}
