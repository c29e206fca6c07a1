package dev.retryagent.guarantees;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import dev.retryagent.urlconnection.RetryingUrlConnections;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.ProtocolException;
import java.net.URL;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A request sent as {@code get}, not {@code GET}: method names are case-sensitive (RFC 9110 section
 * 9.1), and a server may treat {@code get} as any method it does not know. The adapters upper-cased
 * the method, so a {@code get} answered 503 was judged a GET and sent again. Now each client that
 * sends the case it is given (java.net.http, OkHttp, Apache HttpClient 4.5 and 5.x, classic and
 * async) sends a {@code get} once, through a real loopback server, where a {@code GET} is retried;
 * HttpURLConnection refuses a {@code get} itself, with the agent as without.
 */
class MethodCaseTest {
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private RetryEngine engine;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    server.otherwise(status(503));
    engine =
        TestEngines.engine(
            time, Mode.ENFORCE, r -> r.maxAttempts(2), CircuitBreakerPolicy.defaults(), events);
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  private String url() {
    return server.url("/x");
  }

  /** Every client that sends the case it is given, each with a GET and a get. */
  static Stream<Arguments> clientsAndMethods() {
    Stream.Builder<Arguments> b = Stream.builder();
    for (EveryClient client : EveryClient.values()) {
      if (client != EveryClient.HTTP_URL_CONNECTION) {
        b.add(Arguments.of(client, "GET")).add(Arguments.of(client, "get"));
      }
    }
    return b.build();
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("clientsAndMethods")
  void aLowerCaseGetIsSentOnceWhereAGetIsRetried(EveryClient client, String method)
      throws Exception {
    assertThat(client.send(engine, method, url())).isEqualTo(503);
    assertSentAsOftenAsItsCaseAllows(method);
  }

  /** HttpURLConnection takes its upper-case methods only: a get never reaches the engine. */
  @Test
  void httpUrlConnectionRefusesALowerCaseMethodWithTheAgentAsWithout() throws Exception {
    HttpURLConnection plain = (HttpURLConnection) new URL(url()).openConnection();
    HttpURLConnection retrying =
        (HttpURLConnection) RetryingUrlConnections.open(new URL(url()), engine);
    assertThatThrownBy(() -> plain.setRequestMethod("get")).isInstanceOf(ProtocolException.class);
    assertThatThrownBy(() -> retrying.setRequestMethod("get"))
        .isInstanceOf(ProtocolException.class);
    assertThat(retrying.getResponseCode()).as("still a GET").isEqualTo(503);
    retrying.getErrorStream().close();
    assertSentAsOftenAsItsCaseAllows("GET");
  }

  /** A GET twice (maxAttempts 2); a get once, given up as not idempotent. */
  private void assertSentAsOftenAsItsCaseAllows(String method) {
    assertThat(server.requests()).extracting(r -> r.method).containsOnly(method);
    if (method.equals("GET")) {
      assertThat(server.requestCount()).as("a GET, retried").isEqualTo(2);
      return;
    }
    assertThat(server.requestCount()).as("a get, an unknown method, not retried").isEqualTo(1);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.NOT_IDEMPOTENT);
  }
}
