package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeRequest;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link RetryRules} on its own: the rungs in order, each asked only when the ones above pass. */
class RetryRulesTest {
  private static final long MS = 1_000_000L;

  private final RetryPolicy retry = TestPolicy.create().build().retry();

  @Test
  void aRetryAsksEveryQuestionOfTheMomentInOrderAndTheBudgetLast() {
    ScriptedMoment m = new ScriptedMoment();

    Decision d = RetryRules.decide(retry, FakeRequest.get(), AttemptResult.response(503), 1, m);

    assertThat(d.retry()).isTrue();
    assertThat(d.delayNanos()).isEqualTo(100 * MS);
    assertThat(d.status()).isEqualTo(503);
    assertThat(m.asked)
        .containsExactly(
            "callerGaveUp",
            "retryAfterNanos",
            "previousDelayNanos",
            "nextRandom",
            "pastDeadline 100ms",
            "breakerOpenAfter 100ms",
            "takeFromBudget");
  }

  @Test
  void aRuleThatEndsTheCallStopsTheLadderSoTheBudgetIsNotSpent() {
    ScriptedMoment m = new ScriptedMoment();
    m.pastDeadline = true;

    Decision d = RetryRules.decide(retry, FakeRequest.get(), AttemptResult.response(503), 1, m);

    assertThat(d.retry()).isFalse();
    assertThat(d.reason()).isEqualTo(GiveUpReason.DEADLINE);
    assertThat(m.asked).doesNotContain("breakerOpenAfter 100ms", "takeFromBudget");
  }

  @Test
  void aRetryAfterLongerThanTheMaxEndsTheCallBeforeAnyJitterIsDrawn() {
    ScriptedMoment m = new ScriptedMoment();
    m.retryAfterNanos = retry.retryAfterMax().toNanos() + 1;

    Decision d = RetryRules.decide(retry, FakeRequest.get(), AttemptResult.response(503), 1, m);

    assertThat(d.reason()).isEqualTo(GiveUpReason.RETRY_AFTER_TOO_LONG);
    assertThat(m.asked).containsExactly("callerGaveUp", "retryAfterNanos");
  }

  @Test
  void theDelayIsNeverShorterThanRetryAfter() {
    ScriptedMoment m = new ScriptedMoment();
    m.retryAfterNanos = 2_000 * MS;

    Decision d = RetryRules.decide(retry, FakeRequest.get(), AttemptResult.response(503), 1, m);

    assertThat(d.delayNanos()).isEqualTo(2_000 * MS);
    assertThat(m.asked).contains("pastDeadline 2000ms");
  }

  @Test
  void aSuccessIsDoneWithoutAReasonAndAFailureNamesIt() {
    Decision ok =
        RetryRules.decide(
            retry, FakeRequest.get(), AttemptResult.response(200), 1, new ScriptedMoment());
    Decision lastAttempt =
        RetryRules.decide(
            retry, FakeRequest.get(), AttemptResult.response(503), 3, new ScriptedMoment());

    assertThat(ok.retry()).isFalse();
    assertThat(ok.reason()).isNull();
    assertThat(lastAttempt.reason()).isEqualTo(GiveUpReason.ATTEMPTS);
  }

  @Test
  void theCallersCancelWinsOverEveryOtherRule() {
    ScriptedMoment m = new ScriptedMoment();
    m.callerGaveUp = true;

    Decision d = RetryRules.decide(retry, FakeRequest.get(), AttemptResult.response(503), 1, m);

    assertThat(d.reason()).isEqualTo(GiveUpReason.CANCELLED);
    assertThat(m.asked).containsExactly("callerGaveUp");
  }

  @Test
  void aCancelAfterAnAnswerThatIsNoFailureIsNoGiveUp() {
    ScriptedMoment m = new ScriptedMoment();
    m.callerGaveUp = true;

    // The answer goes back as it came, with no reason: a give-up would be told for a call that
    // succeeded (a dead letter, a warning, the give-up counts).
    for (int status : new int[] {200, 204, 304, 404}) {
      Decision d =
          RetryRules.decide(retry, FakeRequest.get(), AttemptResult.response(status), 1, m);
      assertThat(d.retry()).as("%d", status).isFalse();
      assertThat(d.reason()).as("%d", status).isNull();
    }
    // A failure the cancel ends is a give-up, as before.
    Decision failed =
        RetryRules.decide(
            retry, FakeRequest.get(), AttemptResult.thrown(new SocketException("reset")), 1, m);
    assertThat(failed.reason()).isEqualTo(GiveUpReason.CANCELLED);
  }

  @Test
  void theHypotheticalMomentNamesWhatARetryAlsoNeeds() {
    RetryRules.Hypothetical moment = new RetryRules.Hypothetical();

    Decision d =
        RetryRules.decide(
            retry,
            FakeRequest.get(),
            AttemptResult.thrown(new SocketException("reset")),
            1,
            moment);

    assertThat(d.retry()).isTrue();
    assertThat(moment.assumed())
        .containsExactlyInAnyOrder(
            GiveUpReason.RETRY_AFTER_TOO_LONG,
            GiveUpReason.DEADLINE,
            GiveUpReason.CIRCUIT_OPEN,
            GiveUpReason.BUDGET);
  }

  @Test
  void theHypotheticalMomentAssumesNothingWhenAnEarlierRuleDecides() {
    RetryRules.Hypothetical moment = new RetryRules.Hypothetical();

    Decision d =
        RetryRules.decide(
            retry,
            FakeRequest.post(),
            AttemptResult.thrown(new SocketException("Connection reset")),
            1,
            moment);

    assertThat(d.reason()).isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
    assertThat(moment.assumed()).isEmpty();
  }

  // --- may the client resend by itself (HttpClient 5's retry strategy asks)

