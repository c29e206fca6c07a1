package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.policy.TransportFailure;
import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.nio.channels.UnresolvedAddressException;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CancellationException;
import org.junit.jupiter.api.Test;

class ClassifierTest {
  private static RetryPolicy statuses(String... tokens) {
    return RetryPolicy.builder().retryOnStatuses(StatusSet.of(tokens)).build();
  }

  private static RetryPolicy exceptions(String... names) {
    return RetryPolicy.builder().retryOnExceptions(List.of(names)).build();
  }

  /** A client's marker for failures worth another try, and one that extends it. */
  interface Transient {}

  interface BriefOutage extends Transient {}

  static final class GatewayHiccup extends IOException implements BriefOutage {}

  @Test
  void anInterfaceNamedInExceptionsMatchesTheClassesThatImplementIt() {
    String marker = Transient.class.getName();
    assertThat(Classifier.matchesExceptionList(exceptions(marker), new GatewayHiccup())).isTrue();
    assertThat(
            Classifier.matchesExceptionList(
                exceptions(marker), new RuntimeException("wrapped", new GatewayHiccup())))
        .isTrue();
    assertThat(Classifier.matchesExceptionList(exceptions(marker), new IOException())).isFalse();
  }

  @Test
  void theDefaultStatusesAre429And502To504() {
    RetryPolicy p = RetryPolicy.defaults();
    assertThat(Classifier.isRetryableStatus(p, 429)).isTrue();
    assertThat(Classifier.isRetryableStatus(p, 502)).isTrue();
    assertThat(Classifier.isRetryableStatus(p, 503)).isTrue();
    assertThat(Classifier.isRetryableStatus(p, 504)).isTrue();
    for (int s : new int[] {200, 201, 301, 400, 404, 408, 409, 500, 501, 505, 599}) {
      assertThat(Classifier.isRetryableStatus(p, s)).as("status %d", s).isFalse();
    }
  }

  @Test
  void statusCodesAreMatchedExactly() {
    RetryPolicy p = statuses("503", "409");
    assertThat(Classifier.isRetryableStatus(p, 503)).isTrue();
    assertThat(Classifier.isRetryableStatus(p, 409)).isTrue();
    assertThat(Classifier.isRetryableStatus(p, 502)).isFalse();
    assertThat(Classifier.isRetryableStatus(p, 504)).isFalse();
  }

  @Test
  void aStatusClassCoversItsHundred() {
    RetryPolicy p = statuses("5xx");
    assertThat(Classifier.isRetryableStatus(p, 500)).isTrue();
    assertThat(Classifier.isRetryableStatus(p, 599)).isTrue();
    assertThat(Classifier.isRetryableStatus(p, 499)).isFalse();
    assertThat(Classifier.isRetryableStatus(p, 600)).isFalse();
    assertThat(Classifier.isRetryableStatus(statuses("5XX"), 550)).isTrue();
  }

  @Test
  void aRangeIsInclusiveAtBothEnds() {
    RetryPolicy p = statuses("502-504");
    assertThat(Classifier.isRetryableStatus(p, 501)).isFalse();
    assertThat(Classifier.isRetryableStatus(p, 502)).isTrue();
    assertThat(Classifier.isRetryableStatus(p, 503)).isTrue();
    assertThat(Classifier.isRetryableStatus(p, 504)).isTrue();
    assertThat(Classifier.isRetryableStatus(p, 505)).isFalse();
  }

  @Test
  void statusesOutsideHttpsRangeAreNeverRetryable() {
    RetryPolicy p = statuses("100-999");
    assertThat(Classifier.isRetryableStatus(p, -1)).isFalse();
    assertThat(Classifier.isRetryableStatus(p, 0)).isFalse();
    assertThat(Classifier.isRetryableStatus(p, 1000)).isFalse();
    assertThat(Classifier.isRetryableStatus(p, Integer.MAX_VALUE)).isFalse();
    assertThat(Classifier.isRetryableStatus(statuses(), 503)).isFalse();
  }

