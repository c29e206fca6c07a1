package dev.retryagent.urlconnection;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.ProtocolException;
import java.net.Proxy;
import java.net.SocketException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A retried {@link HttpURLConnection} runs each attempt's network steps in the call's {@link
 * CallContext}, the waits outside it, and ends the context once when the call is over: what makes
 * each attempt its own span of the call's trace with the OpenTelemetry agent, which starts a JDK
 * connection's span at the first of {@code connect}, {@code getOutputStream}, {@code
 * getInputStream} under the context current then.
 */
class UrlCallContextTest {
  /** What is "current" on this thread, as a tracer's context would be. */
  private static final ThreadLocal<String> CURRENT = new ThreadLocal<>();

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();

  /** The steps each JDK connection saw, with the context current then, and the context's end. */
  private final List<String> log = new CopyOnWriteArrayList<>();

  private final List<String> seenByWaits = new CopyOnWriteArrayList<>();

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
    CURRENT.remove();
  }

  /** Switches {@link #CURRENT} to "call" and back; logs its end. */
  private final class Recording implements CallContext {
    @Override
    public Scope enter() {
      String before = CURRENT.get();
      CURRENT.set("call");
      return () -> CURRENT.set(before);
    }

    @Override
    public void end() {
      log.add("end");
    }
  }

  private RetryEngine engine(CallContext.Factory contexts) {
    return RetryEngine.builder()
        .clock(time)
        .sleeper(
            nanos -> {
              seenByWaits.add(String.valueOf(CURRENT.get()));
              time.sleep(nanos);
            })
        .callContexts(contexts)
        .build();
  }

  private RetryEngine engine() {
    return engine(call -> new Recording());
  }

  /** The application's connection, every attempt a {@link Traced} one. */
  private HttpURLConnection open(String path, RetryEngine engine) throws IOException {
    UrlTransport transport = (url, proxy) -> new Traced(url);
    return (HttpURLConnection)
        RetryingUrlConnections.wrap(
            new Traced(new URL(server.url(path))), (Proxy) null, engine, transport);
  }

  @Test
  void everyAttemptReachesTheNetworkInTheCallsContextAndTheWaitsDoNot() throws Exception {
    server.enqueue(status(503), status(503), ok("done"));
    HttpURLConnection c = open("/v1/items", engine());

    assertThat(c.getResponseCode()).isEqualTo(200);

    assertThat(log)
        .containsExactly(
            "getInputStream in call", "getInputStream in call", "getInputStream in call", "end");
    assertThat(seenByWaits).isNotEmpty().containsOnly("null");
    assertThat(CURRENT.get()).isNull();
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @Test
  void aStreamedBodyIsConnectedAndSentInTheCallsContextAndReplayedInItToo() throws Exception {
    server.enqueue(status(503), status(503), ok("stored"));
    HttpURLConnection c = open("/v1/items/7", engine());
    byte[] body = "the item".getBytes(StandardCharsets.UTF_8);
    c.setRequestMethod("PUT");
    c.setDoOutput(true);
    c.setFixedLengthStreamingMode(body.length);

    try (OutputStream out = c.getOutputStream()) {
      assertThat(CURRENT.get()).as("the application writes in its own context").isNull();
      out.write(body);
    }
    assertThat(c.getResponseCode()).isEqualTo(200);

    assertThat(log)
        .containsExactly(
            "connect in call",
            "getOutputStream in call",
            "getInputStream in call",
            "getOutputStream in call",
            "getInputStream in call",
            "getOutputStream in call",
            "getInputStream in call",
            "end");
    assertThat(seenByWaits).isNotEmpty().containsOnly("null");
    assertThat(server.requests())
        .hasSize(3)
        .allSatisfy(r -> assertThat(r.body).isEqualTo("the item"));
  }

  @Test
  void aCallThatGivesUpEndsItsContextOnce() throws Exception {
    server.otherwise(status(503));
    HttpURLConnection c = open("/v1/items", engine());

    assertThat(c.getResponseCode()).isEqualTo(503);
    assertThatThrownBy(c::getInputStream).isInstanceOf(IOException.class);
    c.getResponseCode();

    assertThat(log)
        .startsWith(
            "getInputStream in call", "getInputStream in call", "getInputStream in call", "end");
    assertThat(log).filteredOn("end"::equals).hasSize(1);
    assertThat(server.requestCount()).isEqualTo(3);
  }

  @Test
  void aCallEndedByDisconnectDuringAWaitEndsItsContextOnce() throws Exception {
    server.otherwise(status(503));
    HttpURLConnection[] c = new HttpURLConnection[1];
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(
                nanos -> {
                  c[0].disconnect(); // as another thread would, while this one waits
                  time.sleep(nanos);
                })
            .callContexts(call -> new Recording())
            .build();
    c[0] = open("/v1/items", engine);

    assertThatThrownBy(c[0]::getResponseCode).isInstanceOf(SocketException.class);

    assertThat(log).containsExactly("getInputStream in call", "end");
    assertThat(CURRENT.get()).isNull();
  }

  @Test
  void aCallConnectedThenDisconnectedWithoutTheResponseEndsItsContextThere() throws Exception {
    HttpURLConnection c = open("/v1/items", engine());

    c.connect();
    c.disconnect();

    // The application will not ask for the response: the call's span must not stay open.
    assertThat(log).containsExactly("connect in call", "end");
    assertThat(server.requestCount()).isZero();
  }

  @Test
  void aContextThatFailsToEnterLeavesTheCallAsWithoutTracing() throws Exception {
    server.enqueue(status(503), ok("done"));
    HttpURLConnection c =
        open(
            "/v1/items",
            engine(
                call ->
                    () -> {
                      throw new IllegalStateException("tracing broke");
                    }));

    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(log).containsExactly("getInputStream in null", "getInputStream in null");
    assertThat(server.requestCount()).isEqualTo(2);
  }

  @Test
  void withoutAContextNothingIsEnteredOrEnded() throws Exception {
    server.enqueue(status(503), ok("done"));
    HttpURLConnection c = open("/v1/items", engine(call -> null));

    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(log).containsExactly("getInputStream in null", "getInputStream in null");
  }

  /**
   * A JDK connection as a tracer sees it: logs the context current at each step the OpenTelemetry
   * agent instruments, and otherwise is the JDK's own connection to the same URL.
   */
  private final class Traced extends ForwardingConnection {
    Traced(URL url) throws IOException {
      super(url);
    }

    private void seen(String step) {
      log.add(step + " in " + CURRENT.get());
    }

    @Override
    public void connect() throws IOException {
      seen("connect");
      super.connect();
    }

    @Override
    public OutputStream getOutputStream() throws IOException {
      seen("getOutputStream");
      return real.getOutputStream();
    }

    @Override
    public InputStream getInputStream() throws IOException {
      seen("getInputStream");
      return super.getInputStream();
    }

    @Override
    public void setRequestMethod(String method) throws ProtocolException {
      super.setRequestMethod(method);
      real.setRequestMethod(method);
    }

    @Override
    public void setDoOutput(boolean doOutput) {
      super.setDoOutput(doOutput);
      real.setDoOutput(doOutput);
    }

    @Override
    public void setFixedLengthStreamingMode(int length) {
      super.setFixedLengthStreamingMode(length);
      real.setFixedLengthStreamingMode(length);
    }

    @Override
    public void setFixedLengthStreamingMode(long length) {
      super.setFixedLengthStreamingMode(length);
      real.setFixedLengthStreamingMode(length);
    }

    @Override
    public void setRequestProperty(String key, String value) {
      super.setRequestProperty(key, value);
      real.setRequestProperty(key, value);
    }

    @Override
    public void setConnectTimeout(int millis) {
      super.setConnectTimeout(millis);
      real.setConnectTimeout(millis);
    }

    @Override
    public void setReadTimeout(int millis) {
      super.setReadTimeout(millis);
      real.setReadTimeout(millis);
    }
  }
}
