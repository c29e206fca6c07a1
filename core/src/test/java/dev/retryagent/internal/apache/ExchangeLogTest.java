package dev.retryagent.internal.apache;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Which exchanges of one attempt were resends, and which follow-ups. */
class ExchangeLogTest {
  @Test
  void oneExchangeIsNoResend() {
    ExchangeLog log = new ExchangeLog();
    log.exchangeStarted();
    log.answered(503);
    assertThat(log.exchanges()).isEqualTo(1);
    assertThat(log.resends()).isZero();
  }

  @Test
  void anExchangeAfterAFailureOrAResentStatusIsAResend() {
    ExchangeLog log = new ExchangeLog();
    log.exchangeStarted(); // failed: no answer
    log.exchangeStarted();
    log.answered(503);
    log.exchangeStarted();
    log.answered(200);
    assertThat(log.resends()).isEqualTo(2);
    assertThat(log.resentAfter()).containsExactly(-1, 503);
  }

  @Test
  void redirectsAndAuthenticationChallengesAreFollowUps() {
    ExchangeLog log = new ExchangeLog();
    log.exchangeStarted();
    log.answered(302);
    log.exchangeStarted();
    log.followUp(); // 401 answered with credentials
    log.exchangeStarted();
    log.answered(200);
    assertThat(log.exchanges()).isEqualTo(3);
    assertThat(log.resends()).isZero();
  }

  @Test
  void aFollowUpMarkBeforeAnyExchangeCountsForNothing() {
    ExchangeLog log = new ExchangeLog();
    log.followUp(); // the client reads its authentication registry while it sets up the call
    log.exchangeStarted();
    log.exchangeStarted();
    assertThat(log.resends()).isEqualTo(1);
  }

  /**
   * A resend after an exchange whose entity wrote less than its length, which the server never
   * answered (it waited for the rest, then gave up: 5.x's strategy resends an idempotent request
   * after a NoHttpResponseException), follows the application's failure, not the host's; so does
   * one after an answer to it (a 400, a 408: the host's reaction to the application's broken
   * request, which counted as the host's answer before, a breaker failure for a status it counts).
   */
  @Test
  void aResendAfterAShortBodyFollowsTheApplicationsFailure() {
    ExchangeLog log = new ExchangeLog();
    log.exchangeStarted();
    log.shortBody(); // no answer
    log.exchangeStarted();
    log.shortBody();
    log.answered(400);
    assertThat(log.answeredShortBody()).isTrue();
    log.exchangeStarted();
    assertThat(log.answeredShortBody()).isFalse();
    assertThat(log.resentAfter()).containsExactly(-2, -2);
    assertThat(log.isApplications(new java.net.SocketTimeoutException())).isFalse();
  }

  /**
   * Whether the host may have received a whole request in the attempt: the rule for the rate-limit
   * permit of an attempt the application's failure ended (kept when it may have, given back when
   * not).
   */
  @Test
  void theHostGotAWholeRequestUnlessEveryExchangeWasCutByTheApplication() {
    ExchangeLog none = new ExchangeLog();
    assertThat(none.hostGotWholeRequest()).isFalse(); // nothing went out

    ExchangeLog cut = new ExchangeLog();
    cut.exchangeStarted();
    cut.applicationFailed(new java.io.IOException("disk"), false);
    cut.exchangeStarted();
    cut.shortBody();
    cut.answered(408);
    assertThat(cut.hostGotWholeRequest()).isFalse();

    ExchangeLog ended = new ExchangeLog(); // a chunked body HttpCore 5 ended after the failure
    ended.exchangeStarted();
    ended.applicationFailed(new java.io.IOException("disk"), true);
    assertThat(ended.hostGotWholeRequest()).isTrue();

    ExchangeLog answeredFirst = new ExchangeLog(); // a 503 resent, then the entity failed
    answeredFirst.exchangeStarted();
    answeredFirst.answered(503);
    answeredFirst.exchangeStarted();
    answeredFirst.applicationFailed(new java.io.IOException("disk"), false);
    assertThat(answeredFirst.hostGotWholeRequest()).isTrue();

    ExchangeLog noConnection = new ExchangeLog(); // 5.x: the exchange leased no connection
    noConnection.exchangeStarted();
    noConnection.notSent();
    assertThat(noConnection.hostGotWholeRequest()).isFalse();

    ExchangeLog redirectedFirst = new ExchangeLog(); // a redirect's hop, then no connection
    redirectedFirst.exchangeStarted();
    redirectedFirst.answered(302);
    redirectedFirst.exchangeStarted();
    redirectedFirst.notSent();
    assertThat(redirectedFirst.hostGotWholeRequest()).isTrue();
  }
}
