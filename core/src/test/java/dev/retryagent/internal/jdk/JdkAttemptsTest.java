package dev.retryagent.internal.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.EOFException;
import java.io.IOException;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** How one attempt's request is made ({@link JdkRequest}) and judged ({@link JdkResends}). */
class JdkAttemptsTest {
  private static final long MS = 1_000_000L;
  private static final URI URL = URI.create("http://127.0.0.1:9/v1/items");

  private static JdkRequest<?> request(HttpRequest r) {
    JdkRequest<?> info = new JdkRequest<>(r);
    info.prepare(64 * 1024);
    return info;
  }

  // --- the attempt's timeout (issue 11: the retries got the deadline instead of the app's own)

  @Test
  void aRetryKeepsTheApplicationsShorterRequestTimeout() {
    HttpRequest r = HttpRequest.newBuilder(URL).timeout(Duration.ofMillis(400)).build();
    HttpRequest attempt = request(r).forAttempt(2, 29_900 * MS, null);
    assertThat(attempt.timeout()).contains(Duration.ofMillis(400));
    assertThat(attempt).as("nothing to change: the caller's own request").isSameAs(r);
  }

  @Test
  void aShorterPolicyBoundReplacesALongerRequestTimeout() {
    HttpRequest r = HttpRequest.newBuilder(URL).timeout(Duration.ofSeconds(10)).build();
    assertThat(request(r).forAttempt(2, 250 * MS, null).timeout()).contains(Duration.ofMillis(250));
  }

  @Test
  void aRequestWithoutTimeoutGetsThePolicyBound() {
    HttpRequest r = HttpRequest.newBuilder(URL).build();
    assertThat(request(r).forAttempt(2, 250 * MS, null).timeout()).contains(Duration.ofMillis(250));
  }

  @Test
  void withoutPolicyBoundTheRequestIsTheCallersOwn() {
    HttpRequest r = HttpRequest.newBuilder(URL).build();
    HttpRequest attempt = request(r).forAttempt(1, -1, null);
    assertThat(attempt).isSameAs(r);
    assertThat(attempt.timeout()).isEqualTo(Optional.empty());
  }

  // --- the JDK's own resend (issue 11: not counted, maxAttempts 3 made 6 requests)

  private static IOException noBytes() {
    // What the JDK's send throws: its message, around the parser's exception, around the EOF.
    IOException parser =
        new IOException(JdkResends.NO_BYTES, new EOFException("EOF reached while reading"));
    return new IOException(parser.getMessage(), parser);
  }

  @Test
  void aGetThatEndedWithNoBytesWasSentTwiceByTheJdk() {
    assertThat(JdkResends.in(HttpRequest.newBuilder(URL).build(), noBytes())).isEqualTo(1);
    HttpRequest head = HttpRequest.newBuilder(URL).method("HEAD", noBody()).build();
    assertThat(JdkResends.in(head, noBytes().getCause())).isEqualTo(1);
  }

  @Test
  void aPostIsNotResentByTheJdk() {
    HttpRequest post =
        HttpRequest.newBuilder(URL).POST(HttpRequest.BodyPublishers.ofString("{}")).build();
    assertThat(JdkResends.in(post, noBytes())).isZero();
  }

  @Test
  void otherFailuresSayNothingOfAResend() {
    HttpRequest get = HttpRequest.newBuilder(URL).build();
    // A request timeout: the JDK closed the connection, the parser saw no bytes, no resend.
    java.net.http.HttpTimeoutException timeout =
        new java.net.http.HttpTimeoutException("request timed out");
    timeout.initCause(noBytes().getCause());
    assertThat(JdkResends.in(get, timeout)).isZero();
    assertThat(JdkResends.in(get, new SocketException("Connection reset"))).isZero();
    assertThat(JdkResends.in(get, new java.net.ConnectException("Connection refused"))).isZero();
  }

  private static HttpRequest.BodyPublisher noBody() {
    return HttpRequest.BodyPublishers.noBody();
  }

  /**
   * The all-method resend switch is read as the JDK reads it (NetProperties): the system property,
   * else {@code conf/net.properties}.
   */
  @Test
  void theAllMethodResendSwitchIsReadFromNetPropertiesToo(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    java.nio.file.Path on = dir.resolve("on.properties");
    java.nio.file.Files.writeString(on, "# net\njdk.httpclient.enableAllMethodRetry=true\n");
    java.nio.file.Path empty = dir.resolve("empty.properties");
    java.nio.file.Files.writeString(empty, "jdk.httpclient.enableAllMethodRetry=\n");
    java.nio.file.Path other = dir.resolve("other.properties");
    java.nio.file.Files.writeString(other, "jdk.httpclient.disableRetryConnect=true\n");

    assertThat(JdkResends.allMethodRetry(null, on)).isTrue();
    assertThat(JdkResends.allMethodRetry(null, empty)).isTrue();
    assertThat(JdkResends.allMethodRetry(null, other)).isFalse();
    assertThat(JdkResends.allMethodRetry(null, dir.resolve("missing"))).isFalse();
    // The system property wins over the file, either way.
    assertThat(JdkResends.allMethodRetry("false", on)).isFalse();
    assertThat(JdkResends.allMethodRetry("", other)).isTrue();
    assertThat(JdkResends.allMethodRetry("true", null)).isTrue();
  }
}
