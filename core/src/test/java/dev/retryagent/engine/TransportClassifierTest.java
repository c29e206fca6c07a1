package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.UnresolvedAddressException;
import java.security.cert.CertificateException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLPeerUnverifiedException;
import org.junit.jupiter.api.Test;

/**
 * The exceptions here are built the way the JDK HttpClient and OkHttp build them (types, messages
 * and causes), so the classifier is tested against what it will really see.
 */
class TransportClassifierTest {
  /** Stands in for {@code okhttp3.internal.http2.StreamResetException}: matched by name. */
  static final class StreamResetException extends IOException {
    private static final long serialVersionUID = 1L;

    StreamResetException(String errorCode) {
      super("stream was reset: " + errorCode);
    }
  }

  /** Stands in for {@code okhttp3.internal.http2.ConnectionShutdownException}. */
  static final class ConnectionShutdownException extends IOException {
    private static final long serialVersionUID = 1L;
  }

  private static <T extends Throwable> T causedBy(T error, Throwable cause) {
    error.initCause(cause);
    return error;
  }

  // --- connect: the request was never sent

  @Test
  void aRefusedConnectionIsAConnectFailure() {
    assertThat(TransportClassifier.classify(new ConnectException("Connection refused")))
        .isEqualTo(Outcome.CONNECT_FAILURE);
  }

  @Test
  void theJdkClientsConnectExceptionAroundTheRealCauseIsAConnectFailure() {
    // The JDK client re-throws a new ConnectException whose cause is the original one.
    Throwable e = causedBy(new ConnectException(), new ConnectException("Connection refused"));
    assertThat(TransportClassifier.classify(e)).isEqualTo(Outcome.CONNECT_FAILURE);
  }

  @Test
  void okHttpsFailedToConnectIsAConnectFailure() {
    Throwable e =
        causedBy(
            new ConnectException("Failed to connect to localhost/127.0.0.1:1"),
            new ConnectException("Connection refused"));
    assertThat(TransportClassifier.classify(e)).isEqualTo(Outcome.CONNECT_FAILURE);
  }

  @Test
  void theJdkClientsConnectTimeoutIsAConnectFailureNotATimeout() {
    Throwable e =
        causedBy(
            new HttpConnectTimeoutException("HTTP connect timed out"),
            new ConnectException("HTTP connect timed out"));
    assertThat(TransportClassifier.classify(e)).isEqualTo(Outcome.CONNECT_FAILURE);
  }

  @Test
  void aSocketConnectTimeoutIsAConnectFailure() {
    assertThat(TransportClassifier.classify(new SocketTimeoutException("connect timed out")))
        .isEqualTo(Outcome.CONNECT_FAILURE);
    assertThat(TransportClassifier.classify(new SocketTimeoutException("Connect timed out")))
        .isEqualTo(Outcome.CONNECT_FAILURE);
    // OkHttp 3/4 wording for a connect timeout.
    assertThat(
            TransportClassifier.classify(
                new SocketTimeoutException(
                    "failed to connect to example.com/93.184.216.34 (port 443) from"
                        + " /10.0.0.2 (port 50000) after 10000ms")))
        .isEqualTo(Outcome.CONNECT_FAILURE);
  }

  @Test
  void noRouteToHostIsAConnectFailure() {
    assertThat(TransportClassifier.classify(new NoRouteToHostException("No route to host")))
        .isEqualTo(Outcome.CONNECT_FAILURE);
  }

