package dev.retryagent.urlconnection;

import dev.retryagent.engine.Outcome;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.policy.RetryPolicy;

/**
 * Whether the JDK may send a request again by itself when reading its response fails on a broken
 * kept-alive connection ({@code sun.net.www.http.HttpClient}'s resend, POST included unless {@code
 * sun.net.http.retryPost} is false). Where it may, the resend counts as an attempt; only the
 * agent's transport reaches it (docs/url-connection.md).
 */
final class JdkResendRule {
  private JdkResendRule() {}

  /**
   * The rule, for the step of {@code call}'s current attempt:
   *
   * <ul>
   *   <li>never for a request the engine would not repeat after a reset (a POST without key): the
   *       JDK and the agent together never send it twice. By the rule each retry of the call is
   *       judged by: the call's own, or the one now in force after a reload that made it stricter
   *       ({@link RetryCall#refusesRepeat(dev.retryagent.engine.RequestInfo, Outcome)});
   *   <li>always where the route never retries (retries off, {@code maxAttempts: 1}) and in observe
   *       mode: the JDK does as it does without the agent;
   *   <li>otherwise while an attempt is left for it, so {@code maxAttempts} bounds what the server
   *       sees.
   * </ul>
   *
   * @param sending the method of the request the JDK is reading the response to, or null before the
   *     response: the application's, or the GET the JDK follows a redirect of a POST with (the
   *     JDK's own rule asks the connection's method too). That GET is judged as a GET: judged as
   *     the POST, its resend was switched off and the application got "Unexpected end of file from
   *     server" where without the agent the JDK sent the GET again
   */
  static boolean allows(RetryCall call, UrlRequest request, String sending) {
    if (call.observeOnly()) {
      return true;
    }
    // The JDK resends its own buffered body, so only the method and the key matter here. The rule
    // is the one each retry of the call is judged by: the call's own, or the one now in force when
    // a reload since the call began (during a retry's wait) made it stricter. Judged by the call's
    // own alone, a POST begun under unsafeMethods: always whose retry went out after a reload to
    // never was still resent by the JDK.
    if (call.refusesRepeat(request.asIfBodyReplayable(sending), Outcome.RESET)) {
      return false;
    }
    RetryPolicy retry = call.policy().retry();
    if (!retry.enabled() || retry.maxAttempts() <= 1) {
      return true;
    }
    return call.attempt() < retry.maxAttempts();
  }
}
