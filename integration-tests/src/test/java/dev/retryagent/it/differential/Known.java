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
    static final String APACHE_INTERRUPT_IN_WAIT =
        "issue 12: an interrupt during the agent's wait between attempts ends the call at once with"
            + " InterruptedIOException (the documented contract), where HttpClient (4.5, 5.x)"
            + " itself does not react to an interrupt during an exchange";

    static final String APACHE5_OWN_LONG_WAIT =
        "by design (docs/apache-httpclient.md): HttpClient 5 waits for a Retry-After of any length"
            + " by itself (here 99999999999 s, so the application gave up waiting); with the agent"
            + " its retry strategy asks the policy first, whose retryAfter.max (30 s) sends the 429"
            + " back at once";

    static final String APACHE5_TIMED_OUT_CONNECTION_REUSED =
        "issue 14, HttpClient 5.x's own (the same without the agent): after a response timeout,"
            + " the connection sometimes goes back to the pool and the next request on it times"
            + " out too (the server is still busy with the late answer); with the agent that"
            + " follow-up GET is retried and succeeds";

    static final String ASYNC_FAILURE_ON_CALLER =
        "issue 14, intermittent: a sendAsync whose failure (the policy does not retry it) came"
            + " before the application attached its callback is delivered on the caller's thread;"
            + " without the agent the JDK's future completes on its executor";

    static final String ASYNC_FAILURE_AFTER_ATTACH =
        "intermittent, the same race the other way (seen twice in a full run, JDK 25, a stale"
            + " connection reset under a POST or PATCH): without the agent the JDK's future failed"
            + " before the application attached its callback, which then ran on the caller; with"
            + " the agent the failure, which the policy does not retry, comes a few milliseconds"
            + " later, after the callback was attached, which runs on the JDK's executor";

    static final String HANDSHAKE_DONE_BEFORE_ATTACH =
        "intermittent, the same race without the agent: a WebSocket handshake whose future is"
            + " already complete when the application attaches its stage runs that stage on the"
            + " caller, otherwise on the JDK's executor; the agent's few milliseconds move the"
            + " completion across that moment now and then (seen once in a full run, JDK 25)";

    static final String CLIENT_RESEND_OFF =
        "by design (docs/guarantees.md, docs/url-connection.md R1): HttpURLConnection and OkHttp"
            + " send a POST or PATCH without key again by themselves when their kept-alive"
            + " connection fails after it was written; the agent turns that resend off, so the"
            + " application gets the failure and the server one request";

    static final String APACHE5_RESEND_OFF =
        "by design (docs/apache-httpclient.md, docs/guarantees.md): HttpClient 5 sends a POST"
            + " without key answered 429 or 503 once more by itself, after a second; with the agent"
            + " its retry strategy asks the policy first, which never repeats such a request, so"
            + " the application gets the 429 or 503 and the server one request";

    static final String ASYNC_APACHE_RESEND_AFTER_CANCEL =
        "intermittent, HttpClient 5 async's own: without the agent its own retry of the 503 is"
            + " scheduled a second later and still goes out after the application cancelled the"
            + " future at 500 ms (counted when the forked JVM lives that long); with the agent the"
            + " policy's retry stands in, and a cancel during its wait sends nothing more";

    static final String ASYNC_APACHE_TIMEOUT_TICK =
        "by design, HttpClient 5 async's own (the same without the agent): it checks connect and"
            + " response timeouts once per I/O select interval (1 s by default), so each attempt"
            + " under a 400 ms timeout takes about a second, and the retried attempts take longer"
            + " than the case's bound, made for 400 ms attempts";

    static final String ASYNC_APACHE_INTERRUPT_ONLY_ENDS_GET =
        "by design: the async application's interrupted thread only stops waiting in Future.get()"
            + " (InterruptedException, the same with the agent); the call goes on, with the"
            + " policy's attempts (3 requests) where HttpClient alone resends the 503 once (2)";

    static final String ASYNC_APACHE_CLOSE =
        "by design, the agent never leaves a call unanswered where HttpClient 5 async's own close"
            + " often does (docs/apache-httpclient.md): without the agent a close during HttpClient's"
            + " own wait for its resend of the 503, or during a second request, or (5.6) during an"
            + " attempt, leaves the callback uncalled (none within the case's bound; HttpCore loses"
            + " the exchange of a session its close(IMMEDIATE) closes itself). With the agent, the"
            + " client's close ends the call's wait at once with the earlier attempt's outcome (the"
            + " 503, on retry-agent-async); an attempt HttpClient never tells of the close fails with"
            + " its ConnectionClosedException 2 s after it, on retry-agent-async";

    static final String ASYNC_APACHE_CANCEL_AT_ONCE =
        "intermittent, HttpClient 5 async's own race (seen both ways): a Future.cancel made as"
            + " soon as execute returned the future stops the request or not, as HttpClient's I/O"
            + " thread has sent it or not yet: 0 or 1 requests, with or without the agent";

    static final String ASYNC_APACHE_CANCEL_AFTER_ANSWER =
        "intermittent, the same race one step further (first seen in CI on 2026-12-07, with the"
            + " agent, 5.1.3, JDK 17): HttpClient's I/O thread had sent the request and had its"
            + " answer before the cancel, so the callback hears completed() on that thread, not"
            + " cancelled() on the caller (a Future.cancel after completion does nothing, with or"
            + " without the agent); the agent's execute() returns a little later than the plain"
            + " client's, which makes this way likelier with it";

    static final String ASYNC_APACHE_LATE_FAILED =
        "intermittent, the application's own race (seen both ways): its consumer reports the"
            + " status, then throws; the failed() that follows a moment later on the I/O thread is"
            + " among its reports or not, as it looks before or after it, with or without the agent";

    private Reasons() {}
  }
}