  @Test
  void aSocketExceptionThrownInsideASocketsConnectIsAConnectFailure() throws Exception {
    // "Network is unreachable", "Host is down": plain SocketExceptions that OkHttp and Apache pass
    // on unwrapped. They read as resets, so a POST under if-not-sent, never sent, was not retried.
    // A real one, made on loopback alone: an IPv4-bound socket connecting to an IPv6 address.
    SocketException thrown = null;
    try (java.net.Socket s = new java.net.Socket()) {
      s.bind(new java.net.InetSocketAddress("127.0.0.1", 0));
      s.connect(new java.net.InetSocketAddress("::1", 9), 1000);
    } catch (SocketException e) {
      thrown = e;
    }
    assertThat(thrown).isNotNull().isNotInstanceOf(ConnectException.class);
    assertThat(TransportClassifier.classify(thrown)).isEqualTo(Outcome.CONNECT_FAILURE);

    // The same message from elsewhere (a write) stays a reset: only the stack tells them apart.
    SocketException written = new SocketException("Network is unreachable");
    written.setStackTrace(
        new StackTraceElement[] {
          new StackTraceElement("sun.nio.ch.NioSocketImpl", "write", null, 1),
          new StackTraceElement("java.net.Socket$SocketOutputStream", "write", null, 1)
        });
    assertThat(TransportClassifier.classify(written)).isEqualTo(Outcome.RESET);
    SocketException connecting = new SocketException("Network is unreachable");
    connecting.setStackTrace(
        new StackTraceElement[] {
          new StackTraceElement("sun.nio.ch.Net", "connect0", null, -2),
          new StackTraceElement("sun.nio.ch.NioSocketImpl", "connect", null, 1),
          new StackTraceElement("java.net.Socket", "connect", null, 1)
        });
    assertThat(TransportClassifier.classify(connecting)).isEqualTo(Outcome.CONNECT_FAILURE);
    // A bind is made only for a connection: the ephemeral ports used up.
    assertThat(
            TransportClassifier.classify(
                new java.net.BindException("Cannot assign requested address")))
        .isEqualTo(Outcome.CONNECT_FAILURE);
  }

  @Test
  void theConnectOfHttpUrlConnectionsOwnResendOfASentRequestIsNotAConnectFailure()
      throws Exception {
    // The JDK's HttpClient, finding the connection closed before a status line, connects again
    // from parseHTTP and resends (a POST too, sun.net.http.retryPost being on by default, as in
    // library mode). That connect's failure was "never sent", so a POST under if-not-sent went a
    // third time; the server may have processed the first. A real one, on loopback: the server
    // reads the request, then closes the connection and stops listening.
    java.net.ServerSocket server =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
    int port = server.getLocalPort();
    Thread serving =
        new Thread(
            () -> {
              try (java.net.Socket s = server.accept()) {
                s.getInputStream().read(new byte[4096]);
                server.close();
              } catch (java.io.IOException e) {
                // the test's assertion says what happened
              }
            });
    serving.start();
    java.net.HttpURLConnection c =
        (java.net.HttpURLConnection)
            new java.net.URL("http://127.0.0.1:" + port + "/x").openConnection();
    c.setConnectTimeout(5_000);
    c.setReadTimeout(5_000);
    java.io.IOException failed = null;
    try {
      c.getResponseCode();
    } catch (java.io.IOException e) {
      failed = e;
    } finally {
      serving.join(10_000);
      server.close();
    }
    assertThat(failed).isInstanceOf(ConnectException.class);
    assertThat(failed.getStackTrace()).anyMatch(f -> f.getMethodName().startsWith("parseHTTP"));
    assertThat(TransportClassifier.classify(failed)).isEqualTo(Outcome.RESET);
    // Asked for again (getResponseCode after getInputStream failed), HttpURLConnection hands a
    // copy with the second caller's stack, the original its cause.
    ConnectException copy = new ConnectException(failed.getMessage());
    copy.initCause(failed);
    assertThat(TransportClassifier.classify(copy)).isEqualTo(Outcome.RESET);
    // The same refusal on a first connect is a connect failure.
    assertThat(TransportClassifier.classify(new ConnectException("Connection refused")))
        .isEqualTo(Outcome.CONNECT_FAILURE);
  }

  @Test
  void aRefusedConnectionReportedAsAPlainSocketExceptionIsAConnectFailure() {
    assertThat(TransportClassifier.classify(new SocketException("Connection refused")))
        .isEqualTo(Outcome.CONNECT_FAILURE);
  }

  // --- an unknown host is none of connect, reset, timeout

  @Test
  void theJdkClientsUnknownHostIsNotAConnectFailure() {
    // java.net.http reports an unresolvable host as ConnectException caused by
    // UnresolvedAddressException.
    Throwable e = causedBy(new ConnectException(), new UnresolvedAddressException());
    assertThat(TransportClassifier.classify(e)).isEqualTo(Outcome.OTHER_EXCEPTION);
    assertThat(TransportClassifier.isUnknownHost(e.getCause())).isTrue();
  }