  @Test
  void aClientNeverResendsAnOutcomeThePolicyRetriesItsRetryTakesThePlace() {
    assertThat(
            RetryRules.clientMayResend(
                retry, FakeRequest.get(), AttemptResult.response(503), 1, false))
        .isFalse();
    assertThat(
            RetryRules.clientMayResend(
                retry,
                FakeRequest.get(),
                AttemptResult.thrown(new SocketException("Connection reset")),
                1,
                false))
        .isFalse();
  }

  @Test
  void aClientResendsAnOutcomeThePolicyDoesNotRetryInTheFirstAttemptWhateverTheCount() {
    RetryPolicy once = TestPolicy.create().retry.maxAttempts(1).build();
    RetryPolicy off = TestPolicy.create().retry.enabled(false).build();

    // a request safe to repeat, an outcome the policy does not retry (500 is not in retryOn):
    // the client's own rules decide
    assertThat(
            RetryRules.clientMayResend(
                once, FakeRequest.get(), AttemptResult.response(500), 1, false))
        .isTrue();
    assertThat(
            RetryRules.clientMayResend(
                off, FakeRequest.get(), AttemptResult.response(503), 5, false))
        .isTrue();
  }

  @Test
  void aGetTheClientFollowsAPostWithoutKeyWithIsItsToResendAsWithoutTheAgent() {
    // HttpClient 4.5 follows a POST answered 303 with a GET, and resends that GET after an I/O
    // failure: no retry of ours comes for the POST, so the GET is resent as without the agent.
    AttemptResult dropped = AttemptResult.thrown(new SocketException("Connection reset"));
    assertThat(
            RetryRules.clientMayResend(
                retry, FakeRequest.post(), FakeRequest.get(), dropped, 1, false))
        .isTrue();
    // never the POST itself, nor a follow-up that is a POST too (a 307)
    assertThat(RetryRules.clientMayResend(retry, FakeRequest.post(), null, dropped, 1, false))
        .isFalse();
    assertThat(
            RetryRules.clientMayResend(
                retry, FakeRequest.post(), FakeRequest.post(), dropped, 1, false))
        .isFalse();
    // bounded as any resend in a retry of ours
    assertThat(
            RetryRules.clientMayResend(
                retry, FakeRequest.post(), FakeRequest.get(), dropped, 3, true))
        .isFalse();
    // a call safe to repeat keeps its rule: our retry, which follows the redirect again, stands in
    assertThat(
            RetryRules.clientMayResend(
                retry, FakeRequest.get(), FakeRequest.get(), dropped, 1, false))
        .isFalse();
  }

  @Test
  void aClientNeverResendsARequestThePolicyWouldNotRepeatWhateverTheRoutesOtherSettings() {
    RetryPolicy once = TestPolicy.create().retry.maxAttempts(1).build();
    RetryPolicy off = TestPolicy.create().retry.enabled(false).build();

    // HttpClient 5 resends a POST answered 429 or 503 by itself: with the agent, a POST without
    // key reaches the server once, as with OkHttp and HttpURLConnection.
    for (RetryPolicy p : List.of(retry, once, off)) {
      assertThat(
              RetryRules.clientMayResend(
                  p, FakeRequest.post(), AttemptResult.response(503), 1, false))
          .as("%s", p)
          .isFalse();
      assertThat(
              RetryRules.clientMayResend(
                  p, FakeRequest.post(), AttemptResult.response(429), 1, false))
          .isFalse();
    }
    // A key the policy honours makes it safe: a resend the policy does not make itself (500 is not
    // in retryOn) stays the client's own.
    RetryPolicy keyedOnce =
        TestPolicy.create()
            .retry
            .maxAttempts(1)
            .unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY)
            .build();
    assertThat(
            RetryRules.clientMayResend(
                keyedOnce,
                FakeRequest.post().header(keyedOnce.idempotencyKeyHeader(), "order-42"),
                AttemptResult.response(500),
                1,
                false))
        .isTrue();
  }

  @Test
  void inARetryOfOursTheClientsResendNeedsAnAttemptLeft() {
    RetryPolicy only502 = TestPolicy.create().retry.retryOnStatuses(StatusSet.of("502")).build();

    assertThat(
            RetryRules.clientMayResend(
                only502, FakeRequest.get(), AttemptResult.response(503), 2, true))
        .isTrue();
    assertThat(
            RetryRules.clientMayResend(
                only502, FakeRequest.get(), AttemptResult.response(503), 3, true))
        .isFalse();
  }

  /** Answers as set, and writes down each question in the order it comes. */
  private static final class ScriptedMoment implements RetryRules.Moment {
    final List<String> asked = new ArrayList<>();
    boolean callerGaveUp;
    long retryAfterNanos = RetryAfter.NONE;
    boolean pastDeadline;

    @Override
    public boolean callerGaveUp() {
      asked.add("callerGaveUp");
      return callerGaveUp;
    }

    @Override
    public long retryAfterNanos() {
      asked.add("retryAfterNanos");
      return retryAfterNanos;
    }

    @Override
    public long previousDelayNanos() {
      asked.add("previousDelayNanos");
      return 0;
    }

    @Override
    public double nextRandom() {
      asked.add("nextRandom");
      return 0.5;
    }

    @Override
    public boolean pastDeadline(long delayNanos) {
      asked.add("pastDeadline " + delayNanos / MS + "ms");
      return pastDeadline;
    }

    @Override
    public boolean breakerOpenAfter(long delayNanos) {
      asked.add("breakerOpenAfter " + delayNanos / MS + "ms");
      return false;
    }

    @Override
    public boolean takeFromBudget() {
      asked.add("takeFromBudget");
      return true;
    }
  }
}
