package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeRequest;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class IdempotencyGateTest {
  private static final Outcome[] SENT = {Outcome.RESPONSE, Outcome.RESET, Outcome.TIMEOUT};

  private static RetryPolicy unsafe(UnsafeMethods mode) {
    return RetryPolicy.builder().unsafeMethods(mode).build();
  }

  @ParameterizedTest
  @ValueSource(strings = {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
  void idempotentMethodsMayBeRepeatedAfterAnyOutcome(String method) {
    for (UnsafeMethods mode : UnsafeMethods.values()) {
      for (Outcome o : Outcome.values()) {
        assertThat(IdempotencyGate.check(unsafe(mode), FakeRequest.of(method), o))
            .as("%s after %s with unsafeMethods %s", method, o, mode)
            .isNull();
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"POST", "PATCH", "CONNECT", "PROPFIND"})
  void unsafeMethodsUnderNeverAreNotRepeatedEvenWhenNothingWasSent(String method) {
    RetryPolicy p = unsafe(UnsafeMethods.NEVER);
    for (Outcome o : Outcome.values()) {
      assertThat(IdempotencyGate.check(p, FakeRequest.of(method), o))
          .isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
    }
    FakeRequest keyed = FakeRequest.of(method).header("Idempotency-Key", "k-1");
    assertThat(IdempotencyGate.check(p, keyed, Outcome.CONNECT_FAILURE))
        .isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
  }

  @Test
  void ifNotSentRepeatsAPostOnlyAfterAConnectFailure() {
    RetryPolicy p = unsafe(UnsafeMethods.IF_NOT_SENT);
    assertThat(IdempotencyGate.check(p, FakeRequest.post(), Outcome.CONNECT_FAILURE)).isNull();
    for (Outcome o : SENT) {
      assertThat(IdempotencyGate.check(p, FakeRequest.post(), o))
          .as("after %s", o)
          .isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
    }
  }

  @Test
  void ifNotSentIgnoresTheIdempotencyKey() {
    RetryPolicy p = unsafe(UnsafeMethods.IF_NOT_SENT);
    FakeRequest keyed = FakeRequest.post().header("Idempotency-Key", "k-1");
    assertThat(IdempotencyGate.check(p, keyed, Outcome.RESPONSE))
        .isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
  }

  @Test
  void theDefaultModeIsIfNotSent() {
    assertThat(IdempotencyGate.check(RetryPolicy.defaults(), FakeRequest.post(), Outcome.RESET))
        .isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
    assertThat(
            IdempotencyGate.check(
                RetryPolicy.defaults(), FakeRequest.post(), Outcome.CONNECT_FAILURE))
        .isNull();
  }

  @Test
  void ifIdempotencyKeyRepeatsAPostThatCarriesTheKeyAfterAnyOutcome() {
    RetryPolicy p = unsafe(UnsafeMethods.IF_IDEMPOTENCY_KEY);
    FakeRequest keyed = FakeRequest.post().header("Idempotency-Key", "8e03978e-40d5");
    for (Outcome o : Outcome.values()) {
      assertThat(IdempotencyGate.check(p, keyed, o)).as("after %s", o).isNull();
    }
  }

  @Test
  void ifIdempotencyKeyWithoutTheKeyActsAsIfNotSent() {
    RetryPolicy p = unsafe(UnsafeMethods.IF_IDEMPOTENCY_KEY);
    assertThat(IdempotencyGate.check(p, FakeRequest.post(), Outcome.CONNECT_FAILURE)).isNull();
    for (Outcome o : SENT) {
      assertThat(IdempotencyGate.check(p, FakeRequest.post(), o))
          .isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
    }
  }

  @Test
  void anEmptyIdempotencyKeyIsNoKey() {
    RetryPolicy p = unsafe(UnsafeMethods.IF_IDEMPOTENCY_KEY);
    FakeRequest empty = FakeRequest.post().header("Idempotency-Key", "");
    assertThat(IdempotencyGate.check(p, empty, Outcome.RESPONSE))
        .isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
  }

  /**
   * HttpURLConnection and Apache HttpClient send a blank value as given; the server reads it
   * without its spaces, as no key: nothing to deduplicate by. A value with spaces around a key is
   * the key.
   */
  @ParameterizedTest
  @ValueSource(strings = {" ", "   ", "\t", " \t "})
  void aBlankIdempotencyKeyIsNoKey(String blank) {
    RetryPolicy p = unsafe(UnsafeMethods.IF_IDEMPOTENCY_KEY);
    FakeRequest keyed = FakeRequest.post().header("Idempotency-Key", blank);
    for (Outcome o : SENT) {
      assertThat(IdempotencyGate.check(p, keyed, o))
          .as("after %s", o)
          .isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
    }
    assertThat(IdempotencyGate.check(p, keyed, Outcome.CONNECT_FAILURE)).isNull();
    assertThat(
            IdempotencyGate.check(
                p, FakeRequest.post().header("Idempotency-Key", " k-1\t"), Outcome.RESET))
        .isNull();
  }

  @Test
  void theKeyHeaderIsLookedUpByTheConfiguredName() {
    RetryPolicy p =
        RetryPolicy.builder()
            .unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY)
            .idempotencyKeyHeader("X-Request-Id")
            .build();
    assertThat(
            IdempotencyGate.check(
                p, FakeRequest.post().header("x-request-id", "r1"), Outcome.RESET))
        .isNull();
    assertThat(
            IdempotencyGate.check(
                p, FakeRequest.post().header("Idempotency-Key", "k"), Outcome.RESET))
        .isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
  }

  @Test
  void theKeyHeaderNameIsCaseInsensitiveThroughTheAdapter() {
    RetryPolicy p = unsafe(UnsafeMethods.IF_IDEMPOTENCY_KEY);
    assertThat(
            IdempotencyGate.check(
                p, FakeRequest.post().header("idempotency-key", "k"), Outcome.RESPONSE))
        .isNull();
  }

  @Test
  void alwaysRepeatsUnsafeMethodsAfterAnyOutcome() {
    RetryPolicy p = unsafe(UnsafeMethods.ALWAYS);
    for (Outcome o : Outcome.values()) {
      assertThat(IdempotencyGate.check(p, FakeRequest.of("PATCH"), o)).isNull();
    }
  }

  @Test
  void theIdempotentMethodsAreConfigurable() {
    RetryPolicy p = RetryPolicy.builder().methods(List.of("get", "POST")).build();
    assertThat(IdempotencyGate.check(p, FakeRequest.post(), Outcome.RESET)).isNull();
    assertThat(IdempotencyGate.check(p, FakeRequest.of("PUT"), Outcome.RESET))
        .isEqualTo(GiveUpReason.NOT_IDEMPOTENT);
  }

  @ParameterizedTest
  @EnumSource(
      value = Outcome.class,
      names = {"RESPONSE", "RESET", "TIMEOUT"})
  void aBodyThatCannotBeSentAgainIsNeverRepeatedOnceSent(Outcome outcome) {
    for (UnsafeMethods mode : UnsafeMethods.values()) {
      assertThat(IdempotencyGate.check(unsafe(mode), FakeRequest.of("PUT").oneShotBody(), outcome))
          .as("PUT under %s", mode)
          .isEqualTo(GiveUpReason.BODY_NOT_REPLAYABLE);
    }
    FakeRequest keyedOneShot = FakeRequest.post().header("Idempotency-Key", "k").oneShotBody();
    assertThat(IdempotencyGate.check(unsafe(UnsafeMethods.ALWAYS), keyedOneShot, outcome))
        .isEqualTo(GiveUpReason.BODY_NOT_REPLAYABLE);
    assertThat(
            IdempotencyGate.check(unsafe(UnsafeMethods.IF_IDEMPOTENCY_KEY), keyedOneShot, outcome))
        .isEqualTo(GiveUpReason.BODY_NOT_REPLAYABLE);
  }

  @Test
  void aOneShotBodyThatWasNeverWrittenMayBeSentAfterAConnectFailure() {
    // The adapter answers bodyReplayable() for "now": an unsent one-shot body can still be sent.
    boolean[] written = {false};
    FakeRequest put = FakeRequest.of("PUT").bodyReplayable(() -> !written[0]);
    FakeRequest post = FakeRequest.post().bodyReplayable(() -> !written[0]);
    assertThat(IdempotencyGate.check(RetryPolicy.defaults(), put, Outcome.CONNECT_FAILURE))
        .isNull();
    assertThat(IdempotencyGate.check(RetryPolicy.defaults(), post, Outcome.CONNECT_FAILURE))
        .isNull();
    written[0] = true;
    assertThat(IdempotencyGate.check(RetryPolicy.defaults(), put, Outcome.RESET))
        .isEqualTo(GiveUpReason.BODY_NOT_REPLAYABLE);
  }
}