  @Test
  void unknownHostExceptionIsNotAConnectFailure() {
    assertThat(TransportClassifier.classify(new UnknownHostException("no.such.host")))
        .isEqualTo(Outcome.OTHER_EXCEPTION);
    Throwable wrapped =
        causedBy(new IOException("lookup failed"), new UnknownHostException("no.such.host"));
    assertThat(TransportClassifier.classify(wrapped)).isEqualTo(Outcome.OTHER_EXCEPTION);
  }

  // --- reset: the connection broke after sending

  @Test
  void aConnectionResetIsAReset() {
    assertThat(TransportClassifier.classify(new SocketException("Connection reset")))
        .isEqualTo(Outcome.RESET);
    assertThat(TransportClassifier.classify(new SocketException("Connection reset by peer")))
        .isEqualTo(Outcome.RESET);
    assertThat(TransportClassifier.classify(new SocketException("Broken pipe")))
        .isEqualTo(Outcome.RESET);
  }

  @Test
  void theJdkClientsEmptyResponseIsAReset() {
    assertThat(
            TransportClassifier.classify(
                new IOException("HTTP/1.1 header parser received no bytes")))
        .isEqualTo(Outcome.RESET);
  }

  @Test
  void okHttpsUnexpectedEndOfStreamIsAReset() {
    Throwable e =
        causedBy(
            new IOException("unexpected end of stream on http://127.0.0.1:8080/..."),
            new EOFException("\\n not found: limit=0 content=…"));
    assertThat(TransportClassifier.classify(e)).isEqualTo(Outcome.RESET);
  }

  @Test
  void anEofIsAReset() {
    assertThat(TransportClassifier.classify(new EOFException())).isEqualTo(Outcome.RESET);
    assertThat(TransportClassifier.classify(new EOFException("EOF reached while reading")))
        .isEqualTo(Outcome.RESET);
  }

  @Test
  void anHttp2StreamResetIsAReset() {
    assertThat(TransportClassifier.classify(new StreamResetException("REFUSED_STREAM")))
        .isEqualTo(Outcome.RESET);
    assertThat(TransportClassifier.classify(new ConnectionShutdownException()))
        .isEqualTo(Outcome.RESET);
    assertThat(
            TransportClassifier.classify(new IOException("Received RST_STREAM: Stream cancelled")))
        .isEqualTo(Outcome.RESET);
  }

  /**
   * java.net.http's HTTP/2 endings that name no reset: JDK 17's for the streams of a connection the
   * server ended with GOAWAY, and JDK 24+'s for a stream refused again after its own resend. Both
   * were other exceptions, never retried, where a GET ended by a reset is.
   */
  @Test
  void theJdksHttp2GoAwayAndUnprocessedStreamAreResets() {
    assertThat(TransportClassifier.classify(new IOException("/127.0.0.1:42144: GOAWAY received")))
        .isEqualTo(Outcome.RESET);
    assertThat(TransportClassifier.classify(new IOException("request not processed by peer")))
        .isEqualTo(Outcome.RESET);
  }

  // --- timeout: no response in time

  @Test
  void theJdkClientsRequestTimeoutIsATimeout() {
    assertThat(TransportClassifier.classify(new HttpTimeoutException("request timed out")))
        .isEqualTo(Outcome.TIMEOUT);
  }

  @Test
  void aReadTimeoutIsATimeout() {
    assertThat(TransportClassifier.classify(new SocketTimeoutException("Read timed out")))
        .isEqualTo(Outcome.TIMEOUT);
    assertThat(TransportClassifier.classify(new SocketTimeoutException("timeout")))
        .isEqualTo(Outcome.TIMEOUT);
    assertThat(TransportClassifier.classify(new SocketTimeoutException()))
        .isEqualTo(Outcome.TIMEOUT);
  }

  @Test
  void okHttpsCallTimeoutIsATimeout() {
    Throwable e = causedBy(new InterruptedIOException("timeout"), new SocketTimeoutException());
    assertThat(TransportClassifier.classify(e)).isEqualTo(Outcome.TIMEOUT);
  }

  // --- TLS: repeating cannot help

