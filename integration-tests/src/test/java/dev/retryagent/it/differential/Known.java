package dev.retryagent.it.differential;

import java.util.regex.Pattern;

/**
 * A difference that today's code is known to make, so that the build stays green until it is fixed:
 * one marker per bug. It covers the combinations {@code VARIANT/API@JDK} its scope matches and
 * explains the differences there that its pattern finds. A test whose differences are all explained
 * is skipped with the reasons; a difference no marker explains fails it; and so does a marker that
 * explains nothing any more (the bug is fixed: remove the marker), unless it is {@code
 * intermittent} (a race that shows only now and then).
 *
 * @param scope globs ({@code *} for any text), comma-separated, over {@code VARIANT/API@JDK}, e.g.
 *     {@code okhttp-4*}{@code /enqueue@*} or {@code java.net.http/send@17}
 * @param pattern a regular expression found in each difference it explains; empty explains all
 * @param reason why: starts with the issue that tracks it, e.g. {@code issue 11: ...}
 * @param intermittent the difference shows only in some runs
 */
public record Known(String scope, String pattern, String reason, boolean intermittent) {

  /**
   * Whether one of the comma-separated globs of this marker's scope matches {@code combination}.
   */
  boolean covers(String combination) {
    for (String g : scope.split(",")) {
      if (glob(g.trim(), combination)) {
        return true;
      }
    }
    return false;
  }

  /** Whether this marker explains {@code difference}. */
  boolean explains(String difference) {
    return Pattern.compile(pattern).matcher(difference).find();
  }

  /** Whether {@code value} matches {@code glob}, where {@code *} stands for any text. */
  static boolean glob(String glob, String value) {
    StringBuilder regex = new StringBuilder();
    String[] parts = glob.split("\\*", -1);
    for (int i = 0; i < parts.length; i++) {
      regex.append(i == 0 ? "" : ".*").append(Pattern.quote(parts[i]));
    }
    return value.matches(regex.toString());
  }

  @Override
  public String toString() {
    return "known(\"" + scope + "\", \"" + pattern + "\"): " + reason;
  }

  /** The bugs of today's code that the suite shows, as the reasons of its markers. */
  static final class Reasons {
    static final String CALL_TIMEOUT_ON_WATCHDOG =
        "issue 11: when callTimeout ends an enqueued call, onFailure runs on the Okio Watchdog"
            + " thread with IOException: Canceled, not on a dispatcher thread with"
            + " InterruptedIOException: timeout";
    static final String CLONE_FRESH_CALL_TIMEOUT =
        "issue 11: each retry of an enqueued call is a clone() with a fresh callTimeout, so"
            + " callTimeout(2.5 s) no longer ends a retried call in time (4.1 s); hidden until the"
            + " retries kept the application's own read timeout";
    static final String CALLBACK_INSIDE_CANCEL =
        "issue 11: cancelling an enqueued call runs its callback inside cancel(), on the"
            + " cancelling thread, with IOException: Canceled";
    static final String CANCEL_ALL_MISSES_WAIT =
        "issue 11: dispatcher().cancelAll() does not reach a call waiting for its retry";
    static final String CALLBACK_EXCEPTION_NOT_LOGGED =
        "issue 11 (suspected, confirmed): an IOException thrown by an enqueue callback goes to the"
            + " thread's uncaught-exception handler, not to OkHttp's \"Callback failure\" log";
    static final String INTERCEPTOR_KEY =
        "issue 11 (suspected, confirmed): an Idempotency-Key added by an application interceptor"
            + " is not seen by the idempotency gate (the agent's interceptor runs first)";
    static final String INIT_THREAD =
        "issue 11: retry-agent-init runs from premain on, before any call needs it";
    static final String ASYNC_RESULT_THREAD =
        "issue 11: now and then an async call's result is delivered on the thread that attaches the"
            + " retry loop's continuation after the attempt completed: the agent's"
            + " retry-agent-async, or the application's own thread inside enqueue()";

    static final String APACHE_INTERRUPT_IN_WAIT =
        "issue 12: an interrupt during the agent's wait between attempts ends the call at once with"
            + " InterruptedIOException (the documented contract), where HttpClient (4.5, 5.x)"
            + " itself does not react to an interrupt during an exchange";

    private Reasons() {}
  }
}
