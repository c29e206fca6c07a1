package dev.retryagent.urlconnection;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.testing.EventLines;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.SocketException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code disconnect()} from another thread while the call's first attempt waits for its rate-limit
 * permit (the bucket empty, {@code maxWait} above 0), on a real loopback server that counts what
 * arrived.
 *
 * <p>Without the agent there is no such wait. The JDK's {@code disconnect()} (read in JDK 25, seen
 * in 17 and 25) closes the socket the connection has and makes it forget it; with none yet (before
 * {@code connect()}, or while the JDK's connect is under way) it does nothing, and the call goes on
 * and sends. A thread whose call another thread disconnects once the request went gets {@code
 * SocketException: Socket closed}, and the connection then answers every response method with a
 * copy of it chained to it.
 *
 * <p>With the agent the wait ends at the disconnect: the call ends as that disconnected one, with
 * nothing sent (the application gave the call up; one sent after the wait would be a request it no
 * longer waits for), as a disconnect during a retry's wait ends it, and as Apache HttpClient's
 * {@code abort()} and java.net.http's {@code shutdownNow()} end a call during that wait. No attempt
 * starts (none is counted), the call is told as cancelled, and its permit goes back.
 */
class DisconnectDuringTheFirstPermitWaitTest {
  /** The application's step that waits for the permit. */
  enum Step {
    /** {@code getResponseCode()} of a GET, nothing before it. */
    RESPONSE,
    /**
     * {@code connect()} (a socket, nothing sent, no permit asked), then {@code getResponseCode()}.
     */
    CONNECTED_THEN_RESPONSE,
    /** {@code getOutputStream()} of a POST in fixed-length streaming mode: the head goes there. */
    STREAMED_BODY,
    /** {@code getOutputStream()} of a POST whose body the JDK buffers. */
    BUFFERED_BODY
  }

  private final ScriptedHttpServer server = newServer();
  private final FakeTime time = new FakeTime();

  private static ScriptedHttpServer newServer() {
    try {
      return new ScriptedHttpServer();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  @Test
  void withoutTheAgentADisconnectBeforeTheConnectionConnectsDoesNothing() throws Exception {
    // What the JDK does with a disconnect() that comes before it has a socket: nothing; the
    // connection connects and sends when next asked.
    server.otherwise(ok("fine"));
    HttpURLConnection plain = (HttpURLConnection) new URL(server.url("/items")).openConnection();

    plain.disconnect();

    assertThat(plain.getResponseCode()).isEqualTo(200);
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Step.class)
  void aDisconnectWhileTheFirstAttemptWaitsForItsPermitEndsTheCallAsADisconnectedOneNothingSent(
      Step step) throws Exception {
    // Without the agent: a disconnect() from another thread while the call's request is out.
    server.enqueue(ok("slow").delay(10_000)); // a slow server, for the disconnect to come first
    HttpURLConnection plain = (HttpURLConnection) new URL(server.url("/plain")).openConnection();
    CompletableFuture<Throwable> plainCall =
        CompletableFuture.supplyAsync(() -> catchThrowable(plain::getResponseCode));
    await().atMost(Duration.ofSeconds(5)).until(() -> server.requestCount() == 1);
    plain.disconnect();
    Throwable jdk = plainCall.get(5, TimeUnit.SECONDS);
    List<String> jdkAfter = responseMethods(plain);
    assertThat(jdk).isExactlyInstanceOf(SocketException.class).hasMessage("Socket closed");

    // With the agent: the first call takes the only permit; the next waits for the one due 1 s
    // later, and the application disconnects it meanwhile (run by the sleeper as the wait starts).
    server.otherwise(ok("fine"));
    AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
    EventLines told = new EventLines();
    RetryEngine engine = TestEngines.onePermitASecond(time, duringTheWait, told);
    long first = time.nanoTime();
    assertThat(open("/first", engine).getResponseCode()).isEqualTo(200);
    int sent = server.requestCount();
    int connections = server.connectionCount();
    told.lines.clear();
    HttpURLConnection c = open("/items", engine);
    duringTheWait.set(c::disconnect);

    Throwable ours = catchThrowable(() -> take(step, c));

    assertThat(duringTheWait.get()).as("disconnected during the wait").isNull();
    assertThat(ours).isExactlyInstanceOf(jdk.getClass()).hasMessage(jdk.getMessage());
    if (step == Step.RESPONSE || step == Step.CONNECTED_THEN_RESPONSE) {
      // The connection then answers as the JDK's disconnected one does.
      assertThat(responseMethods(c)).isEqualTo(jdkAfter);
    }
    assertThat(server.awaitRequests(sent)).as("nothing sent").isEqualTo(requests(sent));
    if (step == Step.CONNECTED_THEN_RESPONSE) {
      // The socket connect() opened is closed, as the JDK's disconnect() closes it.
      await().atMost(Duration.ofSeconds(5)).until(() -> server.isDoneWith(connections));
    }
    assertThat(told.lines)
        .as("no attempt started: none counted")
        .containsExactly("RATE_LIMITED 0", "GIVE_UP 0 CANCELLED", "CALL_COMPLETE 0 CANCELLED");
    // Its permit (due 1 s after the first call's) went back: the next call's is due then, not a
    // second later.
    assertThat(open("/next", engine).getResponseCode()).isEqualTo(200);
    assertThat(time.nanoTime() - first).isEqualTo(TimeUnit.SECONDS.toNanos(1));
    assertThat(server.requestCount()).isEqualTo(sent + 1);
  }

  private HttpURLConnection open(String path, RetryEngine engine) throws IOException {
    return (HttpURLConnection) RetryingUrlConnections.open(new URL(server.url(path)), engine);
  }

  /** The application's {@code step} on {@code c}. */
  private static void take(Step step, HttpURLConnection c) throws IOException {
    switch (step) {
      case CONNECTED_THEN_RESPONSE:
        c.connect();
      // fall through
      case RESPONSE:
        c.getResponseCode();
        return;
      case STREAMED_BODY:
      case BUFFERED_BODY:
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        if (step == Step.STREAMED_BODY) {
          c.setFixedLengthStreamingMode(2);
        }
        try (OutputStream out = c.getOutputStream()) {
          out.write("{}".getBytes(StandardCharsets.UTF_8));
        }
        return;
      default:
        throw new AssertionError(step);
    }
  }

  /** What the response methods of {@code c} answer, in turn: each result, or its exception. */
  private static List<String> responseMethods(HttpURLConnection c) {
    List<String> seen = new ArrayList<>();
    seen.add(String.valueOf(catchThrowable(c::getResponseCode)));
    seen.add(String.valueOf(catchThrowable(c::getInputStream)));
    Throwable t = catchThrowable(c::getResponseMessage);
    seen.add(t + " caused by " + (t == null ? null : t.getCause()));
    seen.add(String.valueOf(c.getErrorStream()));
    seen.add(String.valueOf(c.getHeaderField(0)));
    return seen;
  }
}