  @Test
  void anUntrustedCertificateIsNeitherConnectNorResetNorTimeout() {
    Throwable e =
        causedBy(
            new SSLHandshakeException("PKIX path building failed"),
            new CertificateException("unable to find valid certification path"));
    assertThat(TransportClassifier.classify(e)).isEqualTo(Outcome.OTHER_EXCEPTION);
    // Even when a client wraps it in a ConnectException.
    Throwable wrapped = causedBy(new ConnectException("TLS failed"), e);
    assertThat(TransportClassifier.classify(wrapped)).isEqualTo(Outcome.OTHER_EXCEPTION);
    assertThat(TransportClassifier.classify(new SSLPeerUnverifiedException("peer not verified")))
        .isEqualTo(Outcome.OTHER_EXCEPTION);
  }

  // --- cancelled: never retried

  @Test
  void aThreadInterruptDuringIoIsCancelled() {
    assertThat(TransportClassifier.classify(new InterruptedIOException()))
        .isEqualTo(Outcome.CANCELLED);
    assertThat(TransportClassifier.classify(new InterruptedIOException("interrupted")))
        .isEqualTo(Outcome.CANCELLED);
    assertThat(TransportClassifier.classify(new ClosedByInterruptException()))
        .isEqualTo(Outcome.CANCELLED);
    assertThat(TransportClassifier.classify(new InterruptedException()))
        .isEqualTo(Outcome.CANCELLED);
  }

  @Test
  void aCancelledFutureIsCancelled() {
    assertThat(TransportClassifier.classify(new CancellationException()))
        .isEqualTo(Outcome.CANCELLED);
    assertThat(TransportClassifier.classify(new CompletionException(new CancellationException())))
        .isEqualTo(Outcome.CANCELLED);
  }

  @Test
  void okHttpsCanceledCallIsCancelled() {
    assertThat(TransportClassifier.classify(new IOException("Canceled")))
        .isEqualTo(Outcome.CANCELLED);
  }

  /**
   * OkHttp 5's HTTP/2 writer, for a request written to a connection the server closed under it (its
   * GOAWAY and close): the same plain "closed" as java.net.http's refusal by a shut-down client,
   * taken for the caller's ending (never retried, no breaker failure) where it is the host's. Told
   * apart by who threw it (as seen: Http2Writer.data, from Http2Stream's sink as OkHttp closed the
   * request body).
   */
  @Test
  void okHttpsClosedHttp2WriterIsAReset() {
    IOException closed = new IOException("closed");
    closed.setStackTrace(
        new StackTraceElement[] {
          new StackTraceElement(
              "okhttp3.internal.http2.Http2Writer", "data", "Http2Writer.kt", 173),
          new StackTraceElement(
              "okhttp3.internal.http2.Http2Connection", "writeData", "Http2Connection.kt", 334)
        });
    assertThat(TransportClassifier.classify(closed)).isEqualTo(Outcome.RESET);
  }

  @Test
  void aRequestRefusedByAShutDownJdkClientIsCancelled() {
    // sendAsync's future holds the refusal itself; send throws a copy around it.
    IOException refused = new IOException("closed");
    assertThat(TransportClassifier.classify(refused)).isEqualTo(Outcome.CANCELLED);
    assertThat(TransportClassifier.classify(new IOException("closed", refused)))
        .isEqualTo(Outcome.CANCELLED);
  }

  @Test
  void anExchangeAJdkClientsShutdownNowAbortedIsCancelled() {
    // HttpClientImpl.shutdownNow (Java 21+): selmgr.abort(new IOException("shutdownNow")); send
    // throws a copy around it. The application's ending, never the host's failure in its breaker.
    IOException aborted = new IOException("shutdownNow");
    assertThat(TransportClassifier.classify(aborted)).isEqualTo(Outcome.CANCELLED);
    assertThat(TransportClassifier.classify(new IOException("shutdownNow", aborted)))
        .isEqualTo(Outcome.CANCELLED);
  }

  @Test
  void anEnqueuedOkHttpCallThatANonIoThrowableEndedIsCancelled() {
    // OkHttp cancels the call and tells the callback so, the throwable suppressed: a closed cache
    // refused the request, nothing was sent; whatever the throwable says, never a reset.
    IllegalStateException closed = new IllegalStateException("cache is closed");
    IOException told = new IOException("canceled due to " + closed);
    told.addSuppressed(closed);
    assertThat(TransportClassifier.classify(told)).isEqualTo(Outcome.CANCELLED);
    assertThat(
            TransportClassifier.classify(
                new IOException(
                    "canceled due to java.lang.IllegalStateException: connection closed")))
        .isEqualTo(Outcome.CANCELLED);
  }