  @Test
  void transportFailuresAreRetryableOnlyWhenRetryOnTransportNamesThem() {
    RetryPolicy all = RetryPolicy.defaults();
    RetryPolicy connectOnly =
        RetryPolicy.builder().retryOnTransport(EnumSet.of(TransportFailure.CONNECT)).build();
    RetryPolicy none = RetryPolicy.builder().retryOnTransport(List.of()).build();
    IOException reset = new SocketException("Connection reset");
    IOException refused = new ConnectException("Connection refused");
    IOException timeout = new HttpTimeoutException("request timed out");

    assertThat(Classifier.isRetryableException(all, Outcome.RESET, reset)).isTrue();
    assertThat(Classifier.isRetryableException(all, Outcome.CONNECT_FAILURE, refused)).isTrue();
    assertThat(Classifier.isRetryableException(all, Outcome.TIMEOUT, timeout)).isTrue();

    assertThat(Classifier.isRetryableException(connectOnly, Outcome.CONNECT_FAILURE, refused))
        .isTrue();
    assertThat(Classifier.isRetryableException(connectOnly, Outcome.RESET, reset)).isFalse();
    assertThat(Classifier.isRetryableException(connectOnly, Outcome.TIMEOUT, timeout)).isFalse();

    assertThat(Classifier.isRetryableException(none, Outcome.CONNECT_FAILURE, refused)).isFalse();
  }

  @Test
  void otherExceptionsAreNotRetryableByDefault() {
    assertThat(
            Classifier.isRetryableException(
                RetryPolicy.defaults(), Outcome.OTHER_EXCEPTION, new UnknownHostException("x")))
        .isFalse();
    assertThat(
            Classifier.isRetryableException(
                RetryPolicy.defaults(), Outcome.OTHER_EXCEPTION, new IllegalStateException()))
        .isFalse();
  }

  static class CustomProtocolException extends IOException {
    private static final long serialVersionUID = 1L;
  }

  static class SpecialProtocolException extends CustomProtocolException {
    private static final long serialVersionUID = 1L;
  }

  @Test
  void extraExceptionsMatchTheClassByName() {
    RetryPolicy p = exceptions(CustomProtocolException.class.getName());
    assertThat(
            Classifier.isRetryableException(
                p, Outcome.OTHER_EXCEPTION, new CustomProtocolException()))
        .isTrue();
    assertThat(Classifier.isRetryableException(p, Outcome.OTHER_EXCEPTION, new IOException()))
        .isFalse();
  }

  @Test
  void extraExceptionsMatchSubclassesOfTheNamedClass() {
    RetryPolicy p = exceptions(CustomProtocolException.class.getName());
    assertThat(
            Classifier.isRetryableException(
                p, Outcome.OTHER_EXCEPTION, new SpecialProtocolException()))
        .isTrue();
    RetryPolicy anyIo = exceptions("java.io.IOException");
    assertThat(
            Classifier.isRetryableException(
                anyIo, Outcome.OTHER_EXCEPTION, new UnknownHostException("x")))
        .isTrue();
  }

  @Test
  void extraExceptionsAreFoundThroughTheCauseChain() {
    RetryPolicy p = exceptions(CustomProtocolException.class.getName());
    Throwable wrapped =
        new IOException("outer", new RuntimeException("middle", new SpecialProtocolException()));
    assertThat(Classifier.isRetryableException(p, Outcome.OTHER_EXCEPTION, wrapped)).isTrue();
  }

  @Test
  void aCyclicCauseChainEndsTheSearch() {
    RetryPolicy p = exceptions("com.example.Nowhere");
    IOException a = new IOException("a");
    IOException b = new IOException("b", a);
    a.initCause(b);
    assertThat(Classifier.isRetryableException(p, Outcome.OTHER_EXCEPTION, a)).isFalse();
  }

  @Test
  void unknownHostExceptionAlsoNamesTheJdkClientsUnresolvedAddress() {
    RetryPolicy p = exceptions("java.net.UnknownHostException");
    Throwable jdk = new ConnectException();
    jdk.initCause(new UnresolvedAddressException());
    assertThat(Classifier.isRetryableException(p, TransportClassifier.classify(jdk), jdk)).isTrue();
    assertThat(
            Classifier.isRetryableException(
                p, Outcome.OTHER_EXCEPTION, new UnknownHostException("h")))
        .isTrue();
    // Without the alias the JDK's form is not retried.
    assertThat(
            Classifier.isRetryableException(
                RetryPolicy.defaults(), TransportClassifier.classify(jdk), jdk))
        .isFalse();
  }

  @Test
  void aCancelledAttemptIsNeverRetryableEvenWhenItsClassIsListed() {
    RetryPolicy p = exceptions("java.util.concurrent.CancellationException", "java.lang.Throwable");
    assertThat(Classifier.isRetryableException(p, Outcome.CANCELLED, new CancellationException()))
        .isFalse();
  }

  @Test
  void aConnectTimeoutIsAConnectFailureForTheClassifier() {
    RetryPolicy connectOnly =
        RetryPolicy.builder().retryOnTransport(EnumSet.of(TransportFailure.CONNECT)).build();
    Throwable e = new HttpConnectTimeoutException("HTTP connect timed out");
    assertThat(Classifier.isRetryableException(connectOnly, TransportClassifier.classify(e), e))
        .isTrue();
  }
}
