package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.ConnectException;
import java.net.InetAddress;
import java.net.SocketTimeoutException;
import org.junit.jupiter.api.Test;

/**
 * The engine's classification of the exceptions Apache HttpClient 4.5 and 5.x really throw (their
 * own classes, as they build them), which the engine knows only by name.
 */
class ApacheExceptionsTest {
  private static Outcome classify(Throwable t) {
    return TransportClassifier.classify(t);
  }

  @Test
  void aConnectTimeoutIsAConnectFailureIn45AlthoughItIsAnInterruptedIoException() {
    org.apache.http.conn.ConnectTimeoutException e =
        new org.apache.http.conn.ConnectTimeoutException(
            new SocketTimeoutException("connect timed out"),
            new org.apache.http.HttpHost("127.0.0.1", 9),
            InetAddress.getLoopbackAddress());
    assertThat(classify(e)).isEqualTo(Outcome.CONNECT_FAILURE);
  }

  @Test
  void aConnectTimeoutIsAConnectFailureIn5() {
    assertThat(
            classify(
                new org.apache.hc.client5.http.ConnectTimeoutException(
                    "Connect to http://127.0.0.1:9 failed: Connect timed out")))
        .isEqualTo(Outcome.CONNECT_FAILURE);
  }

  @Test
  void aRefusedConnectionIsAConnectFailure() {
    assertThat(
            classify(
                new org.apache.http.conn.HttpHostConnectException(
                    new ConnectException("Connection refused"),
                    new org.apache.http.HttpHost("127.0.0.1", 9))))
        .isEqualTo(Outcome.CONNECT_FAILURE);
    assertThat(
            classify(
                new org.apache.hc.client5.http.HttpHostConnectException(
                    "Connect to http://127.0.0.1:9 failed: Connection refused")))
        .isEqualTo(Outcome.CONNECT_FAILURE);
  }

  @Test
  void aServerThatClosedWithoutAnAnswerIsAReset() {
    assertThat(
            classify(new org.apache.http.NoHttpResponseException("127.0.0.1:9 failed to respond")))
        .isEqualTo(Outcome.RESET);
    assertThat(
            classify(
                new org.apache.hc.core5.http.NoHttpResponseException(
                    "127.0.0.1:9 failed to respond")))
        .isEqualTo(Outcome.RESET);
    assertThat(
            classify(
                new org.apache.hc.core5.http.ConnectionClosedException(
                    "Premature end of Content-Length delimited message body")))
        .isEqualTo(Outcome.RESET);
  }

  /**
   * HttpCore 5 fails a stream above an HTTP/2 GOAWAY's last stream id, or a request still queued
   * when its connection closed, with RequestNotExecutedException, a ConnectionClosedException: a
   * reset (never a connect failure: an unkeyed POST is not repeated), as java.net.http's "request
   * not processed by peer" is. It was none of the kinds, and a GET it ended was not retried.
   */
  @Test
  void aRequestHttpCoreNeverExecutedIsAReset() {
    assertThat(classify(new org.apache.hc.core5.http.RequestNotExecutedException()))
        .isEqualTo(Outcome.RESET);
    assertThat(
            classify(
                new java.io.IOException(
                    "wrapped", new org.apache.hc.core5.http.RequestNotExecutedException())))
        .isEqualTo(Outcome.RESET);
  }

  @Test
  void anAbortedRequestIsCancelled() {
    assertThat(
            classify(new org.apache.http.impl.execchain.RequestAbortedException("Request aborted")))
        .isEqualTo(Outcome.CANCELLED);
  }

  @Test
  void aReadTimeoutIsATimeout() {
    assertThat(classify(new SocketTimeoutException("Read timed out"))).isEqualTo(Outcome.TIMEOUT);
  }
}