  @Test
  void aCallRefusedByAClosedApacheClientOrOkHttpCacheIsCancelled() {
    for (String m :
        new String[] {
          "Connection pool shut down",
          "Connection manager has been shut down",
          "Connection manager shut down",
          "cache is closed"
        }) {
      assertThat(TransportClassifier.classify(new IllegalStateException(m)))
          .as(m)
          .isEqualTo(Outcome.CANCELLED);
    }
    assertThat(TransportClassifier.classify(new IllegalStateException("Already Executed")))
        .isEqualTo(Outcome.OTHER_EXCEPTION);
  }

  /**
   * Apache HttpClient's pool had no connection within {@code connectionRequestTimeout}: nothing
   * reached the host. Each is an InterruptedIOException, which read as the caller's interrupt
   * (CANCELLED, given up as cancelled) though nobody cancelled anything. Built as the clients build
   * them: 4.5's PoolingHttpClientConnectionManager, 5.x's InternalExecRuntime (the wait for the
   * lease timed out, or the pool failed the lease at its own deadline first).
   */
  @Test
  void anApachePoolWithoutAConnectionInTimeIsAPoolTimeoutNotACancel() {
    assertThat(
            TransportClassifier.classify(
                new org.apache.http.conn.ConnectionPoolTimeoutException(
                    "Timeout waiting for connection from pool")))
        .isEqualTo(Outcome.POOL_TIMEOUT);
    assertThat(
            TransportClassifier.classify(
                new org.apache.hc.core5.http.ConnectionRequestTimeoutException(
                    "Deadline: 2026-12-04T23:40:00.000+0000, 200 MILLISECONDS overdue")))
        .isEqualTo(Outcome.POOL_TIMEOUT);
    assertThat(
            TransportClassifier.classify(
                new org.apache.hc.client5.http.impl.classic.RequestFailedException(
                    "Request execution failed",
                    org.apache.hc.core5.util.DeadlineTimeoutException.from(
                        org.apache.hc.core5.util.Deadline.MIN_VALUE))))
        .isEqualTo(Outcome.POOL_TIMEOUT);
    // 5.x's abort of the lease (interrupted, or cancelled) stays the caller's cancel; 4.5's
    // connect timeout stays a connect failure.
    assertThat(
            TransportClassifier.classify(
                new org.apache.hc.client5.http.impl.classic.RequestFailedException(
                    "Request aborted", new InterruptedException())))
        .isEqualTo(Outcome.CANCELLED);
    assertThat(
            TransportClassifier.classify(
                new org.apache.hc.client5.http.impl.classic.RequestFailedException(
                    "Request aborted")))
        .isEqualTo(Outcome.CANCELLED);
    assertThat(
            TransportClassifier.classify(
                new org.apache.http.conn.ConnectTimeoutException("Connect to h:80 timed out")))
        .isEqualTo(Outcome.CONNECT_FAILURE);
  }

  // --- anything else

  @Test
  void otherExceptionsAreOther() {
    assertThat(TransportClassifier.classify(new IOException("something odd")))
        .isEqualTo(Outcome.OTHER_EXCEPTION);
    assertThat(TransportClassifier.classify(new IOException())).isEqualTo(Outcome.OTHER_EXCEPTION);
    assertThat(TransportClassifier.classify(new IllegalArgumentException("bad URI")))
        .isEqualTo(Outcome.OTHER_EXCEPTION);
  }

  @Test
  void theCauseChainIsWalkedButNotForever() {
    Throwable deep = new SocketException("Connection reset");
    for (int i = 0; i < 3; i++) {
      deep = new RuntimeException("wrap " + i, deep);
    }
    assertThat(TransportClassifier.classify(deep)).isEqualTo(Outcome.RESET);

    IOException a = new IOException("a");
    IOException b = new IOException("b", a);
    a.initCause(b);
    assertThat(TransportClassifier.classify(a)).isEqualTo(Outcome.OTHER_EXCEPTION);
  }

  @Test
  void aClosedChannelIsAReset() {
    assertThat(TransportClassifier.classify(new java.nio.channels.ClosedChannelException()))
        .isEqualTo(Outcome.RESET);
  }
}
