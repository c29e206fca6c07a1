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
}
