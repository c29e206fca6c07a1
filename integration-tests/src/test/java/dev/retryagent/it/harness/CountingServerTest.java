package dev.retryagent.it.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The test server itself: scripted replies, counting, faults. Runs in-process, no agent. */
class CountingServerTest {
  private CountingServer server;
  private final HttpClient client =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeEach
  void start() throws IOException {
    server = CountingServer.start();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  private HttpResponse<String> get(String path) throws Exception {
    return client.send(
        HttpRequest.newBuilder(server.uri(path)).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void scriptedRepliesAreServedInOrderThenTheDefault() throws Exception {
    server.enqueue(Reply.status(503).withHeader("Retry-After", "1"), Reply.ok("second"));

    HttpResponse<String> first = get("/a");
    HttpResponse<String> second = get("/b");
    HttpResponse<String> third = get("/c");

    assertThat(first.statusCode()).isEqualTo(503);
    assertThat(first.headers().firstValue("retry-after")).hasValue("1");
    assertThat(second.body()).isEqualTo("second");
    assertThat(third.statusCode()).isEqualTo(200);
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(server.requests())
        .extracting(RecordedRequest::target)
        .containsExactly("/a", "/b", "/c");
  }

  @Test
  void aBodyThatExpectsContinueGetsItOrAReplyBeforeBody() throws Exception {
    server.enqueue(Reply.status(417).beforeBody(), Reply.ok("stored"));

    java.net.HttpURLConnection refused = expectingContinue("/refused");
    assertThatThrownBy(refused::getOutputStream)
        .isInstanceOf(java.net.ProtocolException.class)
        .hasMessage("Server rejected operation");
    assertThat(refused.getResponseCode()).isEqualTo(417);

    java.net.HttpURLConnection let = expectingContinue("/let");
    try (java.io.OutputStream out = let.getOutputStream()) {
      out.write("body".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
    assertThat(let.getResponseCode()).isEqualTo(200);

    assertThat(server.requests())
        .extracting(RecordedRequest::target, RecordedRequest::bodyText)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("/refused", ""),
            org.assertj.core.groups.Tuple.tuple("/let", "body"));
  }

  private java.net.HttpURLConnection expectingContinue(String path) throws IOException {
    java.net.HttpURLConnection c =
        (java.net.HttpURLConnection) server.uri(path).toURL().openConnection();
    c.setRequestMethod("PUT");
    c.setDoOutput(true);
    c.setRequestProperty("Expect", "100-continue");
    c.setFixedLengthStreamingMode(4);
    c.setReadTimeout(10_000);
    return c;
  }

  @Test
  void requestBodiesAreRecordedWithLengthOrChunked() throws Exception {
    client.send(
        HttpRequest.newBuilder(server.uri("/len"))
            .POST(HttpRequest.BodyPublishers.ofString("fixed"))
            .build(),
        HttpResponse.BodyHandlers.discarding());
    client.send(
        HttpRequest.newBuilder(server.uri("/chunked"))
            .POST(
                HttpRequest.BodyPublishers.ofInputStream(
                    () -> new java.io.ByteArrayInputStream("streamed".getBytes())))
            .build(),
        HttpResponse.BodyHandlers.discarding());

    assertThat(server.requests())
        .extracting(RecordedRequest::bodyText)
        .containsExactly("fixed", "streamed");
  }

  private HttpResponse<String> post(String path) throws Exception {
    return client.send(
        HttpRequest.newBuilder(server.uri(path))
            .POST(HttpRequest.BodyPublishers.ofString("x"))
            .timeout(Duration.ofSeconds(10))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aResetIsSeenByTheClientAsAnIoExceptionAfterTheRequestWasCounted() {
    server.enqueue(Reply.reset());

    assertThatThrownBy(() -> post("/reset")).isInstanceOf(IOException.class);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void theJdkClientItselfRepeatsAGetOnceAfterAReset() throws Exception {
    // Worth knowing for retry tests: without any agent, a reset GET reaches the server twice.
    server.enqueue(Reply.reset());

    assertThat(get("/reset").statusCode()).isEqualTo(200);
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void aCloseWithoutResponseIsAnIoExceptionToo() {
    server.enqueue(Reply.closeWithoutResponse());

    assertThatThrownBy(() -> post("/close")).isInstanceOf(IOException.class);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aHangingReplyRunsIntoTheClientsTimeout() {
    server.enqueue(Reply.hang());

    assertThatThrownBy(
            () ->
                client.send(
                    HttpRequest.newBuilder(server.uri("/hang"))
                        .timeout(Duration.ofMillis(300))
                        .build(),
                    HttpResponse.BodyHandlers.ofString()))
        .isInstanceOf(java.net.http.HttpTimeoutException.class);
  }

  @Test
  void aWebSocketHandshakeIsAcceptedAndCounted() throws Exception {
    server.enqueue(Reply.webSocketAccept());

    java.net.http.WebSocket socket =
        client
            .newWebSocketBuilder()
            .buildAsync(
                java.net.URI.create("ws://127.0.0.1:" + server.port() + "/ws"),
                new java.net.http.WebSocket.Listener() {})
            .get(10, java.util.concurrent.TimeUnit.SECONDS);
    socket.abort();

    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(server.requests().get(0).header("upgrade")).isEqualToIgnoringCase("websocket");
  }

  @Test
  void aRequestIsAnsweredWithItsBodyLeftUnreadWhenAsked() throws Exception {
    server.leaveBodiesUnread().setDefaultReply(Reply.status(204));

    assertThat(post("/unread").statusCode()).isEqualTo(204);
    assertThat(server.requests()).extracting(RecordedRequest::bodyText).containsExactly("");
  }

  @Test
  void aRequestItDoesNotAdmitIsTurnedAwayWithoutTakingAScriptedReply() throws Exception {
    server.admitOnly(r -> r.target().startsWith("/mine")).enqueue(Reply.status(503));

    assertThat(get("/stray").statusCode()).isEqualTo(421);
    assertThat(get("/mine").statusCode()).isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(server.strayCount()).isEqualTo(1);
  }

  @Test
  void aResetMidBodyGivesTheStatusThenBreaksTheBody() throws Exception {
    server.enqueue(Reply.resetMidBody(10_000));

    HttpResponse<java.io.InputStream> r =
        client.send(
            HttpRequest.newBuilder(server.uri("/mid")).build(),
            HttpResponse.BodyHandlers.ofInputStream());

    assertThat(r.statusCode()).isEqualTo(200);
    assertThatThrownBy(() -> r.body().readAllBytes()).isInstanceOf(IOException.class);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aMalformedChunkBreaksTheBodyOfA200() {
    server.enqueue(Reply.malformedChunk());

    assertThatThrownBy(() -> get("/chunk")).isInstanceOf(IOException.class);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void garbageIsNoHttpResponse() {
    server.enqueue(Reply.garbage());

    assertThatThrownBy(() -> post("/garbage")).isInstanceOf(IOException.class);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void aDribblingBodyArrivesWholeByteAfterByte() throws Exception {
    server.enqueue(Reply.dribble(5, Duration.ofMillis(50)));

    long start = System.nanoTime();
    HttpResponse<String> r = get("/dribble");

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).hasSize(5);
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThan(Duration.ofMillis(200));
  }

  @Test
  void aRetryAfterDateIsWrittenWhenTheResponseIs() throws Exception {
    server.enqueue(Reply.status(429).withRetryAfterDate(Duration.ofSeconds(30)));

    String header = get("/date").headers().firstValue("retry-after").orElseThrow();

    java.time.Instant at =
        java.time.ZonedDateTime.parse(header, java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME)
            .toInstant();
    assertThat(Duration.between(java.time.Instant.now(), at))
        .isBetween(Duration.ofSeconds(28), Duration.ofSeconds(30));
  }

  @Test
  void aFollowUpIsAnsweredAndCountedApartFromTheScript() throws Exception {
    server.enqueue(Reply.status(503));

    assertThat(get(CountingServer.FOLLOW_UP_PATH).statusCode()).isEqualTo(200);
    assertThat(get("/scripted").statusCode()).isEqualTo(503);
    assertThat(server.followUpCount()).isEqualTo(1);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @Test
  void theServerOnlyListensOnLoopback() {
    assertThat(server.uri("/").getHost()).isEqualTo("127.0.0.1");
  }

  @Test
  void aResponderAnswersEveryRequestAndTheyAreCountedNotKept() throws Exception {
    get("/kept");
    server.answerWith(r -> Reply.status(r.target().equals("/a") ? 503 : 204));

    HttpResponse<String> a = get("/a");
    HttpResponse<String> b = get("/b");

    assertThat(a.statusCode()).isEqualTo(503);
    assertThat(b.statusCode()).isEqualTo(204);
    assertThat(server.requestCount()).isEqualTo(3);
    assertThat(server.requests()).extracting(RecordedRequest::target).containsExactly("/kept");
  }
}
